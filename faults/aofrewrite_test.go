package faults

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"seckill-harness/internal/clustertest"
)

func TestAOFRewriteParams(t *testing.T) {
	for _, bad := range []string{"aof-rewrite:samples=0", "aof-rewrite:samples=x", "aof-rewrite:x=1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	f := tpPlan(t, "aof-rewrite").Fault.(*AOFRewrite)
	if f.samples != 20 {
		t.Fatalf("defaults: %+v", f)
	}
	if err := f.Heal(context.Background(), &Env{}); err != nil {
		t.Fatalf("heal before inject: %v", err)
	}
	if !Destructive("aof-rewrite", nil) || !IsExclusive("aof-rewrite") {
		t.Fatal("aof-rewrite must be declared destructive and exclusive")
	}
}

// TestAOFRewriteUnderLoad: a rewrite really ran on the hot master under
// load (the node's own aof_rewrites counter moved, a fork was timed), the
// invariants hold, and heal turns AOF off again.
func TestAOFRewriteUnderLoad(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	client := proxiedClient(t, func(o *redis.ClusterOptions) { o.PoolSize = 24; o.ContextTimeoutEnabled = true })
	a := newActivity(t, 300, 2)
	env := newEnv(t, a, client)
	m, err := testCluster.MasterOfSlot(ctxT(t, 5*time.Second), env.HotSlots[0])
	if err != nil {
		t.Fatal(err)
	}
	adm, _ := testCluster.Admin(m.Addr)
	rewrites := func() string {
		info, err := adm.Info(ctxT(t, 5*time.Second), "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		return aofInfoValue(info, "aof_rewrites")
	}
	was, _ := aofConfigGet(ctxT(t, 5*time.Second), adm, "appendonly")
	before := rewrites()
	p := tpPlan(t, "aof-rewrite:samples=5,at=1s,for=2s")
	loadedRun(t, p, env, a, testStore, "I1", "I2", "I3", "I4", "I5", "I8")
	if after := rewrites(); after == before {
		t.Fatalf("aof_rewrites stayed %s: no rewrite ran", after)
	}
	ev := p.Fault.Evidence()
	if fork, _ := ev["latest_fork_usec"].(int64); fork <= 0 {
		t.Fatalf("no fork time: %v", ev)
	}
	if now, _ := aofConfigGet(ctxT(t, 5*time.Second), adm, "appendonly"); now["appendonly"] != was["appendonly"] {
		t.Fatalf("appendonly %q after heal, was %q", now["appendonly"], was["appendonly"])
	}
	t.Logf("aof-rewrite: fork %vµs, window %vms, p50 before %v during %v", ev["latest_fork_usec"], ev["rewrite_window_ms"],
		ev["write_latency_before"], ev["write_latency_during"])
}
