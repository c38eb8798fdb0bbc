package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
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
)

// The hostile corpus runs the CLI as a user would (this test binary
// re-executed as seckill-harness, its main and its signal handling)
// against services that misbehave and under signals, and holds each run
// to the contract: its exit code, at most hostileWall of wall time, at
// most hostileRSS of peak memory, and nothing it started left running.
// The runs go one at a time: each is timed, and two clusters starting at
// once on a small machine would time each other.

const (
	hostileWall = 20 * time.Second
	hostileRSS  = 400 << 20 // bytes
	// signalHonoured is how soon after SIGTERM a run exits.
	signalHonoured = 5 * time.Second
	childArgs      = "SECKILL_HOSTILE_CHILD_ARGS"
	childMark      = "SECKILL_HOSTILE_MARK"
)

// TestHostileChild is the CLI in the re-executed test binary: main itself.
func TestHostileChild(t *testing.T) {
	args := os.Getenv(childArgs)
	if args == "" {
		t.Skip("only the hostile corpus runs it, as its child")
	}
	os.Args = append([]string{"seckill-harness"}, strings.Split(args, "\x1f")...)
	main()
}

// hostileRun is what one run of the CLI did.
type hostileRun struct {
	code     int
	signaled bool          // killed by a signal (no exit code)
	wall     time.Duration // from start to exit
	afterSig time.Duration // from the first SIGTERM to exit (0: none sent)
	rss      int64         // peak resident bytes
	output   string
	left     []string // processes of the run still alive after it exited
}

// runCLI runs the CLI with args; when at says so (nil: never) it sends
// signals SIGTERMs, 100 ms apart.
func runCLI(t *testing.T, args []string, at func(line string, since time.Duration) bool, signals int) hostileRun {
	t.Helper()
	mark := fmt.Sprintf("%s-%d-%d", t.Name(), os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childArgs+"="+strings.Join(args, "\x1f"), childMark+"="+mark)
	var out lockedBuffer // stdout and stderr are copied by two goroutines
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&out, pw)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchPeakRSS(cmd.Process.Pid)
	var wg sync.WaitGroup
	var sigAt time.Time
	wg.Add(1)
	go func() {
		defer wg.Done()
		sent := at == nil
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if !sent && at(sc.Text(), time.Since(began)) {
				sent = true
				sigAt = time.Now()
				for i := range signals {
					if i > 0 {
						time.Sleep(100 * time.Millisecond)
					}
					_ = cmd.Process.Signal(syscall.SIGTERM)
				}
			}
		}
	}()
	// A hard stop far past the contract: a run that never ends fails the
	// test rather than hanging it.
	kill := time.AfterFunc(3*hostileWall, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	kill.Stop()
	ended := time.Now()
	r := hostileRun{wall: ended.Sub(began), code: cmd.ProcessState.ExitCode()}
	pw.Close()
	wg.Wait()
	if !sigAt.IsZero() {
		r.afterSig = ended.Sub(sigAt)
	}
	r.output = out.String()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.signaled = true
	} else if err != nil && r.code < 0 {
		t.Fatalf("%v: %v after %s:\n%s", args, err, r.wall, lastOf(r.output))
	}
	r.rss = peak()
	// Children die with their parent (a parent-death signal, a process
	// group): give the kernel a moment, then look for any left.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r.left = marked(mark)
		if len(r.left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%v: exit %d (signaled %v) in %s (%s after the first signal), peak RSS %d MiB, left %v",
		args, r.code, r.signaled, r.wall.Round(10*time.Millisecond), r.afterSig.Round(10*time.Millisecond), r.rss>>20, r.left)
	return r
}

// watchPeakRSS follows the peak resident memory of process pid (VmHWM in
// /proc/pid/status, the high-water mark of its own address space) until
// the returned function is called, which stops the watch and returns the
// highest value seen, in bytes. Not the rusage of wait4: Go starts a
// child with vfork, and exec carries the parent's high-water mark into
// the child's ru_maxrss, so every run this test binary started after its
// own memory grew past 400 MiB (the nightly-ci run in-process) reported
// 499 MiB. A child "true" started by a process holding 300 MiB reports a
// ru_maxrss of 302 MiB. VmHWM only grows: a sample every 10 ms misses at
// most the growth of the child's last 10 ms.
func watchPeakRSS(pid int) func() int64 {
	stop, done := make(chan struct{}), make(chan int64)
	go func() {
		var peak int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := vmHWM(pid); v > peak {
				peak = v
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(stop); return <-done }
}

// vmHWM is process pid's VmHWM in bytes, 0 when it cannot be read (the
// process is gone or not yet exec'd into a new address space: a reaped
// process has no status; a zombie has no VmHWM line).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// marked lists the live processes whose environment carries mark: the
// run's descendants (redis-server, postgres, proxies, a service child).
func marked(mark string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		if err != nil || !bytes.Contains(env, []byte(childMark+"="+mark)) {
			continue
		}
		if st, err := os.ReadFile(d + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie holds nothing
		}
		cmdline, _ := os.ReadFile(d + "/cmdline")
		out = append(out, filepath.Base(d)+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}

// lastOf is what a failure shows of a run's output: its error lines
// and its last 3000 bytes.
func lastOf(s string) string {
	var errs []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "seckill-harness: ") || strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			errs = append(errs, l)
		}
	}
	if len(s) > 3000 {
		s = "…" + s[len(s)-3000:]
	}
	return strings.Join(errs, "\n") + "\n" + s
}

