package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
)

// A slot migration whose MIGRATE the destination refuses (it is out of
// memory: maxmemory 1 byte, noeviction) fails after its source was marked
// MIGRATING: it took effect (clients met ASK and TRYAGAIN) and its Effect
// says so with its outcome, stuck while unhealed and finished by the heal
// once the destination takes keys again. A migration refused before it
// touched a slot (to= a replica) did not take effect, with the reason.
func TestSlotMigrationThatStoppedMidwayTookEffect(t *testing.T) {
	clustertest.Need(t)
	c, _, store, a, env := tpOwnEnv(t, 1000)
	ctx := ctxT(t, 60*time.Second)
	tpReserveN(t, store, a, "ef", 20)
	tl := &Timeline{Env: env, began: time.Now()}

	t.Run("refused-before-any-slot", func(t *testing.T) {
		owner, err := c.MasterOfSlot(ctx, env.HotSlots[0])
		if err != nil {
			t.Fatal(err)
		}
		reps, err := c.ReplicasOf(ctx, owner.ID)
		if err != nil || len(reps) == 0 {
			t.Fatalf("replicas of %s: %v %v", owner.Addr, reps, err)
		}
		p := tpPlan(t, "slot-migration:to="+reps[0].Addr)
		tl.inject(ctx, p)
		tl.heal(ctx, p)
		e := p.Effect()
		t.Logf("effect: %+v", e)
		if e.Took || !strings.Contains(e.Detail, "is not a healthy master") {
			t.Fatalf("effect %+v: want not taken, with the plan's refusal", e)
		}
	})

	p := tpPlan(t, "slot-migration:batch=5")
	m := p.Fault.(*SlotMigration)
	plans, err := m.plan(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	dstAdm, _ := c.Admin(plans[0].dst.Addr)
	if err := dstAdm.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := dstAdm.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := dstAdm.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
				t.Errorf("restore maxmemory on %s: %v", plans[0].dst.Addr, err)
			}
		}
	}
	t.Cleanup(restore)
	tl.inject(ctx, p)
	if w := p.Window(); w.InjectErr == nil || !strings.Contains(w.InjectErr.Error(), "OOM") {
		restore()
		tl.heal(ctx, p)
		t.Fatalf("inject error %v: want the destination's OOM", w.InjectErr)
	}
	stuck := p.Effect()
	t.Logf("before the heal: %+v", stuck)
	restore()
	tl.heal(ctx, p)
	if w := p.Window(); !w.Healed {
		t.Fatalf("heal: %v", w.HealErr)
	}
	healed := p.Effect()
	t.Logf("after the heal: %+v", healed)
	if !stuck.Took || !strings.Contains(stuck.Detail, "OOM") || !strings.Contains(stuck.Detail, "stopped at phase migrating") || !strings.Contains(stuck.Detail, "still open") {
		t.Errorf("before the heal %+v: want taken, stopped at phase migrating, still open, with the OOM", stuck)
	}
	if !healed.Took || !strings.Contains(healed.Detail, "stopped at phase migrating") || !strings.Contains(healed.Detail, "the heal finished the move") {
		t.Errorf("after the heal %+v: want taken, stopped at phase migrating, finished by the heal", healed)
	}
	if owner, _ := c.MasterOfSlot(ctx, env.HotSlots[0]); owner.ID != plans[0].dst.ID {
		t.Errorf("slot %d owned by %s after the heal, want %s", env.HotSlots[0], owner.Addr, plans[0].dst.Addr)
	}
}
