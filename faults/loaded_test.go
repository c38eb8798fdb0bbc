package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// One loaded run per kind: the load engine drives the reference path through
// the proxies while the fault happens on the timeline; afterwards every fault
// is healed, the cluster is healthy, and I1–I5 and I8 hold.
func TestLoadedRunPerKind(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	kinds := []string{
		"latency:latency=20,at=1s,for=1s",
		"bandwidth:rate=16,at=1s,for=1s",
		"slicer:average_size=16,delay=200,at=1s,for=1s",
		"disconnect-before-reply:every=300ms,at=1s,for=1500ms",
		"partition:at=1s,for=1s",
		"slow-aof:sleep=5ms,samples=0,at=1s,for=1s",
		"slot-migration:at=1s,batch=50",
		"failover:mode=graceful,at=1s,for=1s",
		"failover:mode=pause,at=1s,for=1s",
		"script-flush:every=500ms,at=1s,for=1500ms",
		"oom:headroom=0,at=1s,for=1500ms",
		"aof-rewrite:samples=5,at=1s,for=2s",
	}
	covered := map[string]bool{
		// Acts on the order pipeline, not on the cluster or the proxies: its
		// loaded run is in sut/pipeline (a real dispatcher under load).
		kindDispatcherCrash: true,
		// Need a cluster with replication proxies: their loaded runs are in
		// TestLoadedRunReplicationKinds.
		kindReplicaLag:       true,
		kindReplicaPartition: true,
		// Likewise: its loaded runs (reference and a double-releasing
		// compensate) are in sut/pipeline.
		kindCompensatorCrash: true,
		// Kills processes: its loaded run is TestSlotDownUnderLoad, on a
		// cluster of its own.
		"slot-down": true,
		// Acts on the reserve path's local sold-out flag: its loaded run
		// is in runner/lifecycle (TestLocalSoldOutFlagOnARealCluster).
		kindSoldOutNoticeLost: true,
		// Acts on the pipeline's access service: its loaded runs (with the
		// scanner, and with the scanner disabled) are in sut/pipeline.
		kindServiceCrash: true,
		// Act on the service child (--service-cmd): their loaded runs are
		// in runner/lifecycle (TestServiceChildRun).
		kindServiceKill: true, kindServicePause: true, kindServiceRestart: true,
	}
	for _, spec := range kinds {
		covered[strings.SplitN(spec, ":", 2)[0]] = true
	}
	for _, k := range Kinds() {
		if !covered[k.Kind] {
			t.Errorf("kind %s has no loaded run", k.Kind)
		}
	}
	for _, spec := range kinds {
		t.Run(strings.SplitN(spec, ",", 2)[0], func(t *testing.T) {
			p, err := Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			client := proxiedClient(t, func(o *redis.ClusterOptions) { o.PoolSize = 24; o.ContextTimeoutEnabled = true })
			a := newActivity(t, 300, 2)
			// Read back directly, not through the proxies.
			loadedRun(t, p, newEnv(t, a, client), a, testStore, "I1", "I2", "I3", "I4", "I5", "I8")
		})
	}
}

// One loaded run per replication kind, on a 3×1 cluster whose replication
// runs through proxies while the load dials through client proxies: the
// clients' view of the announced ports maps onto the client proxies (no
// proxy for an announced address), the replica of the hot master falls
// behind while the fault acts, everything heals, and I1–I6 and I8 hold
// (nothing failed over, so nothing acknowledged may be lost).
func TestLoadedRunReplicationKinds(t *testing.T) {
	clustertest.Need(t)
	// Its own cluster: replication through proxies, which the shared one has not.
	c := startOwnCluster(t, compose.Options{ReplicationProxies: true})
	px, err := compose.NewProxies(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	direct := lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Dialer: compose.AnnouncedDialer(c), PoolSize: 8})
	t.Cleanup(func() { _ = direct.Close() })
	for _, spec := range []string{"replica-lag:latency=300,at=1s,for=1500ms", "replica-partition:at=1s,for=1500ms"} {
		t.Run(strings.SplitN(spec, ",", 2)[0], func(t *testing.T) {
			p, err := Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			client := proxiedClientOn(t, px, c, func(o *redis.ClusterOptions) { o.PoolSize = 24; o.ContextTimeoutEnabled = true })
			a := newActivityOn(t, direct, 300, 2)
			env := &Env{Cluster: c, Proxies: px, Client: client, HotSlots: hotSlots(t, a), Logf: t.Logf}
			loadedRun(t, p, env, a, lua.NewStore(direct, lua.Embedded(), testSecret), "I1", "I2", "I3", "I4", "I5", "I6", "I8")
			if names := px.NodeAddrs(); len(names) != len(c.Addrs()) {
				t.Fatalf("client proxies for %v: an announced address got a client proxy of its own", names)
			}
			ev := p.Fault.Evidence()
			if lag, _ := ev["max_lag_bytes"].(int64); lag <= 0 {
				t.Fatalf("the hot master's replica never fell behind under %s: %v", spec, ev)
			}
			t.Logf("%s: max lag %v bytes, link states %v, caught up %vms after heal", spec, ev["max_lag_bytes"], ev["link_status_seen"], ev["caught_up_after_heal_ms"])
		})
	}
}

// loadedRun drives 3.5 s of load at 400/s through env.Client with p on the
// timeline, heals, waits until env.Cluster is healthy and fails t when one
// of the required invariants fails (read back through check).
func loadedRun(t *testing.T, p *Planned, env *Env, a *lua.Activity, check *lua.Store, required ...string) *runner.Result {
	t.Helper()
	tl := &Timeline{Env: env, Items: []*Planned{p}}
	load := lua.NewStore(env.Client, lua.Embedded(), testSecret)
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 400, 3500*time.Millisecond, 2000, 16
	cfg.CallTimeout, cfg.SampleEvery = time.Second, 500*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := runner.Run(ctx, cfg, sut.Sale{Activity: a, IDs: load}, sut.NewReference(load), runner.WithOnStart(func(b time.Time) { tl.Start(ctx, b) }))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := tl.HealAll(ctxT(t, time.Minute)); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if err := env.Cluster.WaitHealthy(ctxT(t, time.Minute)); err != nil {
		t.Fatalf("cluster not healthy after heal: %v", err)
	}
	env.Client.ReloadState(context.Background())
	if w := p.Window(); !w.Injected || w.InjectErr != nil {
		t.Fatalf("not injected: %+v", w)
	}
	rep, err := checks.Judge(ctxT(t, time.Minute), sut.Sale{Activity: a, IDs: check}, sut.NewReference(check), checks.CheckInput{History: res.History, Samples: res.Samples, FaultsInjected: true})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	for i := range res.History.Ops {
		outcomes[res.History.Ops[i].OutcomeName()]++
	}
	t.Logf("%s: %d ops %v; unknown %+v; evidence %v", p.Spec, len(res.History.Ops), outcomes, rep.Unknown, p.Fault.Evidence())
	for _, c := range rep.Checks {
		if slices.Contains(required, c.ID) && c.Status == checks.StatusFail {
			t.Errorf("%s failed under %s: %s %v", c.ID, p.Spec, c.Detail, c.Evidence)
		}
	}
	return res
}
