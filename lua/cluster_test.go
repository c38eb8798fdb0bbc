package lua

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
)

// One real 3×1 cluster of redis-server processes serves every test of the package.
var (
	testCluster *compose.LocalCluster
	testRDB     *redis.ClusterClient
	testStore   *Store
	testSecret  = []byte("test-secret")
	activitySeq atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, clustertest.Config{Package: "lua"}, func(f *clustertest.Fixture) (func(), error) {
		testCluster = f.Cluster
		testRDB = NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), PoolSize: 64})
		testStore = NewStore(testRDB, Embedded(), testSecret)
		return func() { _ = testRDB.Close() }, nil
	}))
}

// newActivity sets up a fresh activity (unique id) and tears it down after the test.
func newActivity(t *testing.T, stock int64, buckets uint32, mut ...func(*Activity)) *Activity {
	t.Helper()
	clustertest.Need(t)
	a := NewActivity(clustertest.ID("act"), "sku1", stock, buckets, time.Hour)
	for _, f := range mut {
		f(a)
	}
	// The shared fixture (activitytest.Own) imports this package: the
	// same steps through clustertest.Own.
	clustertest.Own(t, "activity "+a.ID,
		func(ctx context.Context) error { return Setup(ctx, testRDB, a) },
		func(ctx context.Context) error { _, err := Teardown(ctx, testRDB, a); return err })
	return a
}

