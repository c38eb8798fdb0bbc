// Package chromiumtest runs the harness's HTML pages (report.html, the
// trend page) in headless Chromium for tests: it finds the browser
// (installing it with reports/testdata/ensure-chromium.sh when missing and
// the test runs as root), runs it on a fresh profile with no network, and
// fails a test on any console message of the page.
package chromiumtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Find finds Debian's chromium ($CHROMIUM overrides), installing it with
// reports/testdata/ensure-chromium.sh when it is missing and the test runs
// as root; it fails t when there is none. In the unit tier (go test
// -short) it skips t: a browser is a real part of the integration tier.
func Find(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (needs chromium): run make test")
	}
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	find := func() string {
		for _, n := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
		}
		return ""
	}
	if p := find(); p != "" {
		return p
	}
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "..", "reports", "testdata", "ensure-chromium.sh")
	if os.Geteuid() == 0 {
		t.Log("chromium missing: running reports/testdata/ensure-chromium.sh")
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "sh", script).CombinedOutput()
		t.Logf("%s", out)
		if err != nil {
			t.Fatalf("ensure-chromium.sh: %v", err)
		}
		if p := find(); p != "" {
			return p
		}
	}
	t.Fatal("chromium not found: run reports/testdata/ensure-chromium.sh as root (make deps does), or set CHROMIUM")
	return ""
}

// Run runs headless Chromium bin on a fresh profile with no network (every
// host name resolves to nothing) and returns its stdout and log; it fails
// t when Chromium fails or takes over 90 s.
func Run(t testing.TB, bin string, args ...string) (stdout, logs []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=10000",
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, Tail(errb.String(), 40))
	}
	return out.Bytes(), errb.Bytes()
}

// CheckConsole fails t on any console message of the page (the pages'
// scripts log none; ECharts warns there; a blocked load is reported there).
func CheckConsole(t testing.TB, logs []byte) {
	t.Helper()
	for _, l := range strings.Split(string(logs), "\n") {
		if strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Uncaught") || strings.Contains(l, "Refused to") {
			t.Errorf("console: %s", l)
		}
	}
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
