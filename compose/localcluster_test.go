package compose

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The shared 3x1 cluster used by the read-mostly tests; torn down in TestMain.
var shared struct {
	once sync.Once
	c    *LocalCluster
	err  error
	dur  time.Duration
}

func TestMain(m *testing.M) {
	runKilledHarnessHelper()
	code := m.Run()
	if shared.c != nil {
		if err := shared.c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "closing shared cluster: %v\n", err)
			code = 1
		}
	}
	if err := stopDockerIfStarted(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// stderrLogf is used for the shared cluster, which outlives single tests.
func stderrLogf(format string, args ...any) {
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "    [shared] "+format+"\n", args...)
	}
}

// tlogf returns a Logf that writes to t until the test's cleanups ran.
func tlogf(t *testing.T) func(string, ...any) {
	var done atomic.Bool
	t.Cleanup(func() { done.Store(true) })
	return func(format string, args ...any) {
		if !done.Load() {
			t.Logf(format, args...)
		}
	}
}

// integration skips t in the unit tier (go test -short): it needs what
// (redis-server, PostgreSQL, Docker). The other packages call
// clustertest.Need, which imports this package.
func integration(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("integration test (needs %s): run make test", what)
	}
}

func skipWithoutRedis(t *testing.T) {
	t.Helper()
	integration(t, "redis-server")
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed: apt-get install -y redis-server")
	}
}

func sharedCluster(t *testing.T) *LocalCluster {
	t.Helper()
	skipWithoutRedis(t)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		t0 := time.Now()
		shared.c, shared.err = Start(ctx, Options{Logf: stderrLogf})
		shared.dur = time.Since(t0)
	})
	if shared.err != nil {
		t.Fatalf("Start: %v", shared.err)
	}
	return shared.c
}

