package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/compose/outsidetest"
	"seckill-harness/internal/clustertest"
)

// TestFaultsOnExternalCluster runs the fault kinds against a cluster the
// harness did not start — plain redis-server processes formed with
// redis-cli, a default-user password and an ACL user — reached only
// through compose.ConnectExternal (as the ACL user) with the embedded
// proxies in front: the guard refuses what it must, process-level failover
// modes refuse cleanly without touching anything, and CLUSTER FAILOVER,
// slot migration (MIGRATE with AUTH2), slow-aof (CONFIG/DEBUG over the
// admin clients) and a latency toxic work through the Cluster interface.
func TestFaultsOnExternalCluster(t *testing.T) {
	clustertest.Need(t)
	oc := outsidetest.Start(t, outsidetest.Options{Password: "ext-default-pw", User: "alice", UserPassword: "ext-alice-pw"})
	ctx := ctxT(t, 3*time.Minute)
	ext, err := compose.ConnectExternal(ctx, "redis://alice:ext-alice-pw@"+oc.Addrs[0], compose.ExternalOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	if err := ext.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	px, err := compose.NewProxies(ext)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	opt := ext.ClientOptions()
	opt.Dialer = compose.ProxiedDialer(px, opt.TLSConfig)
	opt.DialerRetries, opt.ReadTimeout, opt.WriteTimeout = 1, 2*time.Second, 2*time.Second
	rdb := redis.NewClusterClient(opt)
	defer rdb.Close()

	const slot = 42
	var keys []string
	for i := 0; i < 30; i++ {
		k, _ := compose.KeyInSlot(fmt.Sprintf("seckill-harness:ext-fault-%d:", i), slot)
		keys = append(keys, k)
		if err := rdb.Set(ctx, k, i, 10*time.Minute).Err(); err != nil {
			t.Fatalf("SET through the proxies as alice: %v", err)
		}
	}
	defer func() {
		for _, k := range keys {
			_ = rdb.Del(context.Background(), k).Err()
		}
	}()
	env := &Env{Cluster: ext, Proxies: px, Client: rdb, HotSlots: []int{slot}, Logf: t.Logf}

	// The guard.
	planned := mustParse(t, "failover:mode=graceful", "failover:mode=kill", "slot-migration", "slow-aof", "latency:latency=5")
	if err := CheckAllowed(planned, ext, false); err == nil || !errors.Is(err, compose.ErrNotOwned) {
		t.Errorf("guard without --allow-destructive: %v", err)
	}
	if err := CheckAllowed(planned, ext, true); err == nil || !errors.Is(err, compose.ErrNoProcessControl) {
		t.Errorf("guard with --allow-destructive: %v", err)
	}

	m0, err := ext.MasterOfSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	// Process-level modes refuse cleanly: nothing happens, heal is a no-op.
	for _, mode := range []string{"kill", "pause"} {
		p := mustParse(t, "failover:mode="+mode)[0]
		err := p.Fault.Inject(ctx, env)
		if !errors.Is(err, compose.ErrNoProcessControl) {
			t.Errorf("failover mode=%s on an external cluster: %v, want ErrNoProcessControl", mode, err)
		}
		if err := p.Fault.Heal(ctx, env); err != nil {
			t.Errorf("heal of a refused failover: %v", err)
		}
		if m, err := ext.MasterOfSlot(ctx, slot); err != nil || m.ID != m0.ID {
			t.Errorf("after a refused mode=%s the master of slot %d is %s (%v), was %s", mode, slot, m.Addr, err, m0.Addr)
		}
		if ev := p.Fault.Evidence(); ev["injected_at"] != nil {
			t.Errorf("refused failover claims an injection: %v", ev)
		}
	}

	// CLUSTER FAILOVER through the admin client of the replica.
	fo := mustParse(t, "failover:mode=graceful")[0]
	if err := fo.Fault.Inject(ctx, env); err != nil {
		t.Fatalf("graceful failover: %v", err)
	}
	if err := fo.Fault.Heal(ctx, env); err != nil {
		t.Fatalf("heal: %v", err)
	}
	ev := fo.Fault.Evidence()
	m1, _ := ext.MasterOfSlot(ctx, slot)
	if ev["new_master_seen"] != true || m1.ID == m0.ID || ev["cluster_healthy_after_heal"] != true {
		t.Errorf("graceful failover on the external cluster: master %s → %s, evidence %v", m0.Addr, m1.Addr, ev)
	}

	// Slot migration: MIGRATE needs AUTH2 alice … to log in on the destination.
	sm := mustParse(t, "slot-migration:batch=7")[0]
	if err := sm.Fault.Inject(ctx, env); err != nil {
		t.Fatalf("slot-migration: %v", err)
	}
	if err := sm.Fault.Heal(ctx, env); err != nil {
		t.Fatalf("slot-migration heal: %v", err)
	}
	m2, _ := ext.MasterOfSlot(ctx, slot)
	if m2.ID == m1.ID {
		t.Errorf("slot %d still owned by %s after the migration: %v", slot, m1.Addr, sm.Fault.Evidence())
	}
	rdb.ReloadState(ctx)
	for i, k := range keys {
		if v, err := rdb.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("key %s after the migration: %d, %v", k, v, err)
		}
	}

	// slow-aof: CONFIG SET and DEBUG over the admin client, restored at heal.
	sa := mustParse(t, "slow-aof:sleep=2ms,samples=3")[0]
	if err := sa.Fault.Inject(ctx, env); err != nil {
		t.Fatalf("slow-aof: %v", err)
	}
	if err := sa.Fault.Heal(ctx, env); err != nil {
		t.Fatalf("slow-aof heal: %v", err)
	}
	adm, err := ext.Admin(m2.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := adm.ConfigGet(ctx, "appendonly").Result(); err != nil || v["appendonly"] != "no" {
		t.Errorf("appendonly after slow-aof heal: %v %v", v, err)
	}
	if sev := sa.Fault.Evidence(); fmt.Sprint(sev["nodes"]) == "" {
		t.Errorf("slow-aof evidence: %v", sev)
	}

	// A network fault through the proxies in front of the external nodes.
	lat := mustParse(t, "latency:latency=120")[0]
	if err := lat.Fault.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err = rdb.Get(ctx, keys[0]).Err()
	slow := time.Since(t0)
	if err := lat.Fault.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err != nil || slow < 120*time.Millisecond {
		t.Errorf("GET with a 120ms latency toxic on the hot master: %v, %v", slow, err)
	}
	if err := ext.WaitHealthy(ctx); err != nil {
		t.Errorf("external cluster after the faults: %v", err)
	}
}

// A nil *compose.Proxies stored in Env.Proxies (what a caller without
// proxies may do) is "no proxies": network kinds refuse instead of panicking.
func TestTypedNilProxies(t *testing.T) {
	var none *compose.Proxies
	var noCluster *compose.LocalCluster
	env := &Env{Cluster: noCluster, Proxies: none}
	p := mustParse(t, "latency:latency=5")[0]
	if err := p.Fault.Inject(context.Background(), env); err == nil {
		t.Error("latency without proxies: no error")
	}
	if err := p.Fault.Heal(context.Background(), env); err != nil {
		t.Errorf("heal: %v", err)
	}
	f := mustParse(t, "failover")[0]
	if err := f.Fault.Inject(context.Background(), env); err == nil {
		t.Error("failover without a cluster: no error")
	}
}
