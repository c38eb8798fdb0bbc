package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
	"seckill-harness/compose/outsidetest"
	"seckill-harness/internal/clustertest"
	"seckill-harness/runner"
)

// failoverPlan is a short run with a graceful failover on the outside
// cluster at addrs, its topology waited for at most bound.
func failoverPlan(t *testing.T, addrs []string, bound time.Duration) *Plan {
	t.Helper()
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users = 200, 2*time.Second, 2000
	p := &Plan{Name: "settle", Stock: 100, Buckets: 1, Phases: []runner.Phase{{Name: "load", Config: cfg}},
		Cluster: ClusterSpec{Spec: "redis://" + strings.Join(addrs, ","), Masters: 3, AllowDestructive: true,
			External: compose.ExternalOptions{ReadyTimeout: bound}}}
	if err := p.AddFaults([]string{"failover:at=500ms"}); err != nil {
		t.Fatal(err)
	}
	return p
}

// An outside cluster whose replicas are attached only after the run has
// started waiting for its topology (docker compose's cluster-init, an
// operator adding replicas) is waited for, not refused: the failover's
// "a replica per master" is judged on the settled topology, the run
// passes, and report.json says how long it waited.
func TestOutsideClusterReplicasAttachedWhileWaiting(t *testing.T) {
	clustertest.Need(t)
	oc := outsidetest.Start(t, outsidetest.Options{Masters: 3, Replicas: -1})
	p := failoverPlan(t, oc.Addrs, 90*time.Second)
	type result struct {
		oc  *Result
		err error
	}
	done := make(chan result, 1)
	t0 := time.Now()
	go func() {
		o, err := Execute(context.Background(), p, Output{})
		done <- result{o, err}
	}()
	time.Sleep(1500 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("the run ended before any replica was attached (it judged the cluster unsettled at once): %v", r.err)
	default:
	}
	attachAt := time.Since(t0)
	oc.AddReplicas(t, 1)
	r := <-done
	if r.err != nil {
		t.Fatalf("refused although the replicas were attached %v after the start: %v", attachAt.Round(time.Millisecond), r.err)
	}
	top := r.oc.Report.Topology
	if top.SettleWaitMs == nil || time.Duration(*top.SettleWaitMs)*time.Millisecond < attachAt-time.Second {
		t.Fatalf("topology.settle_wait_ms = %v, want at least the ~%v until the replicas came", top.SettleWaitMs, attachAt)
	}
	if top.ReplicasPerMaster < 1 || !r.oc.Report.Passed {
		t.Fatalf("replicas_per_master %d, passed %v: %+v", top.ReplicasPerMaster, r.oc.Report.Passed, r.oc.Report.Assertions)
	}
	t.Logf("replicas attached %v after the start; settle_wait_ms %d", attachAt.Round(time.Millisecond), *top.SettleWaitMs)
}

// An outside cluster that never gets a replica is refused after the bound
// (a harness error: exit 2), with what never settled, for how long, and
// the fix; nothing was written to it.
func TestOutsideClusterWithoutReplicasRefusedAfterBound(t *testing.T) {
	clustertest.Need(t)
	oc := outsidetest.Start(t, outsidetest.Options{Masters: 3, Replicas: -1})
	bound := 2 * time.Second
	t0 := time.Now()
	_, err := Execute(context.Background(), failoverPlan(t, oc.Addrs, bound), Output{})
	took := time.Since(t0)
	if err == nil {
		t.Fatal("a failover on a cluster without replicas was not refused")
	}
	for _, want := range []string{"did not settle within 2s", "a master has 0 replica(s)", "need 1 per master", "give the cluster the topology the run needs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	t.Logf("refused after %v: %v", took.Round(time.Millisecond), err)
	if took < bound || took > bound+20*time.Second {
		t.Errorf("refused after %v, want just after the %v bound", took, bound)
	}
}