// startOwn starts a cluster owned by t and closed at its end.
func startOwn(t *testing.T, opt Options) *LocalCluster {
	t.Helper()
	skipWithoutRedis(t)
	if opt.Logf == nil {
		opt.Logf = tlogf(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := Start(ctx, opt)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("cluster %dx%d started in %v", opt.Masters, opt.ReplicasPerMaster, time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// procState returns the state letter of /proc/<pid>/stat ("R", "S", "T", ...).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("reading /proc/%d/stat: %v", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return strings.Fields(s[i+1:])[0]
}

func ping(addr string, timeout time.Duration) error {
	cl := newAdminClient(addr)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return cl.Ping(ctx).Err()
}

func TestSlotRanges(t *testing.T) {
	got := slotRanges(3)
	want := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("slotRanges(3) = %v, want %v", got, want)
	}
	for n := 1; n <= 7; n++ {
		rs := slotRanges(n)
		next := 0
		for _, r := range rs {
			if r[0] != next || r[1] < r[0] {
				t.Fatalf("slotRanges(%d) = %v: not contiguous", n, rs)
			}
			next = r[1] + 1
		}
		if next != NumSlots {
			t.Fatalf("slotRanges(%d) = %v: does not end at 16383", n, rs)
		}
	}
}

func TestParseClusterNodes(t *testing.T) {
	const s = "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host.x slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n" +
		"67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922 [5461->-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]\n" +
		"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 16383\n" +
		"6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 slave,fail 67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 disconnected\n"
	es, err := parseClusterNodes(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 4 {
		t.Fatalf("got %d entries", len(es))
	}
	if e := es[0]; e.role != "replica" || e.masterID != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" || e.addr != "127.0.0.1:30004" {
		t.Errorf("entry 0: %+v", e)
	}
	if e := es[1]; e.role != "master" || fmt.Sprint(e.slots) != "[[5461 10922]]" || e.masterID != "" {
		t.Errorf("entry 1: %+v", e)
	}
	if e := es[2]; !e.myself || fmt.Sprint(e.slots) != "[[0 5460] [16383 16383]]" {
		t.Errorf("entry 2: %+v", e)
	}
	if e := es[3]; !e.hasFlag("fail") || e.role != "replica" {
		t.Errorf("entry 3: %+v", e)
	}
}

func TestStartAndTopology(t *testing.T) {
	integration(t, "redis-server")
	c := sharedCluster(t)
	t.Logf("STARTUP: 3 masters x 1 replica ready in %v (target <= 5s)", shared.dur.Round(time.Millisecond))
	if shared.dur > 5*time.Second {
		t.Logf("WARNING: start-up took longer than the 5s target")
	}
	ctx := ctxT(t, 20*time.Second)

	addrs := c.Addrs()
	if len(addrs) != 6 {
		t.Fatalf("Addrs() = %v, want 6", addrs)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 6 {
		t.Fatalf("Nodes() returned %d nodes: %+v", len(nodes), nodes)
	}
	masters := map[string]Node{}
	var covered [NumSlots]bool
	total := 0
	for i, n := range nodes {
		if n.Addr != addrs[i] {
			t.Errorf("Nodes()[%d].Addr = %s, want %s (Addrs order)", i, n.Addr, addrs[i])
		}
		if n.PID <= 0 || pidGone(n.PID) {
			t.Errorf("node %s: PID %d not running", n.Addr, n.PID)
		}
		if st, err := os.Stat(n.Dir); err != nil || !st.IsDir() {
			t.Errorf("node %s: dir %q: %v", n.Addr, n.Dir, err)
		}
		if len(n.ID) != 40 || n.Port == 0 || n.Paused || len(n.Flags) != 0 {
			t.Errorf("node %s: unexpected %+v", n.Addr, n)
		}
		if n.Role == "master" {
			masters[n.ID] = n
			for _, r := range n.Slots {
				for s := r[0]; s <= r[1]; s++ {
					if covered[s] {
						t.Fatalf("slot %d owned twice", s)
					}
					covered[s] = true
					total++
				}
			}
		}
	}
	if len(masters) != 3 || total != NumSlots {
		t.Fatalf("%d masters owning %d slots, want 3 and %d", len(masters), total, NumSlots)
	}
	perMaster := map[string]int{}
	for _, n := range nodes {
		if n.Role != "replica" {
			continue
		}
		if _, ok := masters[n.MasterID]; !ok {
			t.Errorf("replica %s points at %q, which is not a master", n.Addr, n.MasterID)
		}
		perMaster[n.MasterID]++
	}
	for id, m := range masters {
		if perMaster[id] != 1 {
			t.Errorf("master %s has %d replicas, want 1", m.Addr, perMaster[id])
		}
		reps, err := c.ReplicasOf(ctx, id)
		if err != nil || len(reps) != 1 || reps[0].MasterID != id {
			t.Errorf("ReplicasOf(%s) = %+v, %v", m.Addr, reps, err)
		}
	}
	for _, slot := range []int{0, 5460, 5461, 10922, 10923, 16383} {
		m, err := c.MasterOfSlot(ctx, slot)
		if err != nil || !m.HasSlot(slot) || m.Role != "master" {
			t.Errorf("MasterOfSlot(%d) = %+v, %v", slot, m, err)
		}
	}
	if _, err := c.MasterOfSlot(ctx, NumSlots); err == nil {
		t.Errorf("MasterOfSlot(16384) did not fail")
	}
	if n, ok := c.NodeByAddr(addrs[0]); !ok || n.Role != "master" || n.PID == 0 {
		t.Errorf("NodeByAddr(%s) = %+v, %v", addrs[0], n, ok)
	}
	if _, ok := c.NodeByAddr("127.0.0.1:1"); ok {
		t.Errorf("NodeByAddr of a foreign address returned ok")
	}
	if tail := c.NodeLogTail(addrs[0], 5); !strings.Contains(c.NodeLogTail(addrs[0], 1000), "Ready to accept connections") || strings.Count(tail, "\n") > 4 {
		t.Errorf("NodeLogTail: unexpected %q", tail)
	}
	conf, err := os.ReadFile(nodes[0].Dir + "/redis.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bind 127.0.0.1\n", "cluster-enabled yes\n", "cluster-node-timeout 2000\n", "appendonly no\n", "save \"\"\n", "enable-debug-command local\n", "cluster-require-full-coverage yes\n"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("redis.conf lacks %q", want)
		}
	}

	// The cluster serves a real cluster client across all slots.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	for i := 0; i < 200; i++ {
		k := "compose-test:" + strconv.Itoa(i)
		if err := cc.Set(ctx, k, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		if v, err := cc.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET %s = %v, %v", k, v, err)
		}
	}
}

func TestPauseResume(t *testing.T) {
	integration(t, "redis-server")
	c := sharedCluster(t)
	ctx := ctxT(t, 30*time.Second)
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rep Node
	for _, n := range nodes {
		if n.Role == "replica" {
			rep = n
			break
		}
	}
	if err := c.Pause(rep.Addr); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(rep.Addr); err != nil {
		t.Fatalf("second Pause: %v", err)
	}
	if st := procState(t, rep.PID); st != "T" {
		t.Errorf("paused process state %q, want T", st)
	}
	if err := ping(rep.Addr, 300*time.Millisecond); err == nil {
		t.Errorf("PING to a paused node succeeded")
	}
	if n, _ := c.NodeByAddr(rep.Addr); !n.Paused || n.PID != rep.PID {
		t.Errorf("NodeByAddr after Pause: %+v", n)
	}
	if err := c.Resume(rep.Addr); err != nil {
		t.Fatal(err)
	}
	if err := c.Resume(rep.Addr); err != nil {
		t.Fatalf("second Resume: %v", err)
	}
	if err := ping(rep.Addr, 2*time.Second); err != nil {
		t.Errorf("PING after Resume: %v", err)
	}
	if n, _ := c.NodeByAddr(rep.Addr); n.Paused {
		t.Errorf("NodeByAddr after Resume: still paused")
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestFailoverAndRestart(t *testing.T) {
	integration(t, "redis-server")
	c := startOwn(t, Options{Masters: 3, ReplicasPerMaster: 1, BaseDir: t.TempDir()})
	ctx := ctxT(t, 45*time.Second)

	old, err := c.MasterOfSlot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := c.ReplicasOf(ctx, old.ID)
	if err != nil || len(reps) != 1 {
		t.Fatalf("ReplicasOf(%s) = %v, %v", old.Addr, reps, err)
	}
	rep := reps[0]

	// Kill the master of slot 0: its replica must take over.
	t0 := time.Now()
	if err := c.Kill(old.Addr); err != nil {
		t.Fatal(err)
	}
	if !pidGone(old.PID) {
		t.Fatalf("pid %d still exists after Kill", old.PID)
	}
	if err := c.Kill(old.Addr); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if n, _ := c.NodeByAddr(old.Addr); n.PID != 0 {
		t.Errorf("NodeByAddr after Kill: PID %d, want 0", n.PID)
	}
	for {
		m, err := c.MasterOfSlot(ctx, 0)
		if err == nil && m.ID == rep.ID {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no failover to %s: last %+v, %v", rep.Addr, m, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("FAILOVER: replica %s became master of slot 0 %v after SIGKILL of %s", rep.Addr, time.Since(t0).Round(time.Millisecond), old.Addr)
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("WaitHealthy with one node down: %v", err)
	}

	// Bring the old master back: same port, same identity, now a replica.
	t1 := time.Now()
	if err := c.Restart(ctx, old.Addr); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("REJOIN: %s restarted and cluster healthy again in %v", old.Addr, time.Since(t1).Round(time.Millisecond))
	n, ok := c.NodeByAddr(old.Addr)
	if !ok || n.ID != old.ID || n.Role != "replica" || n.MasterID != rep.ID || n.PID == 0 || n.PID == old.PID || n.Dir != old.Dir {
		t.Fatalf("old master after restart: %+v (want replica of %s with id %s)", n, rep.ID, old.ID)
	}

	// Graceful Stop and Restart of a replica.
	if err := c.Stop(n.Addr); err != nil {
		t.Fatal(err)
	}
	if !pidGone(n.PID) {
		t.Fatalf("pid %d still exists after Stop", n.PID)
	}
	if err := c.Stop(n.Addr); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := c.Pause(n.Addr); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Pause of a stopped node: %v, want ErrNotRunning", err)
	}
	if err := c.Resume(n.Addr); err != nil {
		t.Errorf("Resume of a stopped node: %v", err)
	}
	if err := c.Restart(ctx, n.Addr); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if n2, _ := c.NodeByAddr(n.Addr); n2.Role != "replica" || n2.ID != old.ID {
		t.Errorf("after Stop/Restart: %+v", n2)
	}
}

func TestMissingRedisServer(t *testing.T) {
	check := func(err error) {
		t.Helper()
		if !errors.Is(err, ErrRedisServerMissing) {
			t.Fatalf("err = %v, want ErrRedisServerMissing", err)
		}
		if !strings.Contains(err.Error(), "apt-get install -y redis-server") {
			t.Fatalf("error text does not name the fix: %v", err)
		}
	}
	ctx := ctxT(t, 10*time.Second)
	c, err := Start(ctx, Options{RedisServer: "/nonexistent/bin/redis-server"})
	if c != nil {
		t.Fatalf("got a cluster")
	}
	check(err)

	t.Setenv("PATH", t.TempDir())
	c, err = Start(ctx, Options{})
	if c != nil {
		t.Fatalf("got a cluster")
	}
	check(err)
	if err := c.Close(); err != nil { // nil *LocalCluster
		t.Fatal(err)
	}
}

// TestPortTakenAndClose occupies the port the harness picks first for the
// node, so redis-server fails to bind and the node is retried on another
// port; then it checks that Close leaves no process and no directory behind.
func TestPortTakenAndClose(t *testing.T) {
	integration(t, "redis-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	var mu sync.Mutex
	var attempts []int
	var pids []int
	var dirs []string
	opt := Options{
		Masters:           1,
		ReplicasPerMaster: NoReplicas,
		BaseDir:           t.TempDir(),
		hooks: &testHooks{
			pickPort: func(idx, attempt int) int {
				mu.Lock()
				defer mu.Unlock()
				attempts = append(attempts, attempt)
				if attempt == 0 {
					return taken
				}
				return 0
			},
			onSpawn: func(pid int, dir string) {
				mu.Lock()
				defer mu.Unlock()
				pids = append(pids, pid)
				dirs = append(dirs, dir)
			},
		},
	}
	ctx := ctxT(t, 30*time.Second)
	opt.Logf = tlogf(t)
	c, err := Start(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.Addrs()[0]
	if addr == net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)) {
		t.Fatalf("node uses the taken port %d", taken)
	}
	mu.Lock()
	if fmt.Sprint(attempts) != "[0 1]" || len(pids) != 2 {
		t.Errorf("attempts %v, spawned pids %v: want a failed first attempt and one retry", attempts, pids)
	}
	mu.Unlock()
	if !strings.Contains(c.NodeLogTail(addr, 1000), "Address already in use") {
		t.Errorf("log does not show the bind failure:\n%s", c.NodeLogTail(addr, 20))
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ping(addr, time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("port %d was taken; node started on %s instead", taken, addr)
	if nodes, err := c.Nodes(ctx); err != nil || len(nodes) != 1 || nodes[0].Addr != addr || nodes[0].PID == 0 ||
		nodes[0].Role != "master" || fmt.Sprint(nodes[0].Slots) != "[[0 16383]]" {
		t.Errorf("Nodes() of a single-node cluster = %+v, %v", nodes, err)
	}

	// Pause it so Close has to SIGCONT before SIGTERM.
	if err := c.Pause(addr); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, pid := range pids {
		if !pidGone(pid) {
			t.Errorf("pid %d still exists after Close", pid)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("dir %s still exists after Close (%v)", d, err)
		}
	}
	if err := c.Kill(addr); err != nil {
		t.Errorf("Kill after Close: %v", err)
	}
	if err := c.Restart(ctx, addr); !errors.Is(err, ErrClosed) {
		t.Errorf("Restart after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Nodes(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Nodes after Close: %v, want ErrClosed", err)
	}
}

// TestNeverConverges gives the cluster too little time to form: Start must
// fail with every node's log tail in the error and leave nothing behind.
// "1ms" expires while the cluster is being set up; "1s" expires in
// WaitHealthy, since a fresh Redis master refuses to report cluster_state:ok
// during its first 2s (CLUSTER_WRITABLE_DELAY) — or, on a starved host
// whose processes took most of the second to start (3.1 s at load 19),
// while the nodes still meet: the error names whichever phase it was.
func TestNeverConverges(t *testing.T) {
	integration(t, "redis-server")
	skipWithoutRedis(t)
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		replicas int
		wantText []string // one of them
	}{
		{"1ms", time.Millisecond, 0, []string{"context deadline exceeded"}},
		{"1s", time.Second, NoReplicas, []string{"cluster not healthy", "nodes did not discover each other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var pids []int
			var dirs []string
			opt := Options{
				Masters:           3,
				ReplicasPerMaster: tc.replicas,
				BaseDir:           t.TempDir(),
				ReadyTimeout:      tc.timeout,
				Logf:              tlogf(t),
				hooks: &testHooks{onSpawn: func(pid int, dir string) {
					mu.Lock()
					defer mu.Unlock()
					pids = append(pids, pid)
					dirs = append(dirs, dir)
				}},
			}
			wantNodes := 6
			if tc.replicas < 0 {
				wantNodes = 3
			}
			ctx := ctxT(t, 30*time.Second)
			c, err := Start(ctx, opt)
			if err == nil {
				c.Close()
				t.Fatalf("Start succeeded with ReadyTimeout %v", tc.timeout)
			}
			if c != nil {
				t.Errorf("Start returned a cluster together with an error")
			}
			msg := err.Error()
			t.Logf("error (truncated): %.700s", msg)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error does not wrap context.DeadlineExceeded: %v", err)
			}
			if !slices.ContainsFunc(tc.wantText, func(w string) bool { return strings.Contains(msg, w) }) {
				t.Errorf("error lacks one of %q", tc.wantText)
			}
			if strings.Count(msg, "last 10 log lines") != wantNodes || strings.Count(msg, "Ready to accept connections") != wantNodes {
				t.Errorf("error lacks the log tails of all %d nodes:\n%s", wantNodes, msg)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(pids) < wantNodes { // more if a port had to be retried
				t.Errorf("spawned %d processes, want %d", len(pids), wantNodes)
			}
			for _, pid := range pids {
				if !pidGone(pid) {
					t.Errorf("pid %d still exists after failed Start", pid)
				}
			}
			for _, d := range dirs {
				if _, err := os.Stat(d); !os.IsNotExist(err) {
					t.Errorf("dir %s still exists after failed Start (%v)", d, err)
				}
			}
		})
	}
}