func reserve(t *testing.T, a *Activity, user, req string) ReserveResult {
	t.Helper()
	call, err := testStore.NewReserveCall(a, user, req, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res, err := testStore.Reserve(context.Background(), call)
	if err != nil {
		t.Fatalf("reserve %s/%s: %v", user, req, err)
	}
	return res
}

func stockOf(t *testing.T, a *Activity, b uint32) Stock {
	t.Helper()
	s, err := ReadStock(context.Background(), testRDB, a.Scope(b))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantCode(t *testing.T, got ReserveResult, code ReserveCode) {
	t.Helper()
	if got.Code != code {
		t.Fatalf("got %s (%+v), want %s", got.Code, got, code)
	}
}

func TestReserveAcceptsAndWritesEveryRecord(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 5, 1)
	res := reserve(t, a, "u1", "r1")
	wantCode(t, res, Accepted)
	wantAttempts := 1
	if res.EvalFallback {
		wantAttempts = 2 // EVALSHA answered NOSCRIPT, then EVAL
	}
	if res.Remaining != 4 || res.Status != "QUEUED" || res.Replay || res.Attempts != wantAttempts {
		t.Fatalf("%+v", res)
	}
	if want := ReservationID(testSecret, a.ID, a.SKU, "u1", "r1"); res.ReservationID != want {
		t.Fatalf("reservation id %s want %s", res.ReservationID, want)
	}
	if s := stockOf(t, a, 0); s != (Stock{Initial: 5, Available: 4, Reserved: 1}) {
		t.Fatalf("stock %+v", s)
	}
	ctx := context.Background()
	sc := a.Scope(0)
	r, ok, err := testStore.ReadReservation(ctx, sc, res.ReservationID)
	if err != nil || !ok {
		t.Fatalf("reservation record: %v %v", ok, err)
	}
	if r.Status != StatusReserved || r.RequestID != "r1" || r.UserID != "u1" || r.MessageID != MessageID(res.ReservationID) ||
		r.ExpiresAtMs-r.ReservedAtMs != 60_000 || r.ActivityVersion != 1 {
		t.Fatalf("record %+v", r)
	}
	if v, _ := testRDB.Get(ctx, sc.UserKey("u1")).Result(); v != res.ReservationID {
		t.Fatalf("user marker %q", v)
	}
	for _, z := range []string{sc.SendPendingKey(), sc.ExpiryKey()} {
		if _, err := testRDB.ZScore(ctx, z, res.ReservationID).Result(); err != nil {
			t.Fatalf("%s lacks the reservation: %v", z, err)
		}
	}
	lr, found, err := testStore.LookupRequest(ctx, sc, "r1")
	if err != nil || !found || lr.Code != Accepted || lr.ReservationID != res.ReservationID || lr.UserID != "u1" {
		t.Fatalf("request result %+v %v %v", lr, found, err)
	}
}

func TestWindowStateAndVersion(t *testing.T) {
	clustertest.Need(t)
	now := time.Now().UnixMilli()
	cases := []struct {
		name string
		mut  func(*Activity)
		want ReserveCode
	}{
		{"not started", func(a *Activity) { a.StartsAtMs = now + 60_000 }, ActivityNotStarted},
		{"ended", func(a *Activity) { a.StartsAtMs, a.EndsAtMs = now-120_000, now-60_000 }, ActivityEnded},
		{"paused", func(a *Activity) { a.State = StatePaused }, ActivityNotActive},
		{"prepared", func(a *Activity) { a.State = StatePrepared }, ActivityNotActive},
		{"closed", func(a *Activity) { a.State = StateClosed }, ActivityNotActive},
		{"stock 0", func(a *Activity) { a.Stock = 0 }, SoldOut},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newActivity(t, 1, 1, c.mut)
			res := reserve(t, a, "u1", "r1")
			wantCode(t, res, c.want)
			if res.ReservationID != "" {
				t.Fatalf("refusal carries reservation id %q", res.ReservationID)
			}
			// The refusal is the request's final answer: a repeat replays it.
			again := reserve(t, a, "u1", "r1")
			if again.Code != c.want || !again.Replay {
				t.Fatalf("repeat: %+v", again)
			}
			s := stockOf(t, a, 0)
			if s.Reserved != 0 || s.Available != a.Stock {
				t.Fatalf("stock moved: %+v", s)
			}
		})
	}
	t.Run("version mismatch", func(t *testing.T) {
		a := newActivity(t, 1, 1)
		// meta says version 2 while the keys (and the caller) say 1: a stale client.
		if err := testRDB.HSet(context.Background(), a.Scope(0).MetaKey(), "version", "2").Err(); err != nil {
			t.Fatal(err)
		}
		wantCode(t, reserve(t, a, "u1", "r1"), VersionMismatch)
	})
	t.Run("stale version has no config", func(t *testing.T) {
		a := newActivity(t, 1, 1)
		old := *a
		old.Version = 99 // keys of a version that was never set up
		wantCode(t, reserve(t, &old, "u1", "r1"), ConfigMissing)
	})
	t.Run("resumed after pause", func(t *testing.T) {
		a := newActivity(t, 1, 1, func(a *Activity) { a.State = StatePaused })
		wantCode(t, reserve(t, a, "u1", "r1"), ActivityNotActive)
		if err := SetState(context.Background(), testRDB, a, StateActive); err != nil {
			t.Fatal(err)
		}
		wantCode(t, reserve(t, a, "u1", "r2"), Accepted)
	})
}

func TestStockOneSellsOnce(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 1, 1)
	wantCode(t, reserve(t, a, "u1", "r1"), Accepted)
	res := reserve(t, a, "u2", "r2")
	wantCode(t, res, SoldOut)
	if res.Remaining != 0 {
		t.Fatalf("%+v", res)
	}
	if n, _ := testRDB.Exists(context.Background(), a.Scope(0).SoldoutKey()).Result(); n != 1 {
		t.Fatal("soldout flag not set")
	}
	if s := stockOf(t, a, 0); s != (Stock{Initial: 1, Available: 0, Reserved: 1}) {
		t.Fatalf("stock %+v", s)
	}
}

