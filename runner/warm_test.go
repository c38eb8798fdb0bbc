package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// A warm start, checked at the run's offset 0 (WithOnStart runs before the
// first operation is scheduled, so before its intended time): every
// master has the workers' connections open in the load's pool and every
// script cached (lua.CheckWarm: PoolStats.TotalConns, SCRIPT EXISTS), the
// workers are already running, and the load then neither dials (no pool
// miss) nor meets NOSCRIPT. A cold client fails the same check: it is
// what catches a run without the warm-up.
func TestWarmStartIsReadyBeforeTheFirstOperation(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	dir := t.TempDir()
	tag := fmt.Sprintf("\n-- %s %d\n", t.Name(), time.Now().UnixNano())
	for _, f := range []struct {
		name string
		src  *lua.Script
	}{{lua.ReserveFile, lua.Embedded().Reserve}, {lua.TransitionFile, lua.Embedded().Transition}, {lua.CompensateFile, lua.Embedded().Compensate}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.src.Source+tag), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scripts, err := lua.LoadDir(dir) // new SHA1s: cached nowhere yet
	if err != nil {
		t.Fatal(err)
	}
	const workers = 16
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), PoolSize: workers + 4, ContextTimeoutEnabled: true})
	defer rdb.Close()
	if err := lua.CheckWarm(ctx, rdb, scripts, workers); err == nil {
		t.Fatal("a cold client passed CheckWarm")
	}

	if _, err := lua.DialConns(ctx, rdb, scripts, workers); err != nil {
		t.Fatal(err)
	}
	misses := masterPoolMisses(t, rdb)
	tgt := newTarget(t, 1_000_000, 3)
	tgt.Store = lua.NewStore(rdb, scripts, []byte("warm"))
	cfg := DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Concurrency, cfg.SampleEvery = 400, time.Second, workers, 0
	var atStart error
	var workersAtStart int
	var commandsAtStart int64
	res, err := Run(ctx, cfg, tgt.Sale(), tgt.System(), WithOnStart(func(time.Time) {
		workersAtStart = workerGoroutines()
		atStart = lua.CheckWarm(ctx, rdb, scripts, workers)
		commandsAtStart = commandCalls(t)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if atStart != nil {
		t.Fatalf("at offset 0: %v", atStart)
	}
	// go-redis fetches the command table (COMMAND, a large reply every
	// worker's first call waits for) on the cluster client's first
	// command: the warm-up sent it, the load does not.
	if n := commandCalls(t); n != commandsAtStart {
		t.Fatalf("the load sent COMMAND %d time(s): the client's command table was not loaded before t=0", n-commandsAtStart)
	}
	if workersAtStart < workers {
		t.Fatalf("at offset 0: %d worker goroutines, want the %d workers running", workersAtStart, workers)
	}
	// A connection to a master is dialled during the load only to replace one that an
	// operation lost (a timed-out or cut call closes its connection).
	lost := uint32(0)
	for _, o := range res.History.Ops {
		if o.Outcome == history.OutcomeUnknown || o.Outcome == history.OutcomeError {
			lost += uint32(o.Sends)
		}
	}
	if m := masterPoolMisses(t, rdb); m-misses > lost {
		t.Errorf("the load dialled %d connections (pool misses %d -> %d) with %d sends failed", m-misses, misses, m, lost)
	}
	if len(res.History.Ops) < 100 {
		t.Fatalf("only %d ops", len(res.History.Ops))
	}
	for _, o := range res.History.Ops {
		if o.Flags&history.FlagEvalFallback != 0 {
			t.Fatalf("op %d met NOSCRIPT: the scripts were not loaded before t=0", o.ID)
		}
	}
}

// workerGoroutines counts the goroutines running the engine's worker loop
// (by their stacks: a count of all goroutines moves with whatever else the
// process starts or ends meanwhile).
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	k := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "runner.(*engine).startWorkers.func") {
			k++
		}
	}
	return k
}

// masterPoolMisses sums the pool misses (connections dialled because none
// was idle) of rdb's master clients: the connections the load uses. Slot
// map reloads may dial a replica; those are not the load's.
func masterPoolMisses(t *testing.T, rdb *redis.ClusterClient) uint32 {
	t.Helper()
	var mu sync.Mutex
	var n uint32
	err := rdb.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		n += c.PoolStats().Misses
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// commandCalls sums the COMMAND calls (INFO commandstats, cmdstat_command)
// every node of the test cluster has served.
func commandCalls(t *testing.T) int64 {
	t.Helper()
	var n int64
	for _, addr := range testCluster.Addrs() {
		adm, err := testCluster.Admin(addr)
		if err != nil {
			t.Fatal(err)
		}
		info, err := adm.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_command:calls="); ok {
				v, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				n += v
			}
		}
	}
	return n
}
