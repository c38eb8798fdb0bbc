package lifecycle

import (
	"context"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/runner"
)

// poolRun runs 32 closed-loop workers on one hot slot with the given pool.
func poolRun(t *testing.T, size int, timeout time.Duration) *Result {
	t.Helper()
	cfg := runner.DefaultConfig()
	cfg.Mode, cfg.Concurrency, cfg.Duration, cfg.Users = runner.ModeClosed, 32, 2*time.Second, 200000
	p := &Plan{Name: "pool", Cluster: ClusterSpec{Masters: 3, Replicas: 0, PoolSize: size, PoolTimeout: timeout},
		Stock: 100000, Buckets: 1, Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	oc, err := Execute(context.Background(), p, Output{})
	if err != nil {
		t.Fatal(err)
	}
	if oc.Report.Pool == nil || len(oc.Report.Pool.PerSecond) == 0 {
		t.Fatalf("size %d: no pool figures in the report: %+v", size, oc.Report.Pool)
	}
	return oc
}

// An undersized pool shows in the report: workers wait for connections,
// some give up (pool timeouts), and those calls are reported as never sent
// (ERROR CONNECT), not as unknown outcomes. A pool that fits the workers
// shows no wait at all, so the figures measure the pool, not the load.
func TestPoolExhaustionIsMeasured(t *testing.T) {
	clustertest.Need(t)
	small := poolRun(t, 2, 2*time.Millisecond)
	pr := small.Report.Pool
	if pr.Size != 2 || pr.Waits == 0 || pr.WaitMs <= 0 || pr.Timeouts == 0 {
		t.Fatalf("32 workers on 2 connections: want waits, wait time and timeouts, got %+v", *pr)
	}
	var perSecond int64
	for _, s := range pr.PerSecond {
		perSecond += s.Timeouts
	}
	if perSecond != pr.Timeouts {
		t.Fatalf("per-second timeouts sum to %d, total %d", perSecond, pr.Timeouts)
	}
	// One sampler: report.json's pool and servers.pool are the same readings.
	sp := small.Report.Servers.Pool
	if len(sp) != len(pr.PerSecond) {
		t.Fatalf("servers.pool has %d readings, pool.per_second %d: two samplers", len(sp), len(pr.PerSecond))
	}
	for i, s := range sp {
		if p := pr.PerSecond[i]; s.TS != p.T || s.WaitCount != p.Waits || s.Timeouts != p.Timeouts || s.WaitMs != p.WaitMs || int64(p.TotalConns) != s.TotalConns {
			t.Fatalf("reading %d: servers.pool %+v, pool.per_second %+v", i, s, p)
		}
	}
	if u := small.Report.Unknown.Total; u != 0 {
		t.Fatalf("pool timeouts reported as %d UNKNOWN outcomes: they were never sent", u)
	}
	if !small.Report.Passed {
		t.Fatalf("an exhausted pool broke the run: %+v", small.Report.Assertions)
	}

	fits := poolRun(t, 0, 0).Report.Pool
	if fits.Size != 32+16 || fits.Waits != 0 || fits.Timeouts != 0 {
		t.Fatalf("a pool of workers+16 should never wait: %+v", *fits)
	}
}
