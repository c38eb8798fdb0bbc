package faults

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// TestNetworkFaultsLeaveNothing runs network faults through a Timeline on
// proxies of its own, heals them with HealAll, closes the proxies and checks
// that no goroutine (pulse loops, toxiproxy links and accept loops) and no
// listener is left.
func TestNetworkFaultsLeaveNothing(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	a := newActivity(t, 1000, 1)
	ctx := ctxT(t, 30*time.Second)
	before := runtime.NumGoroutine()

	px, err := compose.NewProxies(testCluster)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	rdb := lua.NewClusterClient(proxiedOptions(px, testCluster))
	store := lua.NewStore(rdb, lua.Embedded(), testSecret)
	env := newEnv(t, a, rdb)
	env.Proxies = px

	var items []*Planned
	for _, s := range []string{
		"latency:latency=5,target=all-masters",
		"disconnect-before-reply:every=100ms,pulse=10ms",
		"slicer:average_size=16,size_variation=4,delay=10,target=hot-replica",
	} {
		p, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, p)
	}
	tl := &Timeline{Env: env, Items: items}
	lctx, cancel := context.WithCancel(ctx)
	tl.Start(lctx, time.Now())
	for i := 0; i < 30; i++ {
		call, _ := store.NewReserveCall(a, fmt.Sprintf("lk%d", i), fmt.Sprintf("lr%d", i), time.Minute)
		_, _ = store.Reserve(ctx, call)
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := tl.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range items {
		w := p.Window()
		if !w.Injected || !w.Healed || w.InjectErr != nil {
			t.Fatalf("%s: window %+v", p.Spec, w)
		}
	}
	for _, addr := range px.NodeAddrs() {
		if names := px.ToxicNames(addr); len(names) != 0 {
			t.Fatalf("toxics left on %s: %v", addr, names)
		}
	}
	var listens []string
	for _, addr := range px.NodeAddrs() {
		l, _ := px.ListenAddr(addr)
		listens = append(listens, l)
	}
	_ = rdb.Close()
	if err := px.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range listens {
		if c, err := net.DialTimeout("tcp", l, time.Second); err == nil {
			c.Close()
			t.Fatalf("listener %s left after Close", l)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left (%d before):\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("3 faults injected and healed by the Timeline; %d listeners closed; goroutines %d → %d", len(listens), before, runtime.NumGoroutine())
}
