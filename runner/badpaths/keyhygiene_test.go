package badpaths

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/runner/checks"
	"seckill-harness/runner/pipeline"
	"seckill-harness/runner/sut"
)

// K1 on real keys: the reserve script without its PEXPIREAT on the
// reservation record leaves every record without a TTL, and K1 fails
// naming them; the reference script under the same load passes K1 with
// the path's own keys seen, and reports the size figures.
func TestK1CatchesAReserveWithoutTTL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, _ := GetLoad(LoadContention, true)
	newBad, ok := Lookup(LuaNoTTL)
	if !ok {
		t.Fatal("lua-no-ttl not runnable")
	}
	for _, c := range []struct {
		name    string
		newPath func(*lua.Store) sut.System
		fail    bool
	}{{LuaNoTTL, newBad, true}, {ReferenceName, nil, false}} {
		res, err := runOne(ctx, testEnv(t), c.newPath, pipeline.Defects{}, l, 11, 1)
		if err != nil {
			t.Fatal(err)
		}
		k1 := res.Details["K1"]
		if got := contains(res.Failed, "K1"); got != c.fail {
			t.Fatalf("%s: K1 failed=%v, want %v (failed %v: %s)", c.name, got, c.fail, res.Failed, k1)
		}
		if c.fail {
			ev := res.Evidence["K1"].(map[string]any)
			keys, _ := ev["without_ttl"].([]string)
			if len(keys) == 0 || !strings.Contains(keys[0], ":resv:") || ev["keys_without_ttl"].(int64) < int64(res.Outcomes["fresh:ACCEPTED"]) {
				t.Fatalf("%s: K1 evidence does not name the reservation records: %v (outcomes %v)", c.name, ev, res.Outcomes)
			}
			t.Logf("%s: K1 %s", c.name, k1)
			continue
		}
		if len(res.Failed) != 0 {
			t.Fatalf("reference failed %v: %v", res.Failed, res.Details)
		}
	}
}

// The reference's K1 verdict and keyspace figures, read the way a run
// reports them.
func TestK1PassesTheReferenceWithSizes(t *testing.T) {
	ctx := context.Background()
	tgt := newTarget(t, 50)
	var ops []runner.Op
	for u := uint32(0); u < 80; u++ {
		call, err := tgt.Store.NewReserveCall(tgt.Activity, runner.UserID(u), runner.RequestID(u), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		r, err := tgt.Store.Reserve(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, runner.Op{ID: u, Kind: runner.KindFresh, User: u, Req: u, Outcome: runner.Outcome(r.Code), RID: r.ReservationID,
			Sends: 1, Attempts: 1, Start: time.Millisecond, End: 2 * time.Millisecond})
	}
	rep, err := verify(ctx, tgt, checks.CheckInput{History: &runner.History{Ops: ops}})
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

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
