package lifecycle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/reports"
	"seckill-harness/runner"
)

// A master paused with SIGSTOP past cluster-node-timeout, from the test and
// not planned by the run, is failed over by the cluster itself: the report
// lists it as an unplanned automatic failover of that master, the verdict
// line names it, and every failing check whose violations it overlaps
// names it too.
func TestUnplannedAutomaticFailoverIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own cluster and pauses a master")
	}
	const nodeTimeout = time.Second
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users = 300, 14*time.Second, 50000
	var mu sync.Mutex
	var masters []string
	var paused string
	var pausedPID int
	var wg sync.WaitGroup
	resume := func() {
		mu.Lock()
		defer mu.Unlock()
		if pausedPID != 0 {
			_ = syscall.Kill(pausedPID, syscall.SIGCONT)
			pausedPID = 0
		}
	}
	t.Cleanup(resume)
	p := &Plan{Name: "unplanned-pause", Cluster: ClusterSpec{Masters: 3, Replicas: 1, NodeTimeout: nodeTimeout},
		Stock: 100000, Buckets: 1, Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	p.OnLoad = func(ctx context.Context, _ compose.Cluster) func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(3 * time.Second)
			mu.Lock()
			addr := masters[0]
			mu.Unlock()
			pid := processID(t, addr)
			mu.Lock()
			paused, pausedPID = addr, pid
			mu.Unlock()
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Errorf("SIGSTOP %s (pid %d): %v", addr, pid, err)
				return
			}
			time.Sleep(5 * nodeTimeout)
			resume()
		}()
		return func() { wg.Wait() }
	}
	dir := t.TempDir()
	out := Output{Dir: dir, OnServers: func(nodes map[string]reports.NodeSample, _ *reports.PoolSecond) {
		mu.Lock()
		defer mu.Unlock()
		if masters != nil {
			return
		}
		for a, s := range nodes {
			if s.Role == "master" {
				masters = append(masters, a)
			}
		}
	}}
	oc, err := Execute(context.Background(), p, out)
	if err != nil {
		t.Fatal(err)
	}
	rep := oc.Report
	var got *reports.Event
	for i, e := range rep.UnplannedEvents {
		t.Logf("unplanned: %.1f s %s %s: %s", e.TimeS, e.What, e.Node, e.Evidence)
		if e.What == reports.EventAutomaticFailover && e.Node == paused {
			got = &rep.UnplannedEvents[i]
		}
	}
	if got == nil {
		t.Fatalf("no unplanned automatic-failover of the paused master %s", paused)
	}
	t.Logf("verdict line: %s", rep.VerdictLine())
	if !strings.Contains(rep.VerdictLine(), "automatic-failover of "+paused) {
		t.Errorf("verdict line does not name the failover: %s", rep.VerdictLine())
	}
	for _, inv := range rep.Invariants {
		if inv.Status == reports.StatusFail {
			t.Logf("%s fails: %s", inv.ID, inv.Detail)
			if !strings.Contains(inv.Detail, "unplanned automatic-failover of "+paused) {
				t.Errorf("%s's detail does not name the failover: %s", inv.ID, inv.Detail)
			}
		}
	}
	for _, a := range rep.Assertions {
		if a.Status == reports.StatusFail {
			t.Logf("assertion %q fails: %s", a.Name, a.Detail)
		}
	}
	// report.json carries them.
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Unplanned []reports.Event `json:"unplanned_events"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Unplanned) != len(rep.UnplannedEvents) {
		t.Fatalf("report.json unplanned_events: %d, err %v", len(doc.Unplanned), err)
	}
	if os.Getenv("SECKILL_KEEP_REPORT") != "" {
		_ = os.WriteFile(os.Getenv("SECKILL_KEEP_REPORT"), raw, 0o644)
	}
}

// processID reads a node's process id off INFO server (the harness started
// the node on this host).
func processID(t *testing.T, addr string) int {
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	info, err := cl.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatalf("INFO server on %s: %v", addr, err)
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no process_id in INFO server of %s", addr)
	return 0
}
