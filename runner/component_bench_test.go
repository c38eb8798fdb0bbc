package runner

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/history"
	"seckill-harness/lua"
)

// Component costs of the reserve hot path, each alone (run with -benchmem:
// ns/op and allocs/op per component). The wire components talk to a real
// master of the test cluster; the others are pure client CPU.

func benchActivity(b *testing.B, buckets uint32) *lua.Activity {
	b.Helper()
	a := lua.NewActivity(fmt.Sprintf("comp%d", actSeq.Add(1)), "sku1", 1_000_000_000, buckets, time.Hour)
	if err := lua.Setup(context.Background(), testRDB, a); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = lua.Teardown(context.Background(), testRDB, a) })
	return a
}

// BenchmarkComponentWorkloadOp: choosing operation i (kind, user, request).
func BenchmarkComponentWorkloadOp(b *testing.B) {
	w := NewWorkload(1, 1_000_000, DefaultConfig().Mix, func(u uint32) uint32 { return u % 2 })
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Op(uint64(i))
	}
}

// BenchmarkComponentIDs: the user and request id strings and the bucket,
// as the engine makes them (UserBucket, UserAndRequestID).
func BenchmarkComponentIDs(b *testing.B) {
	a := lua.NewActivity("ids", "sku1", 1000, 2, time.Hour)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = history.UserBucket(a, uint32(i))
		_, _ = history.UserAndRequestID(uint32(i), uint32(i))
	}
}

// BenchmarkComponentNewReserveCall: validation, bucket, reservation and
// message ids (HMAC) of one call.
func BenchmarkComponentNewReserveCall(b *testing.B) {
	a := lua.NewActivity("call", "sku1", 1000, 2, time.Hour)
	st := lua.NewStore(testRDB, lua.Embedded(), []byte("bench"))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		uid, reqID := history.UserAndRequestID(uint32(i), uint32(i))
		if _, err := st.NewReserveCall(a, uid, reqID, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComponentKeysArgs: the eight KEYS and eleven ARGV of a call.
func BenchmarkComponentKeysArgs(b *testing.B) {
	a := lua.NewActivity("keys", "sku1", 1000, 2, time.Hour)
	st := lua.NewStore(testRDB, lua.Embedded(), []byte("bench"))
	call, _ := st.NewReserveCall(a, "u1", "r1", time.Minute)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = call.Keys()
		_ = call.Args()
	}
}

// BenchmarkComponentClock: one offset read (the engine reads three per op).
func BenchmarkComponentClock(b *testing.B) {
	e := &engine{began: time.Now()}
	var d time.Duration
	for i := 0; i < b.N; i++ {
		d += e.since()
	}
	_ = d
}

// BenchmarkComponentHistoryRecord: recording one operation (Store.put).
func BenchmarkComponentHistoryRecord(b *testing.B) {
	var s history.Store
	o := history.Op{RID: "x"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.Put(uint64(i%(4<<16)), o)
	}
}

// BenchmarkComponentEvalShaPlain: one EVALSHA of reserve.lua (the accept
// path) on a plain go-redis cluster client: the client's and the wire's
// share, without the harness's hook.
func BenchmarkComponentEvalShaPlain(b *testing.B) {
	benchEvalSha(b, redis.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), MaxRetries: -1, Protocol: 2}))
}

// BenchmarkComponentEvalShaHardened: the same through lua.NewClusterClient
// (the no-re-send hook on every node): the hook's cost is the difference.
func BenchmarkComponentEvalShaHardened(b *testing.B) {
	benchEvalSha(b, lua.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), Protocol: 2}))
}

func benchEvalSha(b *testing.B, rdb *redis.ClusterClient) {
	defer rdb.Close()
	ctx := context.Background()
	a := benchActivity(b, 1)
	st := lua.NewStore(rdb, lua.Embedded(), []byte("bench"))
	if _, err := lua.DialConns(ctx, rdb, nil, 1); err != nil {
		b.Fatal(err)
	}
	sha := lua.Embedded().Reserve.SHA1
	calls := make([]lua.ReserveCall, b.N)
	for i := range calls {
		calls[i], _ = st.NewReserveCall(a, history.UserID(uint32(i)), history.RequestID(uint32(i)), time.Minute)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := rdb.EvalSha(ctx, sha, calls[i].Keys(), calls[i].Args()...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "proc-cpu-µs/op")
}

// BenchmarkComponentStoreReserve: lua.Store.Reserve (write probe, watchdog,
// wire stats, reply decoding) on the hardened client.
func BenchmarkComponentStoreReserve(b *testing.B) {
	ctx := context.Background()
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), Protocol: 2})
	defer rdb.Close()
	a := benchActivity(b, 1)
	st := lua.NewStore(rdb, lua.Embedded(), []byte("bench"))
	if _, err := lua.DialConns(ctx, rdb, nil, 1); err != nil {
		b.Fatal(err)
	}
	calls := make([]lua.ReserveCall, b.N)
	for i := range calls {
		calls[i], _ = st.NewReserveCall(a, history.UserID(uint32(i)), history.RequestID(uint32(i)), time.Minute)
	}
	wctx := lua.WithWireStats(ctx, &lua.WireStats{})
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := st.Reserve(wctx, calls[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "proc-cpu-µs/op")
}

