package lifecycle

import (
	"context"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/runner"
)

// Every run states its warm-up in report.json: each master had the
// workers' connections open in the load's pool and the three scripts
// cached before t=0, the cluster (3 masters, 1 replica each) settled, the
// workers started, and what the warm-up excludes said; no operation of
// the load met NOSCRIPT.
func TestRunReportsItsWarmUp(t *testing.T) {
	clustertest.Need(t)
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 200, time.Second, 2000, 8
	p := &Plan{Name: "warm", Cluster: ClusterSpec{Masters: 3, Replicas: 1}, Stock: 100, Buckets: 3,
		Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	oc, err := Execute(context.Background(), p, Output{})
	if err != nil {
		t.Fatal(err)
	}
	w := oc.Report.WarmUp
	if w == nil {
		t.Fatal("report has no warm_up")
	}
	if !w.Settled || len(w.Problems) != 0 || !w.WorkersBeforeT0 || w.Excluded == "" || w.DurationS <= 0 || w.ConnsPerMaster != cfg.Concurrency {
		t.Fatalf("warm_up %+v", w)
	}
	if len(w.Masters) != 3 {
		t.Fatalf("warm_up covers %d masters, want 3: %+v", len(w.Masters), w.Masters)
	}
	for _, m := range w.Masters {
		if m.Conns < cfg.Concurrency || m.Scripts != 3 {
			t.Errorf("master %s: %d connections, %d scripts before t=0; want >= %d and 3", m.Addr, m.Conns, m.Scripts, cfg.Concurrency)
		}
	}
	for _, o := range oc.Result.History.All() {
		if o.Flags&history.FlagEvalFallback != 0 {
			t.Fatalf("op %d met NOSCRIPT after the warm-up", o.ID)
		}
	}
}
