package runner

import (
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"seckill-harness/history"
	"seckill-harness/internal/benchkit"
	"seckill-harness/lua"
)

const benchConns = 32

// redisBenchmarkReserve runs redis-benchmark against one master with the
// same reserve.lua (EVALSHA, random user, request and reservation ids, the
// accept path) and returns its requests per second and its own CPU time
// (user+system, from the process's rusage) per request.
func redisBenchmarkReserve(b *testing.B, addr, sha string, a *lua.Activity, n int) (rps, cpuPerOp float64) {
	b.Helper()
	host, port, _ := strings.Cut(addr, ":")
	sc := a.Scope(0)
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(benchConns), "-n", strconv.Itoa(n),
		"-r", "1000000000", "--csv",
		"EVALSHA", sha, "8",
		sc.MetaKey(), sc.StockKey(), sc.ReqShardKeyN(0), sc.UserKey("u__rand_int__"), sc.ResvKey("x__rand_int__"),
		sc.SendPendingKey(), sc.ExpiryKey(), sc.SoldoutKey(),
		"r__rand_int__", "x__rand_int__", a.ID, a.SKU, "u__rand_int__", "1", "900000", "1", "0",
		"reserve-order:x__rand_int__:v1", "0"}
	cmd := exec.Command("redis-benchmark", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	cpuPerOp = float64(cpu.Nanoseconds()) / 1e3 / float64(n)
	// --csv: a header line, then "test","rps",...
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, ",")
		if len(f) >= 2 && strings.HasPrefix(f[0], `"EVALSHA`) {
			rps, err := strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
			if err == nil {
				return rps, cpuPerOp
			}
		}
	}
	b.Fatalf("no rate in redis-benchmark output:\n%s", out)
	return 0, 0
}

func cpuTime() time.Duration { return benchkit.CPUTime() }