func TestSameRequestReplays(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 3, 1)
	first := reserve(t, a, "u1", "r1")
	wantCode(t, first, Accepted)
	for i := 0; i < 3; i++ {
		again := reserve(t, a, "u1", "r1")
		if again.Code != Accepted || again.ReservationID != first.ReservationID || !again.Replay ||
			again.Remaining != first.Remaining || again.Status != first.Status {
			t.Fatalf("replay %d: %+v, first %+v", i, again, first)
		}
	}
	if s := stockOf(t, a, 0); s.Reserved != 1 {
		t.Fatalf("replay moved stock: %+v", s)
	}
}

func TestSameUserNewRequest(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 3, 1)
	first := reserve(t, a, "u1", "r1")
	res := reserve(t, a, "u1", "r2")
	wantCode(t, res, UserAlreadyReserved)
	if res.ReservationID != first.ReservationID || res.Replay {
		t.Fatalf("%+v", res)
	}
	if s := stockOf(t, a, 0); s.Reserved != 1 {
		t.Fatalf("stock %+v", s)
	}
}

func TestRequestIDReusedByAnotherUser(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 3, 1)
	wantCode(t, reserve(t, a, "u1", "shared"), Accepted)
	res := reserve(t, a, "u2", "shared")
	wantCode(t, res, RequestIDConflict)
	if res.ReservationID != "" {
		t.Fatalf("conflict leaked reservation id %q", res.ReservationID)
	}
	if s := stockOf(t, a, 0); s.Reserved != 1 {
		t.Fatalf("stock %+v", s)
	}
	// The owner still gets its answer.
	if own := reserve(t, a, "u1", "shared"); own.Code != Accepted || !own.Replay {
		t.Fatalf("owner replay %+v", own)
	}
}

func TestReservationIDConflict(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 3, 1)
	first := reserve(t, a, "u1", "r1")
	// A second request that (by a broken id scheme) derives the same reservation id.
	call, _ := testStore.NewReserveCall(a, "u2", "r2", time.Minute)
	call.ReservationID = first.ReservationID
	call.MessageID = MessageID(first.ReservationID)
	res, err := testStore.Reserve(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, res, ReservationIDConflict)
	if s := stockOf(t, a, 0); s.Reserved != 1 {
		t.Fatalf("stock %+v", s)
	}
}

func TestLostRequestResultIsRebuiltFromRecord(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 3, 1)
	first := reserve(t, a, "u1", "r1")
	sc := a.Scope(0)
	if err := testRDB.HDel(context.Background(), sc.ReqShardKey("r1"), "r1").Err(); err != nil {
		t.Fatal(err)
	}
	res := reserve(t, a, "u1", "r1")
	if res.Code != Accepted || res.ReservationID != first.ReservationID || !res.Replay {
		t.Fatalf("%+v", res)
	}
	if s := stockOf(t, a, 0); s.Reserved != 1 {
		t.Fatalf("stock %+v", s)
	}
	if _, found, _ := testStore.LookupRequest(context.Background(), sc, "r1"); !found {
		t.Fatal("request result not rebuilt")
	}
}

func TestBadArgumentsAndCorruption(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 3, 1)
	ctx := context.Background()
	call, _ := testStore.NewReserveCall(a, "u1", "r1", time.Minute)
	bad := call
	bad.UserID = "u|1"
	res, err := testStore.Reserve(ctx, bad)
	if err != nil || res.Code != BadArgument {
		t.Fatalf("pipe in user id: %+v %v", res, err)
	}
	bad = call
	bad.TTLMs = 0
	if res, _ := testStore.Reserve(ctx, bad); res.Code != BadArgument {
		t.Fatalf("ttl 0: %+v", res)
	}
	bad = call
	bad.TTLMs = 10 * 3_600_000 // past retention
	if res, _ := testStore.Reserve(ctx, bad); res.Code != BadArgument || res.Status != "RESERVATION_TTL_TOO_LONG" {
		t.Fatalf("ttl past retention: %+v", res)
	}
	// Stock hash broken behind the script's back: refuse, move nothing.
	testRDB.HIncrBy(ctx, a.Scope(0).StockKey(), "available", 1)
	if res := reserve(t, a, "u1", "r1"); res.Code != InvariantViolation {
		t.Fatalf("corrupt stock: %+v", res)
	}
	if _, err := testStore.NewReserveCall(a, "u{1}", "r1", time.Minute); err == nil {
		t.Fatal("client-side validation let a brace through")
	}
}

