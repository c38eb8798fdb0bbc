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
	// What the run started, by id and by node address, is gone: the
	// engine's other containers (another package's Docker tests, running
	// at the same time) are not compared.
	var left []string
	filters := []string{"id=" + strings.Fields(strings.TrimPrefix(server, "docker container "))[0]}
	for _, addr := range rep.Topology.Nodes {
		filters = append(filters, "label=seckill-harness.node="+addr)
	}
	for _, f := range filters {
		b, err := exec.Command("docker", "ps", "-aq", "--filter", f).Output()
		if err != nil {
			t.Fatalf("docker ps --filter %s: %v", f, err)
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			left = append(left, f+": "+s)
		}
	}
	if len(left) > 0 || len(rep.Topology.Nodes) != 6 {
		t.Fatalf("containers the run started are left (%d nodes in the report): %q", len(rep.Topology.Nodes), left)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "orders in PostgreSQL") {
			t.Logf("%s", line)
		}
	}
	t.Logf("run with --cluster docker and the pipeline: %v in all; order_db %v; E1: %s", took.Round(time.Millisecond), db["server"], e1.Detail)
}