// scrubRound removes every key of a round's activity from its master (addr):
// lua.Teardown, then a SCAN of the activity's keys on that node (the test's
// own throwaway cluster). Teardown alone is not enough here: redis-benchmark
// gives every __rand_int__ of a command its own number, so the records its
// calls write (KEYS[4], KEYS[5]) are not the ones their answers name (ARGV)
// and Teardown, which follows the answers, cannot find them. Left behind they
// were 1.2 M keys (240 MB on each of two masters, 2 h TTL) after the six
// rounds, and the open-loop headroom measured after them fell from 3,875 to
// 438-875 ops/s.
func scrubRound(b *testing.B, addr string, a *lua.Activity) {
	ctx := context.Background()
	if _, err := lua.Teardown(ctx, testRDB, a); err != nil {
		b.Errorf("teardown %s: %v", a.ID, err)
	}
	admin, err := testCluster.Admin(addr)
	if err != nil {
		b.Errorf("scrub %s: %v", a.ID, err)
		return
	}
	iter := admin.Scan(ctx, 0, "seckill:{a:"+a.ID+":s:*", 1000).Iterator()
	batch := make([]string, 0, 1000)
	flush := func() {
		if len(batch) > 0 {
			if err := admin.Unlink(ctx, batch...).Err(); err != nil {
				b.Errorf("scrub %s: unlink: %v", a.ID, err)
			}
			batch = batch[:0]
		}
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	if err := iter.Err(); err != nil {
		b.Errorf("scrub %s: scan: %v", a.ID, err)
	}
}

// BenchmarkOpenLoopHeadroom: the highest open-loop rate the harness paces
// on this machine with at most 1% of operations starting more than 1 ms
// after their intended time (dropped ones count as late), found by a short
// search: the rate doubles from 1,000 ops/s until a 3-second run misses,
// then 4 bisection steps between the last rate met and the first missed.
// The accept path on the test cluster (stock far above the demand). It is
// the first benchmark of the file, so it runs first (go test runs them in
// source order), on the fresh cluster: after ReserveVsRedisBenchmark's
// rounds it measured 2,375 ops/s where it measured 3,875 alone. Then the
// same search on the pinned stand (the split printed).
//
// Before each search, on the same stand and settings, a 3-second closed
// loop (the yardstick) and a 3-second run paced at 4,000 ops/s: the pacer's
// cost is stated against the closed loop's as two ratios, the client CPU
// per operation paced at 4,000/s over the closed loop's (target <= 1.5)
// and the headroom over the closed loop's throughput (target >= 0.6 on
// the pinned stand), each stand's figures printed beside the other's.
func BenchmarkOpenLoopHeadroom(b *testing.B) {
	const trial = 3 * time.Second
	const pacedAt = 4000
	ctx := context.Background()
	type result struct {
		rate, late, cpuPerOp, opsPerSec float64
		ops                             int64
	}
	clock := ""
	run := func(mode Mode, rate float64) result {
		a := lua.NewActivity(fmt.Sprintf("headroom%d", actSeq.Add(1)), "sku1", 1_000_000_000, 3, time.Hour)
		if err := lua.Setup(ctx, testRDB, a); err != nil {
			b.Fatal(err)
		}
		defer lua.Teardown(ctx, testRDB, a)
		cfg := DefaultConfig()
		cfg.Mode, cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.SampleEvery, cfg.Mix = mode, rate, trial, 1_000_000, 0, Mix{}
		cpu0 := cpuTime()
		res, err := Run(ctx, cfg, Target{Store: testStore, Activity: a}.Sale(), Target{Store: testStore, Activity: a}.System())
		cpu := cpuTime() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		if mode == ModeOpen {
			clock = res.Observed.PacerClock
		}
		perOp := float64(cpu.Nanoseconds()) / 1e3 / float64(max(res.Observed.Scheduled, 1))
		return result{rate, res.Observed.LateShare(), perOp, float64(res.History.Len()) / res.Elapsed.Seconds(), res.Observed.Scheduled}
	}
	var trials []result
	try := func(rate float64) bool {
		t := run(ModeOpen, rate)
		trials = append(trials, t)
		return t.late <= benchkit.MaxLate
	}
	type standCost struct {
		headroom, closedOps, cpuRatio, rateRatio float64
		line                                     string
	}
	search := func(stand string) standCost {
		closed := run(ModeClosed, 0)
		paced := run(ModeOpen, pacedAt)
		trials = trials[:0]
		met := benchkit.Headroom(1000, 128_000, 4, try)
		var log []string
		for _, t := range trials {
			log = append(log, fmt.Sprintf("%.0f/s: %.1f%% late, %.0f µs/op", t.rate, 100*t.late, t.cpuPerOp))
		}
		fmt.Printf("open-loop headroom, %s (GOMAXPROCS %d, load %s): %.0f ops/s paced with <= 1%% of starts more than 1 ms late (0 = not even 1,000/s); pacer clock %s; trials of %s (late share, client CPU per op): %s\n",
			stand, runtime.GOMAXPROCS(0), loadAvg(), met, clock, trial, strings.Join(log, ", "))
		c := standCost{headroom: met, closedOps: closed.opsPerSec, cpuRatio: paced.cpuPerOp / closed.cpuPerOp, rateRatio: met / closed.opsPerSec}
		c.line = fmt.Sprintf("paced at %d/s %.1f µs/op (%.1f%% of starts late) / closed loop %.1f µs/op = %.2f; headroom %.0f / closed-loop throughput %.0f ops/s = %.2f",
			pacedAt, paced.cpuPerOp, 100*paced.late, closed.cpuPerOp, c.cpuRatio, met, closed.opsPerSec, c.rateRatio)
		fmt.Printf("pacer against the closed loop, %s (same settings, %s each, load %s): %s\n", stand, trial, loadAvg(), c.line)
		return c
	}
	def := search("default settings, unpinned")
	b.ReportMetric(def.headroom, "headroom-ops/s")
	b.ReportMetric(def.cpuRatio, "paced/closed-cpu")
	b.ReportMetric(def.rateRatio, "headroom/closed-ops")
	// The same search on the fair stand (see standPin): whether the
	// generator's late starts come from sharing its cores with the servers.
	onPinnedStand(ctx, b, "open-loop headroom", func(split string) {
		pin := search("pinned: " + split)
		b.ReportMetric(pin.headroom, "pinned-headroom-ops/s")
		b.ReportMetric(pin.cpuRatio, "pinned-paced/closed-cpu")
		b.ReportMetric(pin.rateRatio, "pinned-headroom/closed-ops")
		fmt.Printf("pacer cost against the closed loop, this run: CPU per operation paced at %d/s over the closed loop's %.2f unpinned, %.2f pinned (target <= 1.5); open-loop headroom over the closed loop's throughput on the same stand %.2f pinned (target >= 0.6; %.0f / %.0f ops/s), %.2f with the default settings (%s)\n",
			pacedAt, def.cpuRatio, pin.cpuRatio, pin.rateRatio, pin.headroom, pin.closedOps, def.rateRatio, def.line)
	})
}

// BenchmarkReserveVsRedisBenchmark: against one master, closed loop, the same
// connection count: the harness's reserve throughput over redis-benchmark
// running the same script, the harness's client CPU per operation over
// redis-benchmark's own per request, and its history bytes per operation
// (target <= 200). Three paired rounds unpinned, then three on the fair
// stand (standPin: the redis-servers on one CPU, the generator on the
// others; the split printed): targets pinned ratio >= 0.95, CPU ratio <= 2.
func BenchmarkReserveVsRedisBenchmark(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), PoolSize: benchConns, ContextTimeoutEnabled: true, Protocol: 2})
	defer rdb.Close()
	// Each round gets a fresh activity in the same slot (same hash tag
	// shape, so the same master), so neither tool replays the other's requests.
	newRound := func(r int) (*lua.Activity, string, string) {
		a := lua.NewActivity(fmt.Sprintf("bench%d", actSeq.Add(1)), "sku1", 1_000_000_000, 1, time.Hour)
		if err := lua.Setup(ctx, testRDB, a); err != nil {
			b.Fatal(err)
		}
		slot, _ := testRDB.ClusterKeySlot(ctx, a.Scope(0).StockKey()).Result()
		master, err := testCluster.MasterOfSlot(ctx, int(slot))
		if err != nil {
			b.Fatal(err)
		}
		admin, err := testCluster.Admin(master.Addr)
		if err != nil {
			b.Fatal(err)
		}
		sha, err := admin.ScriptLoad(ctx, lua.Embedded().Reserve.Source).Result()
		if err != nil {
			b.Fatal(err)
		}
		return a, master.Addr, sha
	}

	// Rounds pair the two tools back to back (alternating which goes
	// first, so a drift of the machine favours neither), and the round
	// with the median ratio is reported: on a shared machine a best-of
	// each would pair figures taken at different moments. The machine's
	// load is read at the start of each pair.
	type round struct {
		rbRPS, rbCPU, hRPS, hCPU, histBytes float64
		load                                string
	}
	pairs := func() []round {
		var rounds []round
		for r := 0; r < 3; r++ {
			rd := round{load: loadAvg()}
			a, addr, sha := newRound(r)
			defer scrubRound(b, addr, a)
			tgt := Target{Store: lua.NewStore(rdb, lua.Embedded(), []byte("bench")), Activity: a}
			harness := func() {
				cfg := DefaultConfig()
				cfg.Mode, cfg.Concurrency, cfg.MaxOps, cfg.Duration = ModeClosed, benchConns, n, time.Minute
				cfg.Users, cfg.Mix, cfg.Seed = n, Mix{}, int64(r+1)
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				cpu0 := cpuTime()
				res, err := Run(ctx, cfg, tgt.Sale(), tgt.System())
				cpu := cpuTime() - cpu0
				if err != nil {
					b.Fatal(err)
				}
				ops := len(res.History.Ops)
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(res)
				rd.hRPS = float64(ops) / res.Elapsed.Seconds()
				rd.hCPU = float64(cpu.Microseconds()) / float64(ops)
				rd.histBytes = float64(after.HeapAlloc-before.HeapAlloc) / float64(ops)
				for i := range res.History.Ops {
					if o := res.History.Ops[i]; o.Outcome != history.Outcome(lua.Accepted) {
						b.Fatalf("op %d: %s (the benchmark measures the accept path)", o.ID, o.OutcomeName())
					}
				}
			}
			if r%2 == 1 {
				harness()
			}
			rd.rbRPS, rd.rbCPU = redisBenchmarkReserve(b, addr, sha, a, n)
			if r%2 == 0 {
				harness()
			}
			rounds = append(rounds, rd)
		}
		return rounds
	}
	median := func(stand string, rounds []round) round {
		var log []string
		for i, rd := range rounds {
			log = append(log, fmt.Sprintf("round %d (load %s): %.0f / %.0f ops/s = %.3f, CPU %.1f / %.1f µs/op = %.2f",
				i+1, rd.load, rd.hRPS, rd.rbRPS, rd.hRPS/rd.rbRPS, rd.hCPU, rd.rbCPU, rd.hCPU/rd.rbCPU))
		}
		slices.SortFunc(rounds, func(x, y round) int { return cmp.Compare(x.hRPS/x.rbRPS, y.hRPS/y.rbRPS) })
		med := rounds[len(rounds)/2]
		fmt.Printf("reserve, accept path, one master, %d connections, %s (median of %d paired rounds): redis-benchmark %.0f ops/s, harness %.0f ops/s, ratio %.3f; client CPU %.1f µs/op, redis-benchmark's own %.1f µs/op, ratio %.2f; history %.0f B/op (target <= 200)\n  harness / redis-benchmark: %s\n",
			benchConns, stand, len(rounds), med.rbRPS, med.hRPS, med.hRPS/med.rbRPS, med.hCPU, med.rbCPU, med.hCPU/med.rbCPU, med.histBytes, strings.Join(log, "; "))
		return med
	}

	med := median("unpinned", pairs())
	b.ReportMetric(med.rbRPS, "redis-benchmark-ops/s")
	b.ReportMetric(med.hRPS, "harness-ops/s")
	b.ReportMetric(med.hRPS/med.rbRPS, "ratio")
	b.ReportMetric(med.hCPU, "client-cpu-µs/op")
	b.ReportMetric(med.histBytes, "history-B/op")
	b.ReportMetric(med.rbCPU, "redis-benchmark-cpu-µs/op")
	b.ReportMetric(med.hCPU/med.rbCPU, "cpu-ratio")

	onPinnedStand(ctx, b, "reserve against redis-benchmark", func(split string) {
		pm := median("pinned: "+split, pairs())
		b.ReportMetric(pm.hRPS/pm.rbRPS, "pinned-ratio")
		b.ReportMetric(pm.hCPU/pm.rbCPU, "pinned-cpu-ratio")
		fmt.Printf("client cost against redis-benchmark, %s: pinned throughput ratio %.3f (target >= 0.95; unpinned %.3f), client CPU per reserve %.2f× redis-benchmark's per request (target <= 2.0; unpinned %.2f×); allocs/op: see ClosedLoopClientCost (target <= 12)\n",
			split, pm.hRPS/pm.rbRPS, med.hRPS/med.rbRPS, pm.hCPU/pm.rbCPU, med.hCPU/med.rbCPU)
	})
}

