package badpaths

import (
	"context"
	"testing"
	"time"

	"seckill-harness/checks"
	"seckill-harness/history"
	"seckill-harness/internal/activitytest"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// target is a test's activity with the store that derives its ids.
type target struct {
	Store    *lua.Store
	Activity *lua.Activity
}

// verify judges tgt's state after in's history, read back as the reference's.
func verify(ctx context.Context, tgt target, in checks.CheckInput) (*checks.CheckReport, error) {
	return checks.Judge(ctx, sut.Sale{Activity: tgt.Activity, IDs: tgt.Store}, sut.NewReference(tgt.Store), in)
}

func newTarget(t *testing.T, stock int64) target {
	t.Helper()
	a := activitytest.New(t, testRDB, "bp", stock, 1)
	return target{Store: lua.NewStore(testRDB, nil, testSecret), Activity: a}
}

// The checker hole closed in I5, shown without faults: a request whose
// reply was lost ran (ACCEPTED r1 is cached for it); the client re-sent
// under a new request_id and reported that second request's answer
// (USER_ALREADY_RESERVED r1, or ACCEPTED with a reservation derived from
// the new id) as the operation's answer; or it re-sent the same id to a
// script without request idempotency, which refused it for r1. The
// reference's same-id re-send answers ACCEPTED r1.
func TestI5SeesAnAnswerFromAnotherRequest(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		firstRan bool // the lost send ran
		wantFail bool
		path     func(st *lua.Store) sut.System
	}{
		{"new id, lost send ran", true, true, func(st *lua.Store) sut.System { return newRequestIDPath{st: st} }},
		{"new id, lost send did not run", false, true, func(st *lua.Store) sut.System { return newRequestIDPath{st: st} }},
		{"same id, lost send ran", true, false, func(st *lua.Store) sut.System { return sut.NewReference(st) }},
		// The same-id re-send re-runs the request: the marker refuses it for
		// its own reservation, and the cached result is overwritten to match.
		{"same id, no request idempotency, lost send ran", true, true, func(st *lua.Store) sut.System {
			newPath, _ := Lookup(LuaNoRequestIdempotency)
			return newPath(st)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tgt := newTarget(t, 10)
			st, a := tgt.Store, tgt.Activity
			p := c.path(st)
			user, req := history.UserID(5), history.RequestID(5)
			call, err := st.NewReserveCall(a, user, req, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if c.firstRan {
				if res, err := p.Reserve(ctx, call); err != nil || res.Code != lua.Accepted {
					t.Fatalf("first send: %+v %v", res, err)
				}
			}
			res, err := p.Reserve(ctx, p.Resend(call, 0)) // the re-send whose answer the client reports
			if err != nil {
				t.Fatal(err)
			}
			op := history.Op{ID: 0, Kind: history.KindFresh, User: 5, Req: 5, Outcome: history.Outcome(res.Code), RID: res.ReservationID,
				Flags: history.FlagHadUnknown, Sends: 2, Start: time.Millisecond, End: 2 * time.Millisecond}
			rep, err := verify(ctx, tgt, checks.CheckInput{History: &history.History{Ops: []history.Op{op}}})
			if err != nil {
				t.Fatal(err)
			}
			var i5 checks.Check
			for _, ch := range rep.Checks {
				if ch.ID == "I5" {
					i5 = ch
				} else if ch.Status == checks.StatusFail && ch.ID != "I9" && !(c.wantFail && ch.ID == "H1") {
					// H1 may fail with I5 on a bad path: the answer is
					// explained by no order of the one operation the client saw.
					t.Errorf("%s failed: %s", ch.ID, ch.Detail)
				}
			}
			if got := i5.Status == checks.StatusFail; got != c.wantFail {
				t.Fatalf("I5 %s, want fail=%v: %s %v", i5.Status, c.wantFail, i5.Detail, i5.Evidence["violations"])
			}
			t.Logf("answer %s %s; I5 %s: %v", res.Code, res.ReservationID, i5.Status, i5.Evidence["violations"])
		})
	}
}