func TestTransitionCAS(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 5, 1)
	ctx := context.Background()
	sc := a.Scope(0)
	res := reserve(t, a, "u1", "r1")
	rid := res.ReservationID
	tr := func(target Status, mod ...func(*TransitionArgs)) TransitionResult {
		t.Helper()
		args := TransitionArgs{Target: target}
		for _, f := range mod {
			f(&args)
		}
		out, err := testStore.Transition(ctx, sc, rid, args)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if r := tr(StatusSendUnknown, func(x *TransitionArgs) { x.NextRetryAtMs = 12345 }); r.Code != TransitionUpdated || r.Previous != StatusReserved {
		t.Fatalf("%+v", r)
	}
	if sc, _ := testRDB.ZScore(ctx, sc.SendPendingKey(), rid).Result(); sc != 12345 {
		t.Fatalf("send_pending score %v", sc)
	}
	if r := tr(StatusSendUnknown); r.Code != TransitionIdempotent {
		t.Fatalf("%+v", r)
	}
	if r := tr(StatusOrderCreated); r.Code != TransitionIllegal || r.Previous != StatusSendUnknown {
		t.Fatalf("SEND_UNKNOWN->ORDER_CREATED: %+v", r)
	}
	if r := tr(StatusReleased); r.Code != TransitionIllegal {
		t.Fatalf("->RELEASED must be compensate's: %+v", r)
	}
	if r := tr(StatusEnqueued, func(x *TransitionArgs) { x.MessageID = "other-message" }); r.Code != TransitionIDConflict {
		t.Fatalf("foreign message id: %+v", r)
	}
	if r := tr(StatusEnqueued, func(x *TransitionArgs) { x.MessageID = MessageID(rid) }); r.Code != TransitionUpdated {
		t.Fatalf("%+v", r)
	}
	if _, err := testRDB.ZScore(ctx, sc.SendPendingKey(), rid).Result(); err != redis.Nil {
		t.Fatalf("ENQUEUED still in send_pending: %v", err)
	}
	if r := tr(StatusOrderCreated, func(x *TransitionArgs) { x.OrderID = "o1" }); r.Code != TransitionUpdated {
		t.Fatalf("%+v", r)
	}
	if r := tr(StatusOrderCreated, func(x *TransitionArgs) { x.OrderID = "o2" }); r.Code != TransitionIDConflict {
		t.Fatalf("second order id: %+v", r)
	}
	if r := tr(StatusReleasePending); r.Code != TransitionIllegal {
		t.Fatalf("ORDER_CREATED->RELEASE_PENDING: %+v", r)
	}
	if _, err := testRDB.ZScore(ctx, sc.ExpiryKey(), rid).Result(); err != redis.Nil {
		t.Fatalf("ORDER_CREATED still in reservation_expiry: %v", err)
	}
	if out, err := testStore.Transition(ctx, sc, "nosuchreservation000000000", TransitionArgs{Target: StatusEnqueued}); err != nil || out.Code != TransitionNotFound {
		t.Fatalf("%+v %v", out, err)
	}
	// A record under one id claiming another: ID_CONFLICT.
	testRDB.HSet(ctx, sc.ResvKey("forged"), "reservation_id", "someoneelse", "status", "RESERVED")
	if out, _ := testStore.Transition(ctx, sc, "forged", TransitionArgs{Target: StatusEnqueued}); out.Code != TransitionIDConflict {
		t.Fatalf("%+v", out)
	}
	testRDB.Del(ctx, sc.ResvKey("forged"))
}

