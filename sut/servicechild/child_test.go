package servicechild

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fake builds testdata/fakeservice once per test binary.
func fake(t *testing.T) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fakeservice-*")
		if err != nil {
			fakeErr = err
			return
		}
		fakeBin = filepath.Join(dir, "fakeservice")
		if out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/fakeservice").CombinedOutput(); err != nil {
			fakeErr = errors.New(string(out))
		}
	})
	if fakeErr != nil {
		t.Fatalf("building testdata/fakeservice: %v", fakeErr)
	}
	return fakeBin
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func healthy(url string) bool {
	hc := &http.Client{Timeout: 300 * time.Millisecond}
	resp, err := hc.Get(url + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// The child gets the contract's environment, is ready on /healthz, and its
// process group is the fault target: SIGSTOP freezes it (no answer),
// SIGCONT brings it back, SIGKILL ends it (a grandchild in the group too),
// Restart starts it again on the same address, and Stop leaves nothing
// of the group running.
func TestChildLifecycle(t *testing.T) {
	bin := fake(t)
	dir := t.TempDir()
	ctx := context.Background()
	c, err := Start(ctx, Options{Cmd: "sleep 300 & exec " + bin, Secret: "s3cret", PGURL: "postgres://x@127.0.0.1:1/db", Dir: dir, Grace: time.Second,
		Sale: Sale{Activity: "act-9", SKU: "sku2", Stock: 8000, Buckets: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	resp, err := http.Get(c.URL() + "/env")
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if env[EnvListen] != c.Listen() || env[EnvSecret] != "s3cret" || env[EnvPGURL] != "postgres://x@127.0.0.1:1/db" || !strings.HasPrefix(c.Listen(), "127.0.0.1:") {
		t.Fatalf("the child's environment %v: want %s=%s, the secret and the PostgreSQL URL", env, EnvListen, c.Listen())
	}
	if env[EnvActivity] != "act-9" || env[EnvSKU] != "sku2" || env[EnvStock] != "8000" || env[EnvBuckets] != "4" {
		t.Fatalf("the child's environment %v: want the sale act-9, sku2, 8000 over 4 buckets", env)
	}
	pgid := c.PGID()
	grand := groupMembers(t, pgid)
	if len(grand) < 2 {
		t.Fatalf("process group %d has %v: want the service and the sleep", pgid, grand)
	}
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	if healthy(c.URL()) {
		t.Fatal("a paused service answered /healthz")
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	if !healthy(c.URL()) {
		t.Fatal("a resumed service did not answer /healthz")
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range grand {
		waitGone(t, pid)
	}
	if c.PGID() != 0 || healthy(c.URL()) {
		t.Fatal("a killed service still runs")
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Starts() != 2 || !healthy(c.URL()) {
		t.Fatalf("after Restart: %d starts, healthy %v; want 2 and healthy", c.Starts(), healthy(c.URL()))
	}
	grand = groupMembers(t, c.PGID())
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range grand {
		waitGone(t, pid)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, StderrFile)); !strings.Contains(string(b), "SIGTERM") {
		t.Fatalf("%s does not hold the child's stderr (its SIGTERM line): %q", StderrFile, b)
	}
	if err := c.Restart(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("Restart after Stop: %v, want ErrStopped", err)
	}
}

// A child that exits before it is ready, and one that never gets ready:
// Start fails within its bound, names the command and the fix, shows the
// last stderr lines, and leaves nothing running.
func TestChildThatIsNotReady(t *testing.T) {
	bin := fake(t)
	for _, tc := range []struct {
		args, want string
	}{
		{"-exit-at-start", "cannot read my configuration"},
		{"-never-ready", "was not ready at"},
	} {
		t0 := time.Now()
		pidFile := filepath.Join(t.TempDir(), "pid")
		c, err := Start(context.Background(), Options{Cmd: "echo $$ > " + pidFile + "; exec " + bin + " " + tc.args, ReadyTimeout: time.Second})
		if err == nil {
			c.Stop()
			t.Fatalf("%s: Start succeeded", tc.args)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "fix:") || !strings.Contains(msg, bin) {
			t.Fatalf("%s: error %q: want %q, the command and the fix", tc.args, msg, tc.want)
		}
		if time.Since(t0) > 10*time.Second {
			t.Fatalf("%s: Start took %v: the readiness wait is not bounded", tc.args, time.Since(t0))
		}
		b, _ := os.ReadFile(pidFile)
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid == 0 || alive(pid) {
			t.Fatalf("%s: the child (pid %q) is still running after the failed Start", tc.args, b)
		}
	}
	if _, err := Start(context.Background(), Options{Cmd: "  "}); err == nil || !strings.Contains(err.Error(), "--service-cmd") {
		t.Fatalf("empty command: %v", err)
	}
}

func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && processGroup(pid) == pgid {
			out = append(out, pid)
		}
	}
	return out
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && processGroup(pid) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	fakeOnce sync.Once
	fakeBin  string
	fakeErr  error
)

// A service whose child starts a grandchild in a session of its own
// (setsid), holding the service's stderr: Stop returns within its grace
// plus a few seconds and the grandchild is gone. Before the tree mark,
// Stop waited for the stderr pipe forever and the grandchild stayed.
func TestStopEndsADescendantInItsOwnSession(t *testing.T) {
	bin := fake(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grand.pid")
	c, err := Start(context.Background(), Options{Cmd: "setsid sleep 300 & echo $! > " + pidFile + "; exec " + bin, Dir: dir, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	grand, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if grand <= 0 || !alive(grand) {
		c.Stop()
		t.Fatalf("grandchild pid %q not running", b)
	}
	defer syscall.Kill(grand, syscall.SIGKILL) // whatever happens below
	if sid, _ := unix.Getsid(grand); sid == c.PGID() {
		t.Fatalf("the grandchild %d is in the child's session: the test does not test what it says", grand)
	}
	done := make(chan struct{})
	t0 := time.Now()
	go func() { c.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("Stop has not returned after %s (the grandchild in its own session holds the stderr pipe)", time.Since(t0))
	}
	if procState(grand) != "" && procState(grand) != "Z" {
		t.Fatalf("grandchild %d still running (state %s) after Stop", grand, procState(grand))
	}
	t.Logf("Stop returned in %s with the setsid grandchild ended", time.Since(t0).Round(time.Millisecond))
}
