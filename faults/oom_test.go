package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

func TestOOMParams(t *testing.T) {
	for _, bad := range []string{"oom:headroom=-1", "oom:headroom=x", "oom:policy=evict-everything", "oom:x=1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	f := tpPlan(t, "oom").Fault.(*OOM)
	if f.policy != "noeviction" || f.headroom != 65536 {
		t.Fatalf("defaults: %+v", f)
	}
	if err := f.Heal(context.Background(), &Env{}); err != nil {
		t.Fatalf("heal before inject: %v", err)
	}
	if !Destructive("oom", nil) || !IsExclusive("oom") {
		t.Fatal("oom must be declared destructive and exclusive: it reconfigures the node's memory")
	}
}

// TestOOMUnderLoad: with the hot master's memory full under load, the
// reserves it refuses end in ERROR of class OOM (never SOLD_OUT: stock is
// left), the node evicts nothing, the invariants hold (nothing
// half-written), and after heal a reserve is accepted again with the
// configuration restored.
func TestOOMUnderLoad(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	client := proxiedClient(t, func(o *redis.ClusterOptions) { o.PoolSize = 24; o.ContextTimeoutEnabled = true })
	a := newActivity(t, 5000, 2)
	env := newEnv(t, a, client)
	m, err := testCluster.MasterOfSlot(ctxT(t, 5*time.Second), env.HotSlots[0])
	if err != nil {
		t.Fatal(err)
	}
	adm, _ := testCluster.Admin(m.Addr)
	cfgBefore, err := aofConfigGet(ctxT(t, 5*time.Second), adm, "maxmemory", "maxmemory-policy")
	if err != nil {
		t.Fatal(err)
	}
	p := tpPlan(t, "oom:headroom=0,at=1s,for=1500ms")
	res := loadedRun(t, p, env, a, testStore, "I1", "I2", "I3", "I4", "I5", "I8")
	classes := map[string]int{}
	for i := range res.History.Ops {
		op := &res.History.Ops[i]
		if op.Outcome == history.OutcomeError {
			classes[op.ErrClass.String()]++
		}
		if op.Kind != history.KindRelease && op.Outcome == history.Outcome(lua.SoldOut) {
			t.Errorf("op %d answered SOLD_OUT with stock left", op.ID)
		}
	}
	if classes["OOM"] == 0 {
		t.Fatalf("no reserve refused with OOM under a full memory: errors %v, evidence %v", classes, p.Fault.Evidence())
	}
	evicted, ok := p.Fault.(*OOM).EvictedKeys()
	if !ok || evicted != 0 {
		t.Fatalf("evicted_keys %d (read %v) under noeviction", evicted, ok)
	}
	if got, _ := aofConfigGet(ctxT(t, 5*time.Second), adm, "maxmemory", "maxmemory-policy"); fmt.Sprint(got) != fmt.Sprint(cfgBefore) {
		t.Fatalf("configuration not restored: %v, was %v", got, cfgBefore)
	}
	call, err := testStore.NewReserveCall(a, "oom-after-heal-user", "oom-after-heal-req", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r, err := testStore.Reserve(ctxT(t, 5*time.Second), call)
	if err != nil || r.Code != lua.Accepted {
		t.Fatalf("reserve after heal: %+v %v", r, err)
	}
	t.Logf("oom: errors by class %v, evidence %v", classes, p.Fault.Evidence())
}
