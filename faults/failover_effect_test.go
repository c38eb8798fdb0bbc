package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
)

// A kill failover whose Inject is interrupted after the SIGKILL (the
// load's context ends before a replica takes over) took effect: its
// Effect says so, with the master it killed, where a SIGTERM during the
// fault used to make the verdict "0 of 1 planned faults took effect". One
// refused before it signals anything (mode=kill at a replica) did not.
func TestFailoverInterruptedAfterItsKillTookEffect(t *testing.T) {
	clustertest.Need(t)
	_, _, store, a, env := tpOwnEnv(t, 1000)
	tpReserveN(t, store, a, "fe", 5)
	tl := &Timeline{Env: env, began: time.Now()}

	refused := tpPlan(t, "failover:mode=kill,target=hot-replica")
	tl.inject(ctxT(t, 30*time.Second), refused)
	tl.heal(ctxT(t, 60*time.Second), refused)
	if e := refused.Effect(); e.Took || !strings.Contains(e.Detail, "is a replica") {
		t.Fatalf("effect %+v: want not taken, with the refusal", e)
	}

	p := tpPlan(t, "failover:mode=kill")
	ictx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tl.inject(ictx, p)
	if w := p.Window(); w.InjectErr == nil {
		tl.heal(ctxT(t, 60*time.Second), p)
		t.Fatal("the failover finished within 300ms: cannot test the interruption")
	}
	interrupted := p.Effect()
	tl.heal(ctxT(t, 60*time.Second), p)
	if w := p.Window(); !w.Healed {
		t.Fatalf("heal: %v", w.HealErr)
	}
	healed := p.Effect()
	t.Logf("interrupted: %+v", interrupted)
	t.Logf("after the heal: %+v", healed)
	for _, e := range []Effect{interrupted, healed} {
		if !e.Took || !strings.Contains(e.Detail, "SIGKILL on master") {
			t.Errorf("effect %+v: want taken, naming the SIGKILL", e)
		}
	}
	if !strings.Contains(healed.Detail, "the heal restored the cluster") {
		t.Errorf("after the heal %+v: want it said healed", healed)
	}
}
