package badpaths

import (
	"context"
	"testing"
	"time"

	"seckill-harness/checks"
	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
)

// The reference's K1 verdict and keyspace figures, read the way a run
// reports them.
func TestK1PassesTheReferenceWithSizes(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	tgt := newTarget(t, 50)
	var ops []history.Op
	for u := uint32(0); u < 80; u++ {
		call, err := tgt.Store.NewReserveCall(tgt.Activity, history.UserID(u), history.RequestID(u), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		r, err := tgt.Store.Reserve(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, history.Op{ID: u, Kind: history.KindFresh, User: u, Req: u, Outcome: history.Outcome(r.Code), RID: r.ReservationID,
			Sends: 1, Attempts: 1, Start: time.Millisecond, End: 2 * time.Millisecond})
	}
	rep, err := verify(ctx, tgt, checks.CheckInput{History: &history.History{Ops: ops}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if c.ID == "K1" && c.Status != checks.StatusPass {
			t.Fatalf("K1 %s: %s", c.Status, c.Detail)
		}
	}
	ks := rep.KeySpace
	if ks == nil || ks.KeysByKind["resv"] != 50 || ks.KeysByKind["user"] != 50 || ks.KeysByKind["soldout"] != 1 || ks.RequestResults != 80 ||
		ks.LargestRequestShard == nil || ks.LargestRequestShard.MemoryBytes <= 0 || ks.RequestShardSkew < 1 ||
		ks.ReservationsSampled == 0 || ks.MemoryPerReservationBytes <= ks.ReservationRecordBytes || ks.ExpiryRead != "PEXPIRETIME" {
		t.Fatalf("keyspace %+v (largest %+v)", ks, ks.LargestRequestShard)
	}
	if ks.LatestExpiryMs != tgt.Activity.RetentionUntilMs {
		t.Fatalf("latest expiry %d, retention %d: the reference expires every key exactly at retention_until_ms", ks.LatestExpiryMs, tgt.Activity.RetentionUntilMs)
	}
	t.Logf("keyspace: %d keys %v, per reservation %.0f B (record %.0f + marker %.0f), largest shard %+v, skew %.2f, %.1f B per request result",
		ks.KeysChecked, ks.KeysByKind, ks.MemoryPerReservationBytes, ks.ReservationRecordBytes, ks.UserMarkerBytes, *ks.LargestRequestShard, ks.RequestShardSkew, ks.RequestResultBytes)
}