// bounded checks the contract every hostile run is held to.
func bounded(t *testing.T, r hostileRun, wantCode int, says ...string) {
	t.Helper()
	if r.code != wantCode || r.signaled {
		t.Errorf("exit %d, want %d:\n%s", r.code, wantCode, lastOf(r.output))
	}
	if r.wall > hostileWall {
		t.Errorf("ran %s, want at most %s:\n%s", r.wall, hostileWall, lastOf(r.output))
	}
	if r.afterSig > signalHonoured {
		t.Errorf("exited %s after SIGTERM, want at most %s:\n%s", r.afterSig, signalHonoured, lastOf(r.output))
	}
	if r.rss > hostileRSS {
		t.Errorf("peak RSS %d MiB, want at most %d MiB", r.rss>>20, hostileRSS>>20)
	}
	if len(r.left) > 0 {
		t.Errorf("left running: %q", r.left)
	}
	for _, s := range says {
		if !strings.Contains(r.output, s) {
			t.Errorf("the output does not say %q:\n%s", s, lastOf(r.output))
		}
	}
}

// hostileService listens on 127.0.0.1 and treats each connection with serve.
func hostileService(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go serve(c)
		}
	}()
	return "http://" + ln.Addr().String()
}

// httpService serves h on 127.0.0.1.
func httpService(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// A service that never answers, answers garbage, streams a chunked body
// forever or sends 10 MB bodies holds a run no longer than its plan, the
// load's tail (one send's deadline) and the bounded look-ups after it.
func TestHostileServicesEndBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts local clusters")
	}
	mapping := filepath.Join(t.TempDir(), "mapping.yaml")
	if err := os.WriteFile(mapping, []byte("timeout: 500ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 4096)
	big := bytes.Repeat([]byte("y"), 10<<20)
	for _, c := range []struct {
		name string
		says []string // besides the exit code and the bounds
		url  func(t *testing.T) string
	}{
		{"never-answers", []string{"after the load's end (one send's deadline and backoff) were cut", "could not be"}, func(t *testing.T) string {
			return hostileService(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
		}},
		{"answers-garbage", nil, func(t *testing.T) string {
			return hostileService(t, func(c net.Conn) {
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write([]byte("\x00\xff\x13garbage{{{ not http\r\n\r\n")); err != nil {
						return
					}
				}
			})
		}},
		{"chunked-forever", []string{"64 KiB"}, func(t *testing.T) string {
			return httpService(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for r.Context().Err() == nil {
					if _, err := w.Write(chunk); err != nil {
						return
					}
					w.(http.Flusher).Flush()
				}
			})
		}},
		{"10MB-body", []string{"64 KiB"}, func(t *testing.T) string {
			return httpService(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(big)
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := c.url(t)
			out := filepath.Join(t.TempDir(), "out")
			r := runCLI(t, []string{"run", "--service", url, "--service-mapping", mapping, "--duration", "2s", "--rate", "100",
				"--concurrency", "8", "--users", "500", "--stock", "100", "--replicas", "0", "--progress", "off", "--out", out}, nil, 0)
			bounded(t, r, exitCheckFailed, c.says...)
		})
	}
}

// smallRun is a run that works: a short load on a local cluster.
func smallRun(out string) []string {
	return []string{"run", "--duration", "2s", "--rate", "100", "--concurrency", "8", "--users", "500", "--stock", "100",
		"--replicas", "0", "--progress", "off", "--out", out}
}

// SIGTERM at any point (cluster start, load, mid-fault) ends failover-kill
// within signalHonoured with the interrupted code, the fault healed and
// every node stopped; the next run works.
func TestHostileSignalsEndRunsAndTheNextWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts local clusters")
	}
	for _, c := range []struct {
		name string
		at   func(line string, since time.Duration) bool
	}{
		{"at-1s", func(_ string, since time.Duration) bool { return since >= time.Second }},
		{"at-3s", func(_ string, since time.Duration) bool { return since >= 3*time.Second }},
		{"mid-fault", func(line string, _ time.Duration) bool {
			return strings.Contains(line, "fault failover") && strings.Contains(line, "inject at")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			at := c.at
			if c.name == "mid-fault" {
				at = func(line string, since time.Duration) bool {
					if c.at(line, since) {
						time.Sleep(time.Second) // the node is down, the failover under way
						return true
					}
					return false
				}
			}
			dir := t.TempDir()
			r := runCLI(t, []string{"run", "failover-kill", "--set", "faults.0.at=2s", "--progress", "off", "--out", filepath.Join(dir, "out")}, at, 1)
			bounded(t, r, exitHarnessError)
			if r.afterSig == 0 {
				t.Fatalf("no signal was sent:\n%s", lastOf(r.output))
			}
			bounded(t, runCLI(t, smallRun(filepath.Join(dir, "next")), nil, 0), exitPass)
		})
	}
}

