package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/runner"
)

// One loaded run per kind: the load engine drives the reference path through
// the proxies while the fault happens on the timeline; afterwards every fault
// is healed, the cluster is healthy, and I1–I5 and I8 hold.
func TestLoadedRunPerKind(t *testing.T) {
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
	}
	covered := map[string]bool{
		// Acts on the order pipeline, not on the cluster or the proxies: its
		// loaded run is in runner/pipeline (a real dispatcher under load).
		kindDispatcherCrash: true,
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
			tl := &Timeline{Env: newEnv(t, a, client), Items: []*Planned{p}}
			tgt := runner.Target{Store: lua.NewStore(client, lua.Embedded(), testSecret), Activity: a}
			cfg := runner.DefaultConfig()
			cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 400, 3500*time.Millisecond, 2000, 16
			cfg.CallTimeout, cfg.SampleEvery = time.Second, 500*time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res, err := runner.Run(ctx, cfg, tgt, runner.WithOnStart(func(b time.Time) { tl.Start(ctx, b) }))
			if err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := tl.HealAll(ctxT(t, time.Minute)); err != nil {
				t.Fatalf("heal: %v", err)
			}
			if err := testCluster.WaitHealthy(ctxT(t, time.Minute)); err != nil {
				t.Fatalf("cluster not healthy after heal: %v", err)
			}
			client.ReloadState(context.Background())
			w := p.Window()
			if !w.Injected || w.InjectErr != nil {
				t.Fatalf("not injected: %+v", w)
			}
			check := runner.Target{Store: testStore, Activity: a} // read back directly, not through the proxies
			rep, err := runner.Verify(ctxT(t, time.Minute), check, runner.CheckInput{History: res.History, Samples: res.Samples, FaultsInjected: true})
			if err != nil {
				t.Fatal(err)
			}
			outcomes := map[string]int{}
			for i := range res.History.Ops {
				outcomes[res.History.Ops[i].OutcomeName()]++
			}
			t.Logf("%s: %d ops %v; unknown %+v; evidence %v", spec, len(res.History.Ops), outcomes, rep.Unknown, p.Fault.Evidence())
			for _, c := range rep.Checks {
				switch c.ID {
				case "I1", "I2", "I3", "I4", "I5", "I8":
					if c.Status == runner.StatusFail {
						t.Errorf("%s failed under %s: %s %v", c.ID, spec, c.Detail, c.Evidence)
					}
				}
			}
		})
	}
}
