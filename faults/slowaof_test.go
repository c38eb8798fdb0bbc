package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
)

func TestSlowAOFParams(t *testing.T) {
	for _, bad := range []string{"slow-aof:sleep=x", "slow-aof:sleep=0", "slow-aof:sleep=11s", "slow-aof:rewrite=perhaps", "slow-aof:samples=-1", "slow-aof:x=1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	f := tpPlan(t, "slow-aof:sleep=5ms,rewrite=true,samples=3,target=all-masters").Fault.(*SlowAOF)
	if f.sleep != 5*time.Millisecond || !f.rewrite || f.samples != 3 || f.target.Role != TargetAllMasters {
		t.Fatalf("%+v", f)
	}
	if err := f.Heal(context.Background(), &Env{}); err != nil {
		t.Fatal(err)
	}
}

func configOf(t *testing.T, c *compose.LocalCluster, addr string) map[string]string {
	t.Helper()
	adm, err := c.Admin(addr)
	if err != nil {
		t.Fatal(err)
	}
	m, err := aofConfigGet(ctxT(t, 5*time.Second), adm, aofConfigKeys...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSlowAOF (shared cluster): writes to the hot master take at least the
// sleep longer while injected, and are back to normal after heal, with the
// configuration restored.
func TestSlowAOF(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	a := newActivity(t, 1000, 1)
	env := newEnv(t, a, testDirect)
	ctx := ctxT(t, 60*time.Second)
	slot := env.HotSlots[0]
	m, err := testCluster.MasterOfSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	adm, _ := testCluster.Admin(m.Addr)
	key, _ := compose.KeyInSlot("faults-test-slow-aof:", slot)
	t.Cleanup(func() { adm.Del(context.Background(), key) })
	cfgBefore := configOf(t, testCluster, m.Addr)

	before := aofTimedWrites(ctx, adm, key, 30)
	p := tpPlan(t, "slow-aof:sleep=20ms")
	if err := p.Fault.Inject(ctx, env); err != nil {
		tpHeal(t, p, env)
		t.Fatalf("inject: %v", err)
	}
	during := aofTimedWrites(ctx, adm, key, 20)
	// The reserve path is slowed as much.
	call, _ := testStore.NewReserveCall(a, "slow-aof-user", "rq-slow-aof-user", time.Hour)
	t0 := time.Now()
	if _, err := testStore.Reserve(ctx, call); err != nil {
		t.Errorf("reserve during slow-aof: %v", err)
	}
	reserveDur := time.Since(t0)
	if got := configOf(t, testCluster, m.Addr); got["appendonly"] != "yes" || got["appendfsync"] != "always" {
		t.Errorf("config while injected: %v", got)
	}
	tpHeal(t, p, env)
	after := aofTimedWrites(ctx, adm, key, 30)
	ev := tpEvidence(t, p.Fault)
	t.Logf("SET latency p50 before %.3f ms, during %.3f ms (min %.3f), after %.3f ms; one reserve during: %v",
		before.P50Ms, during.P50Ms, during.MinMs, after.P50Ms, reserveDur.Round(time.Microsecond))

	if ev["mechanism"] != MechanismAOFFlushSleep {
		t.Errorf("mechanism %v", ev["mechanism"])
	}
	if during.N != 20 || during.MinMs < 20 || during.P50Ms-before.P50Ms < 19 {
		t.Errorf("writes not slowed by the sleep: before %+v during %+v", before, during)
	}
	if reserveDur < 20*time.Millisecond {
		t.Errorf("a reserve during the fault took %v, want >= 20ms", reserveDur)
	}
	if after.P50Ms > before.P50Ms+5 {
		t.Errorf("writes still slow after heal: before %+v after %+v", before, after)
	}
	if got := configOf(t, testCluster, m.Addr); !mapsEqual(got, cfgBefore) {
		t.Errorf("config after heal %v, before %v", got, cfgBefore)
	}
	if _, ok := ev["latency_latest"]; !ok {
		t.Errorf("no LATENCY LATEST in the evidence")
	}
	for _, k := range []string{"write_latency_before", "write_latency_during", "write_latency_after", "latency_shift_ms"} {
		if _, ok := ev[k]; !ok {
			t.Errorf("evidence lacks %s", k)
		}
	}
	if shift, _ := ev["latency_shift_ms"].(float64); shift < 19 {
		t.Errorf("evidence latency_shift_ms %v", ev["latency_shift_ms"])
	}
	// Heal is idempotent.
	tpHeal(t, p, env)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSlowAOFFallback (shared cluster): where DEBUG is refused (here by an
// ACL on the hot master) slow-aof puts a latency toxic on the node's proxy,
// says so, and refuses clearly without proxies.
func TestSlowAOFFallback(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	a := newActivity(t, 1000, 1)
	client := proxiedClient(t)
	env := newEnv(t, a, client)
	ctx := ctxT(t, 60*time.Second)
	slot := env.HotSlots[0]
	m, err := testCluster.MasterOfSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	adm, _ := testCluster.Admin(m.Addr)
	if err := adm.Do(ctx, "ACL", "SETUSER", "default", "-debug").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Do(context.Background(), "ACL", "SETUSER", "default", "+@all") })
	cfgBefore := configOf(t, testCluster, m.Addr)

	// Without proxies: a clear refusal, nothing changed.
	noProxies := *env
	noProxies.Proxies = nil
	p0 := tpPlan(t, "slow-aof:sleep=20ms")
	err = p0.Fault.Inject(ctx, &noProxies)
	if err == nil || !strings.Contains(err.Error(), "no proxies") {
		t.Fatalf("inject without proxies: %v", err)
	}
	t.Logf("without proxies: %v", err)
	tpHeal(t, p0, &noProxies)
	if got := configOf(t, testCluster, m.Addr); !mapsEqual(got, cfgBefore) {
		t.Errorf("config changed by a refused inject: %v", got)
	}

	key, _ := compose.KeyInSlot("faults-test-slow-aof-fb:", slot)
	t.Cleanup(func() { adm.Del(context.Background(), key) })
	before := aofTimedWrites(ctx, client, key, 20)
	p := tpPlan(t, "slow-aof:sleep=20ms")
	if err := p.Fault.Inject(ctx, env); err != nil {
		tpHeal(t, p, env)
		t.Fatalf("inject: %v", err)
	}
	ev := p.Fault.Evidence()
	name := ev["nodes"].([]map[string]any)[0]["toxic"]
	if ev["mechanism"] != MechanismLatencyToxic || !slices.Contains(testProxies.ToxicNames(m.Addr), name.(string)) {
		t.Fatalf("mechanism %v, toxic %v on %v", ev["mechanism"], name, testProxies.ToxicNames(m.Addr))
	}
	during := aofTimedWrites(ctx, client, key, 10)
	tpHeal(t, p, env)
	after := aofTimedWrites(ctx, client, key, 20)
	tpEvidence(t, p.Fault)
	t.Logf("SET latency through the proxy p50 before %.3f ms, during %.3f ms, after %.3f ms", before.P50Ms, during.P50Ms, after.P50Ms)
	if during.MinMs < 20 || after.P50Ms > before.P50Ms+5 {
		t.Errorf("before %+v during %+v after %+v", before, during, after)
	}
	if slices.Contains(testProxies.ToxicNames(m.Addr), name.(string)) {
		t.Error("toxic left after heal")
	}
	if got := configOf(t, testCluster, m.Addr); !mapsEqual(got, cfgBefore) {
		t.Errorf("config after heal %v, before %v", got, cfgBefore)
	}
}
