package compose

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Docker tests (TestDocker*, TestCompose*, TestImage*) run against a
// real engine: testdata/ensure-docker.sh installs Debian's docker.io when
// missing and starts dockerd with no bridge network and no iptables
// changes when no engine answers; TestMain stops a dockerd it started
// (stopDockerIfStarted). Images come from testdata/build-images.sh (built
// locally from Debian's redis-server and from the toxiproxy module in
// go.mod; never pulled). Where no engine can be had (not root, no
// package), the tests skip with the script's reason.
var engine struct {
	once    sync.Once
	started bool // this test binary started dockerd: stop it at the end
	err     error
	took    time.Duration

	imgOnce         sync.Once
	redis, toxiImg  string
	postgres        string
	imgErr          error
	imgTook         time.Duration
	imgBuildSummary string
}

// dockerEngine skips t unless a Docker engine answers (starting one when
// possible).
func dockerEngine(t *testing.T) {
	t.Helper()
	engine.once.Do(func() {
		t0 := time.Now()
		out, err := exec.Command("sh", "testdata/ensure-docker.sh", "start").CombinedOutput()
		engine.took = time.Since(t0)
		if err != nil {
			engine.err = fmt.Errorf("testdata/ensure-docker.sh start: %v: %s", err, strings.TrimSpace(string(out)))
			return
		}
		engine.started = strings.Contains(string(out), "started")
	})
	if engine.err != nil {
		t.Skipf("no Docker engine can be had here: %v", engine.err)
	}
	if err := DockerAvailable(context.Background()); err != nil {
		t.Fatalf("ensure-docker.sh succeeded but: %v", err)
	}
	t.Logf("docker engine: started by this test binary %v (ensure took %v)", engine.started, engine.took.Round(time.Millisecond))
}

// localPostgresImage returns the locally built PostgreSQL image (built
// with the others by localImages).
func localPostgresImage(t *testing.T) string {
	t.Helper()
	localImages(t)
	return engine.postgres
}

// localImages returns the locally built Redis and toxiproxy images,
// building the missing ones (the PostgreSQL image too) first.
func localImages(t *testing.T) (redisImage, toxiproxyImage string) {
	t.Helper()
	dockerEngine(t)
	engine.imgOnce.Do(func() {
		t0 := time.Now()
		cmd := exec.Command("sh", "testdata/build-images.sh", "all")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		engine.imgTook = time.Since(t0)
		engine.imgBuildSummary = strings.TrimSpace(string(out))
		if err != nil {
			engine.imgErr = fmt.Errorf("testdata/build-images.sh: %v: %s", err, stderr.String())
			return
		}
		for _, line := range strings.Split(engine.imgBuildSummary, "\n") {
			tag := strings.Fields(line)[0]
			switch {
			case strings.Contains(tag, "/redis:"):
				engine.redis = tag
			case strings.Contains(tag, "/toxiproxy:"):
				engine.toxiImg = tag
			case strings.Contains(tag, "/postgres:"):
				engine.postgres = tag
			}
		}
		if engine.redis == "" || engine.toxiImg == "" || engine.postgres == "" {
			engine.imgErr = fmt.Errorf("testdata/build-images.sh printed no tags: %q", engine.imgBuildSummary)
		}
	})
	if engine.imgErr != nil {
		t.Fatal(engine.imgErr)
	}
	t.Logf("images (%v): %s", engine.imgTook.Round(time.Millisecond), strings.ReplaceAll(engine.imgBuildSummary, "\n", "; "))
	return engine.redis, engine.toxiImg
}

// stopDockerIfStarted stops the dockerd this test binary started.
func stopDockerIfStarted() error {
	if !engine.started {
		return nil
	}
	out, err := exec.Command("sh", "testdata/ensure-docker.sh", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("testdata/ensure-docker.sh stop: %v: %s", err, out)
	}
	return nil
}

// dockerState is what a Docker test must leave as it found: every
// container (running or not), network and volume, by id and name.
func dockerState(t *testing.T) string {
	t.Helper()
	var parts []string
	for _, args := range [][]string{
		{"ps", "-a", "--no-trunc", "--format", "container {{.ID}} {{.Names}} {{.Image}}"},
		{"network", "ls", "--no-trunc", "--format", "network {{.ID}} {{.Name}} {{.Driver}}"},
		{"volume", "ls", "--format", "volume {{.Name}}"},
	} {
		out, err := exec.Command("docker", args...).Output()
		if err != nil {
			t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		sort.Strings(lines)
		parts = append(parts, lines...)
	}
	return strings.Join(parts, "\n")
}

// leavesDockerAsFound registers a cleanup (run after every later one)
// failing t if the containers, networks or volumes differ from now.
func leavesDockerAsFound(t *testing.T) {
	t.Helper()
	before := dockerState(t)
	t.Cleanup(func() {
		if after := dockerState(t); after != before {
			t.Errorf("docker state changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}
