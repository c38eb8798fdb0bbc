package lifecycle

import (
	"strings"
	"testing"
	"time"

	"seckill-harness/checks"
	"seckill-harness/reports"
	"seckill-harness/runner"
)

// K2 through the whole run: with the hot master's memory full and an
// evicting policy (allkeys-lru), the master drops keys and K2 fails naming
// it and its count — also when what it evicted was the stock hash, so the
// activity's state cannot be read back (the run then reports that, and
// K2 says why); with the oom fault as the built-in uses it (noeviction),
// the same load evicts nothing and K2 passes, judged on every node.
func TestK2FailsWhenAMasterEvicts(t *testing.T) {
	ctx, st := oneMasterStand(t, 32, 3*time.Minute)
	run := func(fault string) reports.Invariant {
		cfg := runner.DefaultConfig()
		cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 600, 3*time.Second, 100_000, 16
		p := &Plan{Name: "evictions", Stand: st, Stock: 50_000, Buckets: 1, Phases: []runner.Phase{{Name: "load", Config: cfg}}}
		if err := p.AddFaults([]string{fault}); err != nil {
			t.Fatal(err)
		}
		oc, err := Execute(ctx, p, Output{})
		if oc == nil {
			t.Fatal(err)
		}
		if err != nil {
			t.Logf("%s: %v (the partial report is judged)", fault, err)
		}
		if len(oc.NotInjected) > 0 || oc.HealErr != nil {
			t.Fatalf("%s: not injected %v, heal %v", fault, oc.NotInjected, oc.HealErr)
		}
		for _, inv := range oc.Report.Invariants {
			if inv.ID == "K2" {
				t.Logf("%s: K2 %s: %s (fault evidence %v)", fault, inv.Status, inv.Detail, oc.Report.Faults[0].Evidence["evicted_keys"])
				return inv
			}
		}
		t.Fatalf("%s: no K2 in the report: %+v", fault, oc.Report.Invariants)
		return reports.Invariant{}
	}
	evicting := run("oom:headroom=0,policy=allkeys-lru,at=1s,for=1500ms")
	if evicting.Status != reports.StatusFail || !strings.Contains(evicting.Detail, "(master) evicted") {
		t.Fatalf("an evicting master passed K2: %s %s", evicting.Status, evicting.Detail)
	}
	if n, _, ok := checks.FailureCount("K2", evicting.Evidence); !ok || n == 0 {
		t.Fatalf("K2 evidence without a count: %v", evicting.Evidence)
	}
	refusing := run("oom:headroom=0,at=1s,for=1500ms")
	if refusing.Status != reports.StatusPass || refusing.Evidence["nodes_read"] != 1 {
		t.Fatalf("noeviction: K2 %s %s %v", refusing.Status, refusing.Detail, refusing.Evidence)
	}
}