// A service that never answers, with the default mapping (2 s per request,
// an UNKNOWN looked up): SIGTERM during the look-ups after the load ends
// the run within signalHonoured, a second SIGTERM at once.
func TestHostileSignalsDuringTheLookUpsAfterTheLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts local clusters")
	}
	url := hostileService(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	afterLoad := func(line string, _ time.Duration) bool { return strings.Contains(line, "after the load's end") }
	args := func(out string) []string {
		return []string{"run", "--service", url, "--duration", "2s", "--rate", "100", "--concurrency", "8", "--users", "500",
			"--stock", "100", "--replicas", "0", "--progress", "off", "--out", out}
	}
	t.Run("one-signal", func(t *testing.T) {
		r := runCLI(t, args(filepath.Join(t.TempDir(), "out")), afterLoad, 1)
		bounded(t, r, exitHarnessError)
		if r.afterSig == 0 {
			t.Fatalf("no signal was sent:\n%s", lastOf(r.output))
		}
	})
	t.Run("two-signals", func(t *testing.T) {
		r := runCLI(t, args(filepath.Join(t.TempDir(), "out")), afterLoad, 2)
		if !r.signaled || r.afterSig == 0 || r.afterSig > time.Second {
			t.Errorf("exit %d (killed by a signal: %v) %s after the first of two SIGTERMs: want killed by the second at once:\n%s", r.code, r.signaled, r.afterSig, lastOf(r.output))
		}
		if len(r.left) > 0 {
			t.Errorf("left running: %q", r.left)
		}
	})
}

// A script of the path under test that never returns is killed by the
// watchdog, and the run says so in those words, naming the limit: in the
// adapter's pre-flight (exit 2), and under load with
// --lua-dir (exit 1, the assertion in report.json).
func TestHostileEndlessScriptIsKilledAndSaidSo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts local clusters")
	}
	endless := func(t *testing.T, dir, from, name string) {
		t.Helper()
		src, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append([]byte("while true do end\n"), src...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A node inside a script answers nobody until it is killed (5 s, Redis's
	// busy-reply-threshold): a node timeout longer than that keeps the
	// other nodes from flagging it failed meanwhile, so the run's end
	// does not hang on when they do.
	load := []string{"--duration", "2s", "--rate", "100", "--concurrency", "8", "--users", "500", "--stock", "100", "--replicas", "0",
		"--node-timeout", "15s", "--progress", "off"}
	t.Run("adapter-preflight", func(t *testing.T) {
		dir := t.TempDir()
		endless(t, dir, "sut/adapter/testdata/shapes/correct.lua", "correct.lua")
		yaml, err := os.ReadFile("sut/adapter/testdata/shapes/correct.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "endless.yaml"), yaml, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		r := runCLI(t, append([]string{"run", "--adapter", filepath.Join(dir, "endless.yaml"), "--out", out}, load...), nil, 0)
		bounded(t, r, exitHarnessError, "the script ran past its limit of 3s and was killed (SCRIPT KILL on 127.0.0.1:")
	})
	t.Run("lua-dir", func(t *testing.T) {
		dir := t.TempDir()
		for _, f := range []string{"reserve.lua", "transition.lua", "compensate.lua"} {
			src, err := os.ReadFile(filepath.Join("lua", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		endless(t, dir, "lua/reserve.lua", "reserve.lua")
		out := filepath.Join(dir, "out")
		r := runCLI(t, append([]string{"run", "--lua-dir", dir, "--out", out}, load...), nil, 0)
		bounded(t, r, exitCheckFailed)
		rep, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "a script ran past its limit of 3s and was killed ("; !bytes.Contains(rep, []byte(want)) {
			t.Errorf("report.json does not say %q", want)
		}
	})
}

// The peak memory a hostile run is held to is the child's own: a child
// started while this process holds 300 MiB does not inherit them, as the
// rusage of wait4 makes it (exec carries the parent's high-water mark
// into the child's ru_maxrss).
func TestPeakRSSIsTheChildsOwn(t *testing.T) {
	held := make([]byte, 300<<20)
	for i := range held {
		held[i] = 1
	}
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchPeakRSS(cmd.Process.Pid)
	time.Sleep(100 * time.Millisecond)
	own := peak()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	t.Logf("sleep beside %d MiB held here: VmHWM %d KiB, ru_maxrss %d KiB", len(held)>>20, own>>10, ru.Maxrss)
	if own <= 0 || own > 50<<20 {
		t.Fatalf("peak of sleep %d bytes: want its own few MiB", own)
	}
	held[len(held)-1] = 2 // held until here
}