// BenchmarkMillionOps: a 1,000,000-operation closed-loop run (sold-out path,
// the flash sale's common case) with its whole history kept; reports the
// process's peak RSS (target < 300 MB) and the history's bytes per op.
func BenchmarkMillionOps(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	a := lua.NewActivity(fmt.Sprintf("million%d", actSeq.Add(1)), "sku1", 1000, 1, time.Hour)
	if err := lua.Setup(ctx, testRDB, a); err != nil {
		b.Fatal(err)
	}
	defer lua.Teardown(ctx, testRDB, a)
	cfg := DefaultConfig()
	cfg.Mode, cfg.Concurrency, cfg.MaxOps, cfg.Duration = ModeClosed, benchConns, n, 10*time.Minute
	cfg.Users = n
	t0 := time.Now()
	res, err := Run(ctx, cfg, Target{Store: testStore, Activity: a}.Sale(), Target{Store: testStore, Activity: a}.System())
	if err != nil {
		b.Fatal(err)
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	rssMB := float64(ru.Maxrss) / 1024
	ops := len(res.History.Ops)
	var rid int
	for i := range res.History.Ops {
		rid += len(res.History.Ops[i].RID)
	}
	per := float64(unsafe.Sizeof(history.Op{})) + float64(rid)/float64(ops)
	b.ReportMetric(rssMB, "peak-RSS-MB")
	b.ReportMetric(per, "history-B/op")
	fmt.Printf("%d ops in %.1fs (%.0f ops/s): peak RSS %.0f MB (target < 300), history %.0f B/op\n",
		ops, time.Since(t0).Seconds(), float64(ops)/res.Elapsed.Seconds(), rssMB, per)
	if ops != n {
		b.Fatalf("%d ops, want %d", ops, n)
	}
}

// BenchmarkOverload10M: an open loop asked for 10,000,000 ops/s for 5 s
// (far beyond what the harness can send: nearly every operation is
// dropped). Reports the peak RSS, the heap the result keeps, and the bytes
// kept per dropped operation (goal: ~0, drops are counted, not kept).
func BenchmarkOverload10M(b *testing.B) {
	ctx := context.Background()
	a := lua.NewActivity(fmt.Sprintf("overload%d", actSeq.Add(1)), "sku1", 1000, 1, time.Hour)
	if err := lua.Setup(ctx, testRDB, a); err != nil {
		b.Fatal(err)
	}
	defer lua.Teardown(ctx, testRDB, a)
	cfg := DefaultConfig()
	cfg.Shape = Shape{Kind: "constant", Rate: 10_000_000}
	cfg.Duration, cfg.SampleEvery = 5*time.Second, 0
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := Run(ctx, cfg, Target{Store: testStore, Activity: a}.Sale(), Target{Store: testStore, Activity: a}.System())
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	rssMB := float64(ru.Maxrss) / 1024
	kept := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	var sent float64
	for i := range res.History.Ops {
		if o := &res.History.Ops[i]; o.Outcome != history.OutcomeDropped {
			sent += float64(unsafe.Sizeof(history.Op{})) + float64(len(o.RID))
		}
	}
	perDrop := (kept - sent) / float64(max(res.Observed.Dropped, 1))
	runtime.KeepAlive(res)
	b.ReportMetric(rssMB, "peak-RSS-MB")
	b.ReportMetric(kept/1e6, "heap-kept-MB")
	b.ReportMetric(perDrop, "B/dropped-op")
	fmt.Printf("10,000,000 ops/s for 5 s: %d scheduled, %d dropped, %d sent; peak RSS %.0f MB, heap kept %.1f MB, %.1f B per dropped op (goal ~0)\n",
		res.Observed.Scheduled, res.Observed.Dropped, res.Observed.Scheduled-res.Observed.Dropped, rssMB, kept/1e6, perDrop)
}