// BenchmarkComponentEngineOp: one whole operation as a worker runs it
// (workload, ids, call, send, decode, clock reads, history record).
func BenchmarkComponentEngineOp(b *testing.B) { benchEngineOp(b, false) }

// BenchmarkComponentEngineOpWatched: the same with the script watchdog the
// lifecycle installs (a run's real configuration).
func BenchmarkComponentEngineOpWatched(b *testing.B) { benchEngineOp(b, true) }

func benchEngineOp(b *testing.B, watched bool) {
	ctx := context.Background()
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), Protocol: 2})
	defer rdb.Close()
	a := benchActivity(b, 1)
	if _, err := lua.DialConns(ctx, rdb, nil, 1); err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Mix, cfg.Users = Mix{}, max(b.N, 1)
	tgt := Target{Store: lua.NewStore(rdb, lua.Embedded(), []byte("bench")), Activity: a}
	if watched {
		tgt.Store.SetWatchdog(lua.NewWatchdog(testCluster, 0))
	}
	e := &engine{sale: tgt.Sale(), sys: tgt.System(), cfg: cfg, began: time.Now(), ctx: ctx,
		wl: NewWorkload(1, cfg.Users, cfg.Mix, func(u uint32) uint32 { return a.BucketOf(history.UserID(u)) })}
	wctx, release := withCallCtx(lua.WithWireStats(ctx, &lua.WireStats{})) // as a worker's
	defer release()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		e.store.Put(uint64(i), e.execute(wctx, uint32(i), e.since()))
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "proc-cpu-µs/op")
}

// BenchmarkClosedLoopClientCost: the whole engine, closed loop, 32
// workers, the accept path on one master: the process's CPU time
// (getrusage: user+system, the Redis servers are other processes) and
// heap allocations (runtime.MemStats.Mallocs) per operation. On a shared
// machine these hold where throughput ratios do not.
func BenchmarkClosedLoopClientCost(b *testing.B) {
	const n = 30_000
	ctx := context.Background()
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), PoolSize: benchConns, ContextTimeoutEnabled: true, Protocol: 2})
	defer rdb.Close()
	a := benchActivity(b, 1)
	if _, err := lua.DialConns(ctx, rdb, nil, benchConns); err != nil {
		b.Fatal(err)
	}
	st := lua.NewStore(rdb, lua.Embedded(), []byte("bench"))
	st.SetWatchdog(lua.NewWatchdog(testCluster, 0)) // as the lifecycle runs it
	cfg := DefaultConfig()
	cfg.Mode, cfg.Concurrency, cfg.MaxOps, cfg.Duration = ModeClosed, benchConns, n, time.Minute
	cfg.Users, cfg.Mix, cfg.SampleEvery = n, Mix{}, 0
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	res, err := Run(ctx, cfg, Target{Store: st, Activity: a}.Sale(), Target{Store: st, Activity: a}.System())
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	if err != nil {
		b.Fatal(err)
	}
	ops := float64(len(res.History.Ops))
	perOp := float64(cpu.Nanoseconds()) / 1e3 / ops
	allocs := float64(m1.Mallocs-m0.Mallocs) / ops
	bytes := float64(m1.TotalAlloc-m0.TotalAlloc) / ops
	b.ReportMetric(perOp, "client-cpu-µs/op")
	b.ReportMetric(allocs, "allocs/op")
	b.ReportMetric(bytes, "B/op")
	fmt.Printf("closed loop, %d workers, %0.f ops: client CPU %.1f µs/op, %.1f allocs/op, %.0f B/op, %.0f ops/s\n",
		benchConns, ops, perOp, allocs, bytes, ops/res.Elapsed.Seconds())
}

// BenchmarkComponentEvalShaNoRouting: the hardened client as the stand
// makes it (ContextTimeoutEnabled; lua.NewClusterClient turns go-redis's
// request/response routing policies off).
func BenchmarkComponentEvalShaNoRouting(b *testing.B) {
	benchEvalSha(b, lua.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), Protocol: 2, ContextTimeoutEnabled: true}))
}

// BenchmarkComponentEvalShaTimeouts: the same with go-redis's routing
// policies on (its default, and the stand's before lua.NewClusterClient
// turned them off): the policies' share of a keyed EVALSHA (a command-info
// lookup that, with ContextTimeoutEnabled, builds a 5 s context twice per
// call) is the difference with BenchmarkComponentEvalShaNoRouting.
func BenchmarkComponentEvalShaTimeouts(b *testing.B) {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), Protocol: 2, ContextTimeoutEnabled: true, MaxRetries: -1})
	if err := lua.Harden(rdb); err != nil {
		b.Fatal(err)
	}
	benchEvalSha(b, rdb)
}