func TestCompensation(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 5, 1)
	ctx := context.Background()
	sc := a.Scope(0)
	rid := reserve(t, a, "u1", "r1").ReservationID
	comp := func() CompensateResult {
		t.Helper()
		out, err := testStore.Compensate(ctx, sc, "u1", rid, "test", 0)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Refused from RESERVED, SEND_UNKNOWN and ENQUEUED: they may still become orders.
	for _, st := range []Status{"", StatusSendUnknown, StatusEnqueued} {
		if st != "" {
			if r, _ := testStore.Transition(ctx, sc, rid, TransitionArgs{Target: st}); r.Code != TransitionUpdated {
				t.Fatalf("to %s: %+v", st, r)
			}
		}
		if c := comp(); c.Code != CompensateNotCompensatable {
			t.Fatalf("compensate from %s: %+v", st, c)
		}
	}
	if s := stockOf(t, a, 0); s.Reserved != 1 {
		t.Fatalf("refused compensation moved stock: %+v", s)
	}
	testStore.Transition(ctx, sc, rid, TransitionArgs{Target: StatusRejected})
	c := comp()
	if c.Code != CompensateReleased || !c.MarkerDeleted || c.Available != 5 {
		t.Fatalf("%+v", c)
	}
	if c := comp(); c.Code != CompensateAlreadyReleased || c.MarkerDeleted {
		t.Fatalf("repeat: %+v", c)
	}
	if s := stockOf(t, a, 0); s != (Stock{Initial: 5, Available: 5, Reserved: 0, ReleasedTotal: 1}) {
		t.Fatalf("stock %+v", s)
	}
	if n, _ := testRDB.Exists(ctx, sc.UserKey("u1")).Result(); n != 0 {
		t.Fatal("user marker kept")
	}
	// The user may reserve again; the old reservation's marker check protects the new one.
	res2 := reserve(t, a, "u1", "r2")
	wantCode(t, res2, Accepted)
	if c := comp(); c.Code != CompensateAlreadyReleased {
		t.Fatalf("%+v", c)
	}
	if v, _ := testRDB.Get(ctx, sc.UserKey("u1")).Result(); v != res2.ReservationID {
		t.Fatal("old compensation touched the new marker")
	}
	if out, _ := testStore.Compensate(ctx, sc, "u9", "nosuchreservation000000000", "x", 0); out.Code != CompensateNotFound {
		t.Fatalf("%+v", out)
	}
}

func TestCompensateMarkerOnlyIfStillOurs(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 5, 1)
	ctx := context.Background()
	sc := a.Scope(0)
	rid := reserve(t, a, "u1", "r1").ReservationID
	testStore.Transition(ctx, sc, rid, TransitionArgs{Target: StatusReleasePending})
	testRDB.Set(ctx, sc.UserKey("u1"), "anotherreservation00000000", 0)
	c, err := testStore.Compensate(ctx, sc, "u1", rid, "x", 0)
	if err != nil || c.Code != CompensateReleased || c.MarkerDeleted {
		t.Fatalf("%+v %v", c, err)
	}
	if v, _ := testRDB.Get(ctx, sc.UserKey("u1")).Result(); v != "anotherreservation00000000" {
		t.Fatal("foreign marker deleted")
	}
}

