package compose

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// composeReadmeCommands returns the command lines of the first ```sh block
// of README.md's "A cluster in Docker Compose" section, trailing comments
// removed.
func composeReadmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## A cluster in Docker Compose")
	if i < 0 {
		t.Fatal(`README.md has no "## A cluster in Docker Compose" section`)
	}
	s = s[i:]
	j := strings.Index(s, "```sh\n")
	if j < 0 {
		t.Fatal("README.md's compose section has no ```sh block")
	}
	s = s[j+len("```sh\n"):]
	s = s[:strings.Index(s, "```")]
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if k := strings.Index(line, " #"); k >= 0 {
			line = line[:k]
		}
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// composePortsFree fails t unless every host port the compose stack
// listens on (127.0.0.1) is free. When one is taken, the message lists
// the containers of the README's compose project that are up (a stack
// somebody left up: this test removes none it did not start) and the
// README's down line that removes them.
func composePortsFree(t *testing.T, project, down string) {
	t.Helper()
	for _, port := range []string{"7001", "7002", "7003", "7004", "7005", "7006", "8474", "17001"} {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			up, _ := exec.Command("docker", "ps", "--format", "{{.Names}} ({{.Status}})", "--filter", "label=com.docker.compose.project="+project).Output()
			t.Fatalf("the compose stack needs 127.0.0.1:%s, which is taken: %v; containers of compose project %s up: %q (if they are a stack left up, remove it with: %s)",
				port, err, project, strings.TrimSpace(string(up)), down)
		}
		_ = l.Close()
	}
}

// composeV2Available reports whether `docker compose` (v2) answers.
func composeV2Available() bool { return exec.Command("docker", "compose", "version").Run() == nil }

// composeArgv splits a README command line into argv; without Compose v2,
// `docker compose …` becomes Debian's `docker-compose …` (v1.29) with the
// same arguments.
func composeArgv(line string, composeV2 bool) []string {
	f := strings.Fields(line)
	if len(f) > 1 && f[0] == "docker" && f[1] == "compose" && !composeV2 {
		return append([]string{"docker-compose"}, f[2:]...)
	}
	return f
}

// TestComposeUpSmokeDown runs the commands of README.md's compose section
// as written there against a real engine: the stack up (with the locally
// built images through REDIS_IMAGE / TOXIPROXY_IMAGE), the init's log, a
// smoke run of the harness binary against it as an outside cluster through
// the stack's toxiproxy with a graceful failover, and the stack down. Where
// `docker compose` (v2) is missing, `docker-compose` (v1.29, Debian's) runs
// the same arguments. The only addition is --out (a temp dir) on the
// harness's line. No container, network or volume it created may be
// left (leavesDockerAsFound).
func TestComposeUpSmokeDown(t *testing.T) {
	redisImage, toxiImage := localImages(t)
	lines := composeReadmeCommands(t)
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "docker compose ") || !strings.Contains(lines[0], " up ") ||
		!strings.Contains(lines[len(lines)-1], " down ") {
		t.Fatalf("README's compose block is not up … down: %q", lines)
	}
	project := composeProject(t, lines[0])
	composePortsFree(t, project, lines[len(lines)-1])
	leavesDockerAsFound(t, harnessLabels...)
	composeProjectGone(t, project)
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "seckill-harness")
	if out, err := exec.Command("go", "build", "-o", bin, repo).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	composeV2 := composeV2Available()
	argv := func(line string) []string {
		if f := strings.Fields(line); f[0] == "seckill-harness" {
			return append(append([]string{bin}, f[1:]...), "--out", filepath.Join(tmp, "out"), "--progress", "off")
		}
		return composeArgv(line, composeV2)
	}
	body := bodyCtx(t)
	runOn := func(ctx context.Context, line string) (string, error) {
		a := argv(line)
		cmd := dockerCommand(ctx, a[0], a[1:]...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "REDIS_IMAGE="+redisImage, "TOXIPROXY_IMAGE="+toxiImage)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s  (%v, as: %s)", line, time.Since(t0).Round(time.Millisecond), strings.Join(a, " "))
		return string(out), err
	}
	run := func(line string) (string, error) { return runOn(body, line) }
	down := lines[len(lines)-1]
	downDone := false
	t.Cleanup(func() {
		if !downDone {
			if out, err := runOn(context.Background(), down); err != nil {
				t.Errorf("%s: %v\n%s", down, err, out)
			}
		}
	})
	for _, line := range lines {
		out, err := run(line)
		if line == down {
			downDone = true
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, lastLines(out, 40))
		}
		switch {
		case strings.Contains(line, " logs ") && strings.Contains(line, "cluster-init"):
			if !strings.Contains(out, "All 16384 slots covered") {
				t.Fatalf("cluster-init did not form the cluster:\n%s", lastLines(out, 20))
			}
		case strings.HasPrefix(line, "seckill-harness "):
			t.Logf("harness:\n%s", lastLines(out, 12))
			rep, err := os.ReadFile(filepath.Join(tmp, "out", "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"passed": true`, `"kind": "failover"`, `"healed": true`} {
				if !strings.Contains(string(rep), want) {
					t.Errorf("report.json lacks %s", want)
				}
			}
			// The compose cluster is one the harness did not create: the
			// run waited for its topology to settle before judging it.
			if m := regexp.MustCompile(`"settle_wait_ms": (\d+)`).FindStringSubmatch(string(rep)); m == nil {
				t.Error("report.json lacks topology.settle_wait_ms")
			} else {
				t.Logf("topology.settle_wait_ms: %s; %s", m[1], grepLine(out, "topology settled"))
			}
		}
	}
}

// grepLine is the first line of out containing sub, "" when none.
func grepLine(out, sub string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
