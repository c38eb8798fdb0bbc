package faults

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

func TestSlotDownParams(t *testing.T) {
	for _, bad := range []string{"slot-down:target=all-masters", "slot-down:wait=x", "slot-down:x=1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if err := tpPlan(t, "slot-down").Fault.Heal(context.Background(), &Env{}); err != nil {
		t.Fatalf("heal before inject: %v", err)
	}
	if !Destructive("slot-down", nil) || !IsExclusive("slot-down") {
		t.Fatal("slot-down must be declared destructive and exclusive")
	}
}

// TestSlotDownUnderLoad (own cluster: it kills processes): with the hot
// master and its replica dead, no reserve of the hot bucket is ACCEPTED or
// SOLD_OUT while they are down (they fail closed as ERROR), the other
// bucket keeps being accepted, and after the restart the invariants hold.
// "While down" is from the return of Inject to the start of heal (at+for,
// or later when the inject itself ran past it: the window the timeline
// recorded, not the planned one).
func TestSlotDownUnderLoad(t *testing.T) {
	clustertest.Need(t)
	// Its own cluster: it kills a master and its replica.
	c := startOwnCluster(t, compose.Options{})
	client := lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 24, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	a := newActivityOn(t, client, 5000, 2)
	env := &Env{Cluster: c, Client: client, HotSlots: hotSlots(t, a), Logf: t.Logf}
	m, err := c.MasterOfSlot(ctxT(t, 5e9), env.HotSlots[0])
	if err != nil {
		t.Fatal(err)
	}
	otherAlive := !m.HasSlot(env.HotSlots[1])
	p := tpPlan(t, "slot-down:at=1s,for=2s")
	res := loadedRun(t, p, env, a, lua.NewStore(client, lua.Embedded(), testSecret), "I1", "I2", "I3", "I4", "I5", "I6", "I8")
	w := p.Window()
	hotErrors, otherAccepted := 0, 0
	hotOutcomes := map[string]int{} // what the dead shard's ops sent while it was down ended with
	for i := range res.History.Ops {
		op := &res.History.Ops[i]
		if op.Kind == history.KindRelease || op.Start < w.InjectDone || op.Start > w.HealStarted {
			continue
		}
		if op.Bucket == 0 {
			hotOutcomes[op.OutcomeName()]++
			if op.Outcome >= 0 && op.End <= w.HealStarted {
				t.Errorf("op %d on the dead shard answered %s while it was down", op.ID, op.OutcomeName())
			}
			// No answer: refused (ERROR), or the reply lost on every send
			// (UNKNOWN: a pooled connection to the killed node reset).
			if op.Outcome == history.OutcomeError || op.Outcome == history.OutcomeUnknown {
				hotErrors++
			}
		} else if op.Outcome == history.Outcome(lua.Accepted) {
			otherAccepted++
		}
	}
	if hotErrors == 0 {
		t.Fatalf("no request for the dead shard failed while it was down (%.2fs to %.2fs of the load; its ops sent then ended %v): %v", w.InjectDone.Seconds(), w.HealStarted.Seconds(), hotOutcomes, p.Fault.Evidence())
	}
	if otherAlive && otherAccepted == 0 {
		t.Fatalf("the other master's bucket stopped serving while the shard was down")
	}
	t.Logf("slot-down: %d hot-bucket errors, %d other-bucket accepts while down; %v", hotErrors, otherAccepted, p.Fault.Evidence())
}