func TestAbsoluteExpiryNotExtendedByReplay(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 5, 1)
	ctx := context.Background()
	sc := a.Scope(0)
	res := reserve(t, a, "u1", "r1")
	reserve(t, a, "u2", "r2")
	keys := []string{sc.MetaKey(), sc.StockKey(), sc.ReqShardKey("r1"), sc.UserKey("u1"),
		sc.ResvKey(res.ReservationID), sc.SendPendingKey(), sc.ExpiryKey()}
	check := func(when string) {
		t.Helper()
		for _, k := range keys {
			// PEXPIRETIME gives the absolute expiry itself.
			at, err := testRDB.Do(ctx, "PEXPIRETIME", k).Int64()
			if err != nil || at != a.RetentionUntilMs {
				t.Fatalf("%s: %s expires at %d (%v), want retention_until_ms %d", when, k, at, err, a.RetentionUntilMs)
			}
		}
	}
	check("after reserve")
	time.Sleep(20 * time.Millisecond)
	reserve(t, a, "u1", "r1") // replay
	reserve(t, a, "u1", "r9") // same user, new request: touches the shard of r9 and the marker
	check("after replay")
	// Stock sold out: the soldout flag carries the same absolute expiry.
	for i := 3; i <= 6; i++ {
		reserve(t, a, fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i))
	}
	if at, _ := testRDB.Do(ctx, "PEXPIRETIME", sc.SoldoutKey()).Int64(); at != a.RetentionUntilMs {
		t.Fatalf("soldout expires at %d", at)
	}
}

func TestEveryCallStaysInOneSlot(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 4, 4)
	ctx := context.Background()
	for i := 0; i < 40; i++ {
		call, _ := testStore.NewReserveCall(a, fmt.Sprintf("user%d", i), fmt.Sprintf("req%d", i), time.Minute)
		keys := call.Keys()
		sc := call.Scope
		keys = append(keys, sc.ReqShardKeyN(0), sc.ReqShardKeyN(255))
		var slot int64 = -1
		for _, k := range keys {
			s, err := testRDB.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if slot >= 0 && s != slot {
				t.Fatalf("key %s in slot %d, others in %d", k, s, slot)
			}
			slot = s
		}
		if call.Scope.Bucket != a.BucketOf(call.UserID) {
			t.Fatal("bucket routing")
		}
	}
}

func TestRequestResultLandsInItsShard(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 50, 1)
	ctx := context.Background()
	sc := a.Scope(0)
	for i := 0; i < 30; i++ {
		req := fmt.Sprintf("shard-req-%d", i)
		reserve(t, a, fmt.Sprintf("u%d", i), req)
		want := sc.Key(fmt.Sprintf("req:%03d", RequestShard(req)))
		if ok, _ := testRDB.HExists(ctx, want, req).Result(); !ok {
			t.Fatalf("%s not in %s", req, want)
		}
	}
}

func TestBucketedSetupSplitsStock(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 4)
	var total int64
	for b := uint32(0); b < 4; b++ {
		s := stockOf(t, a, b)
		if s.Initial != a.BucketStock(b) || s.Available != s.Initial {
			t.Fatalf("bucket %d: %+v", b, s)
		}
		total += s.Initial
	}
	if total != 10 {
		t.Fatalf("total %d", total)
	}
	if err := Setup(context.Background(), testRDB, a); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("second setup: %v", err)
	}
}

func TestTeardownRemovesOnlyItsKeys(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	other := newActivity(t, 3, 1)
	reserve(t, other, "u1", "r1")
	a := NewActivity(fmt.Sprintf("act%d", activitySeq.Add(1)), "sku1", 3, 2, time.Hour)
	if err := Setup(ctx, testRDB, a); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < 5; i++ {
		call, _ := testStore.NewReserveCall(a, fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), time.Minute)
		res, err := testStore.Reserve(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, call.Keys()...)
		if res.ReservationID != "" {
			keys = append(keys, call.Scope.ResvKey(res.ReservationID))
		}
	}
	n, err := Teardown(ctx, testRDB, a)
	if err != nil || n == 0 {
		t.Fatalf("teardown %d %v", n, err)
	}
	for _, k := range keys {
		if e, _ := testRDB.Exists(ctx, k).Result(); e != 0 {
			t.Fatalf("%s survived teardown", k)
		}
	}
	if s := stockOf(t, other, 0); s.Reserved != 1 {
		t.Fatal("teardown touched another activity")
	}
}
