package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/clustertest"
)

// A key of the slot that already sits on the destination (a stale copy,
// as an earlier MIGRATE whose reply timed out leaves it) makes Redis 7.0
// answer MIGRATE with "ERR Target instance replied with error: BUSYKEY
// …": the migration re-sends that batch with REPLACE, finishes, and the
// source's copy is the one that survives.
func TestSlotMigrationResendsABusyKeyWithReplace(t *testing.T) {
	clustertest.Need(t)
	c, rdb, store, a, env := tpOwnEnv(t, 1000)
	ctx := ctxT(t, 60*time.Second)
	slot := env.HotSlots[0]
	tpReserveN(t, store, a, "bk", 20)
	stock := a.Scope(0).StockKey()
	busy := "busy:" + stock[strings.Index(stock, "{"):strings.Index(stock, "}")+1]
	if err := rdb.Set(ctx, busy, "current", 0).Err(); err != nil {
		t.Fatal(err)
	}

	p := tpPlan(t, "slot-migration:batch=1000")
	m := p.Fault.(*SlotMigration)
	plans, err := m.plan(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := plans[0].src, plans[0].dst
	// A stale copy on the destination: it takes a key of a slot it imports
	// after ASKING, on the same connection.
	dstAdm, _ := c.Admin(dst.Addr)
	if err := tpSetSlot(ctx, dstAdm, slot, "IMPORTING", src.ID); err != nil {
		t.Fatal(err)
	}
	conn := dstAdm.Conn()
	defer conn.Close()
	if _, err := conn.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.Do(ctx, "ASKING")
		pl.Set(ctx, busy, "stale", 0)
		return nil
	}); err != nil {
		t.Fatalf("stale copy on the destination: %v", err)
	}

	err = p.Fault.Inject(ctx, env)
	ev := tpEvidence(t, p.Fault)
	tpHeal(t, p, env)
	if err != nil {
		t.Fatalf("inject: %v (a BUSYKEY must be re-sent with REPLACE)", err)
	}
	mig := ev["migrations"].([]map[string]any)[0]
	if n, _ := mig["busykey_replaced"].(int); n == 0 || mig["owner_changed"] != true || mig["keys_left_on_source"] != int64(0) {
		t.Fatalf("evidence %v: want the batch re-sent with REPLACE and the slot moved", mig)
	}
	if v, err := rdb.Get(ctx, busy).Result(); err != nil || v != "current" {
		t.Fatalf("%s after the migration: %q %v, want the source's copy \"current\"", busy, v, err)
	}
	t.Logf("slot %d moved %s → %s, %v keys re-sent with REPLACE", slot, src.Addr, dst.Addr, mig["busykey_replaced"])
}
