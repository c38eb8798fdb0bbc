package lifecycle

import (
	"context"
	"testing"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

func localSoldOutPlan(t *testing.T, flag sut.LocalSoldOutConfig, faultSpecs ...string) *Plan {
	t.Helper()
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users = 600, 6*time.Second, 20000
	cfg.Mix.Release = 0.05
	p := &Plan{Name: "local-soldout", Cluster: ClusterSpec{Masters: 3, Replicas: 0}, Stock: 60, Buckets: 1,
		Phases: []runner.Phase{{Name: "load", Config: cfg}}, LocalSoldOut: flag}
	if err := p.AddFaults(faultSpecs); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkOf(rep *reports.Report, id string) reports.Invariant {
	for _, inv := range rep.Invariants {
		if inv.ID == id {
			return inv
		}
	}
	return reports.Invariant{}
}

// On the real cluster: the local flag answers requests without Redis, its
// notices travel over Pub/Sub (and soldout-notice-lost really drops them),
// and every unit released after the sell-out is sold again within the TTL
// (L1 passes); the same load with a flag that never expires leaves the
// released units unsold, and L1 fails.
func TestLocalSoldOutFlagOnARealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("real cluster")
	}
	ctx := context.Background()
	good := localSoldOutPlan(t, sut.LocalSoldOutConfig{TTL: 500 * time.Millisecond}, "soldout-notice-lost:at=2s,for=2s")
	oc, err := Execute(ctx, good, Output{})
	if err != nil {
		t.Fatal(err)
	}
	l1 := checkOf(oc.Report, "L1")
	ls := oc.Report.LocalSoldOut
	if l1.Status != reports.StatusPass || ls == nil {
		t.Fatalf("expiring flag: L1 %+v, local_soldout %+v, failed %v", l1, ls, oc.Report.FailedChecks())
	}
	if ls.AnsweredLocally == 0 || ls.NoticesPublished == 0 || ls.NoticesReceived == 0 || ls.NoticesDropped == 0 || ls.Recovered == 0 ||
		oc.Report.Totals.Outcomes[sut.LocalSoldOutName] != ls.AnsweredLocally {
		t.Fatalf("figures: %+v, outcomes %v", ls, oc.Report.Totals.Outcomes)
	}
	if dropped, _ := oc.Report.Faults[0].Evidence["notices_dropped"].(int64); dropped == 0 {
		t.Fatalf("soldout-notice-lost dropped nothing: %v", oc.Report.Faults[0].Evidence)
	}
	if !oc.Report.Passed {
		t.Fatalf("failed: %v", oc.Report.FailedChecks())
	}
	t.Logf("expiring flag: %d answered locally, %d releases recovered (window max %.0f ms), %d notices dropped",
		ls.AnsweredLocally, ls.Recovered, ls.FalseSoldOutWindowMs.Max, ls.NoticesDropped)

	broken := localSoldOutPlan(t, sut.LocalSoldOutConfig{TTL: 500 * time.Millisecond, NeverExpires: true})
	oc, err = Execute(ctx, broken, Output{})
	if err != nil {
		t.Fatal(err)
	}
	l1 = checkOf(oc.Report, "L1")
	if l1.Status != reports.StatusFail || oc.Report.Passed {
		t.Fatalf("never-expiring flag: L1 %+v, passed %v", l1, oc.Report.Passed)
	}
	t.Logf("never-expiring flag: %s", l1.Detail)
}
