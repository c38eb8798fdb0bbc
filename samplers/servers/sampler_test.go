package servers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/clustertest"
	"seckill-harness/reports"
)

// hotLoad runs a CPU-heavy script on one key (so on one master) from a few
// workers until ctx ends, and returns how many calls it made.
func hotLoad(ctx context.Context, rdb *redis.ClusterClient, key string) int64 {
	script := redis.NewScript(`local n = 0 for i = 1, 20000 do n = n + i end redis.call('INCR', KEYS[1]) return n`)
	var mu sync.Mutex
	var calls int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := script.Run(ctx, rdb, []string{key}).Err(); err == nil {
					mu.Lock()
					calls++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return calls
}

// The sampler sees every node every second, names the master that owns a
// hot key as the hottest node, measures the replicas' lag against their
// masters, and counts only the script calls of the run.
func TestSamplerSeesTheHotMasterAndEveryNode(t *testing.T) {
	clustertest.Need(t)
	c, rdb := startCluster(t)
	ctx := context.Background()
	key := "servers-test-hot"
	t.Cleanup(func() { _ = rdb.Del(context.Background(), key).Err() })
	// Script calls before the run must not be counted.
	for i := 0; i < 50; i++ {
		if err := rdb.Eval(ctx, `return 1`, []string{key}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	hot, err := c.MasterOfSlot(ctx, int(slot))
	if err != nil {
		t.Fatal(err)
	}
	var rounds int
	var mu sync.Mutex
	s := Start(ctx, c, Options{Pool: rdb, OnRound: func(nodes map[string]reports.NodeSample, pool *reports.PoolSecond) {
		mu.Lock()
		rounds++
		mu.Unlock()
	}})
	began := time.Now()
	lctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	calls := hotLoad(lctx, rdb, key)
	cancel()
	// The pipelined EVALSHA of redis.Script may fall back to EVAL once
	// (NOSCRIPT); either way these are the run's only script calls.
	sec := s.Finish(ctx, began)

	if len(sec.Nodes) != 6 {
		t.Fatalf("want 6 nodes, got %d: %+v", len(sec.Nodes), sec.Nodes)
	}
	for _, n := range sec.Nodes {
		if len(n.Series) < 3 {
			t.Errorf("%s: %d samples in a 4 s run sampled each second", n.Addr, len(n.Series))
		}
		for _, p := range n.Series {
			if p.Error != "" {
				t.Errorf("%s at %.1fs: %s", n.Addr, p.TS, p.Error)
			}
			if p.ClusterState != "ok" {
				t.Errorf("%s at %.1fs: cluster_state %q", n.Addr, p.TS, p.ClusterState)
			}
			if p.UsedMemory <= 0 || p.ConnectedClients <= 0 {
				t.Errorf("%s at %.1fs: used_memory %d, connected_clients %d", n.Addr, p.TS, p.UsedMemory, p.ConnectedClients)
			}
		}
		if n.Role == "replica" {
			if n.Master == "" {
				t.Errorf("replica %s without its master", n.Addr)
			}
			last := n.Series[len(n.Series)-1]
			if last.LinkStatus != "up" || last.LagBytes == nil {
				t.Errorf("replica %s: link %q lag %v", n.Addr, last.LinkStatus, last.LagBytes)
			}
		}
	}
	cpu := sec.CPUByNode()
	if len(cpu) != 6 || cpu[0].Addr != hot.Addr {
		t.Fatalf("hottest should be %s (owns the hot key): %+v", hot.Addr, cpu)
	}
	if cpu[0].PeakPct < 2*cpu[len(cpu)-1].PeakPct || cpu[0].PeakPct < 10 {
		t.Errorf("the hot master's CPU does not stand out: %+v", cpu)
	}
	if !strings.Contains(sec.HottestSummary(), hot.Addr) {
		t.Errorf("summary does not name %s: %s", hot.Addr, sec.HottestSummary())
	}
	var scriptCalls int64
	for _, st := range sec.Scripts {
		if strings.HasPrefix(st.Command, "eval") {
			scriptCalls += st.Calls
		}
	}
	// Each successful call is one EVALSHA (plus at most one EVAL per
	// worker after NOSCRIPT, and calls cut short by the deadline that the
	// server still ran): never the 50 calls made before the run.
	if scriptCalls < calls || scriptCalls > calls+8 {
		t.Errorf("commandstats count %d script calls in the run, the load made %d (%+v)", scriptCalls, calls, sec.Scripts)
	}
	if len(sec.Pool) < 3 {
		t.Errorf("pool: %d samples", len(sec.Pool))
	}
	var hits int64
	for _, p := range sec.Pool {
		hits += p.Hits + p.Misses
	}
	if hits < calls {
		t.Errorf("pool served %d gets for %d calls", hits, calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if rounds < 3 {
		t.Errorf("OnRound called %d times", rounds)
	}
}

// Slow-log entries logged before the run are left out; the run's are in.
func TestSlowlogKeepsOnlyTheRun(t *testing.T) {
	clustertest.Need(t)
	c, rdb := startCluster(t)
	ctx := context.Background()
	key := "servers-test-slowlog"
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.MasterOfSlot(ctx, int(slot))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := c.Admin(m.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Del(context.Background(), key).Err() })
	was, err := admin.ConfigGet(ctx, "slowlog-log-slower-than").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.ConfigSet(context.Background(), "slowlog-log-slower-than", was["slowlog-log-slower-than"]).Err()
	})
	if err := rdb.Set(ctx, key, "before-the-run", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the slow log has 1 s resolution
	s := Start(ctx, c, Options{})
	began := time.Now()
	if err := rdb.Set(ctx, key, "during-the-run", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sec := s.Finish(ctx, began)
	var during, before int
	for _, n := range sec.Nodes {
		for _, e := range n.Slowlog {
			args := fmt.Sprint(e.Args)
			if strings.Contains(args, "before-the-run") {
				before++
			}
			if strings.Contains(args, "during-the-run") {
				during++
				if n.Addr != m.Addr || e.AtS < 0 {
					t.Errorf("entry %+v on %s", e, n.Addr)
				}
			}
		}
	}
	if before != 0 || during != 1 {
		t.Fatalf("slowlog: %d entries from before the run, %d from during it (want 0 and 1); errors %v; nodes %+v", before, during, sec.Errors, sec.Nodes)
	}
	if sec.LatencyThresholdMs != DefaultLatencyThresholdMs {
		t.Errorf("latency monitor threshold %d on an owned cluster", sec.LatencyThresholdMs)
	}
}
