package compose

import (
	"bytes"
	"context"
	"fmt"
	"os"
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
	integration(t, "a Docker engine and root")
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
// container (running or not), network and volume, by id and name, less
// the containers carrying one of the labels foreign.
func dockerState(t *testing.T, foreign ...string) map[string]bool {
	t.Helper()
	list := func(args ...string) []string {
		out, err := exec.Command("docker", args...).Output()
		if err != nil {
			t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
		}
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		return lines
	}
	skip := map[string]bool{}
	for _, l := range foreign {
		for _, id := range list("ps", "-a", "-q", "--no-trunc", "--filter", "label="+l) {
			skip[id] = true
		}
	}
	state := map[string]bool{}
	for _, args := range [][]string{
		{"ps", "-a", "--no-trunc", "--format", "container {{.ID}} {{.Names}} {{.Image}}"},
		{"network", "ls", "--no-trunc", "--format", "network {{.ID}} {{.Name}} {{.Driver}}"},
		{"volume", "ls", "--format", "volume {{.Name}}"},
	} {
		for _, line := range list(args...) {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "container" && skip[f[1]] {
				continue
			}
			state[line] = true
		}
	}
	return state
}

// leftoverWait bounds how long leavesDockerAsFound waits for the objects
// that appeared while its test ran to go: another package's Docker test
// running at the same time (go test -p), or another user of the engine,
// removes its own when it ends; what the test left never goes.
const leftoverWait = 90 * time.Second

// leavesDockerAsFound registers a cleanup (run after every later one)
// failing t if a container, network or volume that was not there at the
// call is still there leftoverWait after the test's own cleanups: what t
// created and did not remove. What vanished meanwhile is not t's doing
// (an earlier run's leftovers, another package's Docker test) and is not
// compared; nor are the containers carrying a label of foreign (those
// another package's tests make and t never does, e.g. the harness's own
// Docker clusters while t runs a Compose stack). What t knows it started
// is checked by id, at once (removesItsContainers, composeProjectGone).
func leavesDockerAsFound(t *testing.T, foreign ...string) {
	t.Helper()
	before := dockerState(t, foreign...)
	t.Cleanup(func() {
		deadline := time.Now().Add(leftoverWait)
		for {
			var left []string
			for obj := range dockerState(t, foreign...) {
				if !before[obj] {
					left = append(left, obj)
				}
			}
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				sort.Strings(left)
				t.Errorf("docker objects left behind (not there before the test, still there %v after it):\n%s", leftoverWait, strings.Join(left, "\n"))
				return
			}
			time.Sleep(time.Second)
		}
	})
}

// removesItsContainers registers a check, run after every cleanup t
// registers later (the Close that removes them), that every container
// whose id is handed to the returned func (one t started) is gone. It
// compares nothing else: the engine's other containers are not t's.
func removesItsContainers(t *testing.T) (started func(ids ...string)) {
	t.Helper()
	var mu sync.Mutex
	var ids []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if out, err := exec.Command("docker", "ps", "-a", "-q", "--no-trunc", "--filter", "id="+id).Output(); err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("container %.12s, started by this test, is still there (docker ps: %q %v)", id, out, err)
			}
		}
	})
	return func(more ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range more {
			if id == "" {
				t.Errorf("a container this test started has no id")
				continue
			}
			ids = append(ids, id)
		}
	}
}

// composeProjectGone registers a check, run after every cleanup t
// registers later (the stack's down), that no container, network or
// volume of the Compose project is left: the stack t brought up.
func composeProjectGone(t *testing.T, project string) {
	t.Helper()
	t.Cleanup(func() {
		label := "label=com.docker.compose.project=" + project
		for _, args := range [][]string{
			{"ps", "-a", "--format", "container {{.Names}} {{.Status}}", "--filter", label},
			{"network", "ls", "--format", "network {{.Name}}", "--filter", label},
			{"volume", "ls", "--format", "volume {{.Name}}", "--filter", label},
		} {
			out, err := exec.Command("docker", args...).Output()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("the compose project %s is not all gone after its down: docker %s: %v\n%s", project, args[0], err, out)
			}
		}
	})
}

// composeProject is the project name (-p) of README.md's compose lines.
func composeProject(t *testing.T, line string) string {
	t.Helper()
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "-p" {
			return f[i+1]
		}
	}
	t.Fatalf("README's compose line names no project (-p): %q", line)
	return ""
}

// harnessLabels label the containers the harness's own Docker clusters
// and databases run in (StartDocker, StartDockerPostgres).
var harnessLabels = []string{"seckill-harness.node", DockerPostgresLabel}

// cleanupReserve is the time a Docker test keeps, before the test
// binary's deadline (go test -timeout), for its own cleanups: a binary
// killed at its deadline runs none, and leaves every container, stack
// and child process of the test behind for the next run.
const cleanupReserve = 2 * time.Minute

// bodyCtx is the context of a Docker test's body: it ends at t's
// deadline less cleanupReserve (never without -timeout). Cleanups run on
// context.Background(): they run in the reserve.
func bodyCtx(t *testing.T) context.Context {
	t.Helper()
	d, ok := t.Deadline()
	if !ok {
		return context.Background()
	}
	ctx, cancel := context.WithDeadline(context.Background(), d.Add(-cleanupReserve))
	t.Cleanup(cancel)
	return ctx
}

// dockerCommand is exec.CommandContext on ctx (bodyCtx, or Background in a
// cleanup) that, when ctx ends, gets SIGINT as from Ctrl-C (a harness
// child then removes its containers before it exits) and SIGKILL 30 s
// later.
func dockerCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	return cmd
}
