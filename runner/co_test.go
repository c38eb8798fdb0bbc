package runner

import (
	"context"
	"seckill-harness/internal/clustertest"
	"testing"
	"time"
)

// Coordinated omission, measured for real: a constant 1,000 req/s for 10 s
// while the hot master is SIGSTOPped for 1 s in the middle. Operations due
// during the pause wait for it, and their latency (from the intended send)
// must show it — p99 ≥ 800 ms — while service time (from the actual send,
// which a stuck worker delays) stays far lower. A closed-loop or
// send-time-based tool would report the pause as a handful of slow calls.
func TestCoordinatedOmissionIsMeasured(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 1_000_000, 1)
	ctx := context.Background()
	slot, err := testRDB.ClusterKeySlot(ctx, tgt.Activity.Scope(0).StockKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	master, err := testCluster.MasterOfSlot(ctx, int(slot))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Shape = Shape{Kind: "constant", Rate: 1000}
	cfg.Duration = 10 * time.Second
	cfg.Concurrency = 16
	cfg.Users = 20000
	cfg.Mix = Mix{}
	cfg.SampleEvery = 0

	paused := make(chan time.Duration, 1)
	began := time.Now()
	go func() {
		time.Sleep(4500 * time.Millisecond)
		at := time.Since(began)
		if err := testCluster.Pause(master.Addr); err != nil {
			t.Error(err)
		}
		time.Sleep(time.Second)
		if err := testCluster.Resume(master.Addr); err != nil {
			t.Error(err)
		}
		paused <- at
	}()
	res, err := Run(ctx, cfg, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	at := <-paused
	_, rec := buildReportChecked(res, nil, ReportMeta{})
	lat99 := float64(rec.Latency().ValueAtQuantile(99)) / 1000
	svc99 := float64(rec.Service().ValueAtQuantile(99)) / 1000
	latMax := float64(rec.Latency().Max()) / 1000
	t.Logf("pause at %.2fs for 1s: %d ops, latency p99 %.1f ms (max %.1f ms), service-time p99 %.1f ms, late starts %d",
		at.Seconds(), len(res.History.Ops), lat99, latMax, svc99, res.Observed.LateStarts)
	if lat99 < 800 {
		t.Fatalf("latency p99 %.1f ms < 800 ms: the pause was omitted", lat99)
	}
	if svc99 > lat99/4 {
		t.Fatalf("service-time p99 %.1f ms is not far below latency p99 %.1f ms", svc99, lat99)
	}
	for i := range res.History.Ops {
		if o := &res.History.Ops[i]; o.Outcome < 0 {
			t.Fatalf("op %d ended %s during a 1 s pause", o.ID, o.OutcomeName())
		}
	}
}
