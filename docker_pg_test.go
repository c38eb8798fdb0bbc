package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
)

// TestDockerFullPathOrdersInAContainerPostgres: a short full-path run with
// --cluster docker keeps its orders in a PostgreSQL container beside the
// Redis containers (the locally built images: Debian's redis-server and
// postgresql, never pulled; host network, 127.0.0.1 only) and leaves no
// container behind. Needs a Docker engine: compose/testdata/ensure-docker.sh
// starts one when it can (and this test stops only a dockerd it started).
func TestDockerFullPathOrdersInAContainerPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("containers and a pipeline run")
	}
	out, err := exec.Command("sh", "compose/testdata/ensure-docker.sh", "start").CombinedOutput()
	if err != nil {
		t.Skipf("no Docker engine can be had here: %v: %s", err, out)
	}
	if strings.Contains(string(out), "started") {
		t.Cleanup(func() { _ = exec.Command("sh", "compose/testdata/ensure-docker.sh", "stop").Run() })
	}
	t0 := time.Now()
	imgs, err := exec.Command("sh", "compose/testdata/build-images.sh", "all").Output()
	if err != nil {
		t.Fatalf("compose/testdata/build-images.sh: %v", err)
	}
	t.Logf("images in %v: %s", time.Since(t0).Round(time.Millisecond), strings.ReplaceAll(strings.TrimSpace(string(imgs)), "\n", "; "))
	for _, line := range strings.Split(strings.TrimSpace(string(imgs)), "\n") {
		tag := strings.Fields(line)[0]
		switch {
		case strings.Contains(tag, "/redis:"):
			t.Setenv(compose.RedisImageEnv, tag)
		case strings.Contains(tag, "/postgres:"):
			t.Setenv(compose.PostgresImageEnv, tag)
		}
	}
	containers := func() string {
		b, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+compose.DockerPostgresLabel).Output()
		if err != nil {
			t.Fatalf("docker ps: %v", err)
		}
		return strings.TrimSpace(string(b))
	}
	before := containers()
	dir := t.TempDir()
	t1 := time.Now()
	code, text := cli(t, "run", "--cluster", "docker", "--pipeline", "--duration", "2s", "--rate", "200", "--users", "2000",
		"--stock", "100", "--buckets", "1", "--drain", "15s", "--out", dir, "--progress", "off")
	took := time.Since(t1)
	if code != exitPass {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	rep := readReport(t, dir)
	db, _ := rep.Pipeline["order_db"].(map[string]any)
	server, _ := db["server"].(string)
	if !strings.HasPrefix(server, "docker container ") || !strings.Contains(text, "ready in") {
		t.Fatalf("orders not in a PostgreSQL container: order_db %v\n%s", db, text)
	}
	e1 := reportInvariant(rep, "E1")
	if e1 == nil || e1.Status != "pass" {
		t.Fatalf("E1 %+v", e1)
	}
	if orders, _ := e1.Evidence["orders"].(float64); orders < 1 {
		t.Fatalf("no order in the container's PostgreSQL: %v", e1.Evidence)
	}
	if after := containers(); after != before {
		t.Fatalf("PostgreSQL containers left: before %q after %q", before, after)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "orders in PostgreSQL") {
			t.Logf("%s", line)
		}
	}
	t.Logf("run with --cluster docker and the pipeline: %v in all; order_db %v; E1: %s", took.Round(time.Millisecond), db["server"], e1.Detail)
}
