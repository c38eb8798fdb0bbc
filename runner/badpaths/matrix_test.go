package badpaths

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/runner/checks"
	"seckill-harness/runner/sut"
)

// The whole matrix at small scale: every runnable bad path is caught by one
// of its expected invariants, the reference passes every load.
func TestMatrixCatchesEveryBadPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := RunMatrix(ctx, testEnv(t), Options{Runs: 1, Seed: 7, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = m.WriteText(&text)
	t.Log("\n" + text.String())
	seen := map[string]bool{}
	refLoads := map[string]bool{}
	for _, r := range m.Rows {
		seen[r.Path] = true
		switch {
		case r.Pending != "":
			t.Errorf("pending row %+v: every bad path runs", r)
		case r.Reference:
			refLoads[r.Load] = true
			if !r.OK || r.Good != 1 {
				for _, run := range r.Runs {
					t.Errorf("reference failed under %s: %v %v", r.Load, run.Failed, run.Details)
				}
			}
		default:
			if !r.OK || r.Good != 1 {
				t.Errorf("%s not caught by %v under %s: failed %v", r.Path, r.Expect, r.Load, r.Runs[0].Failed)
			}
		}
	}
	for _, n := range Names() {
		if !seen[n] {
			t.Errorf("%s missing from the matrix", n)
		}
	}
	for _, l := range LoadNames() {
		if !refLoads[l] {
			t.Errorf("the reference did not run under %s", l)
		}
	}
	if !m.OK {
		t.Fatal("matrix not OK")
	}
	// release-on-send-timeout (a pipeline defect) is caught by P5's check
	// that no message is first consumed after its reservation was released;
	// the reference ran the pipeline under the same load and passed the pipeline checks.
	for _, r := range m.Rows {
		if r.Load != LoadMQTimeout {
			continue
		}
		run := r.Runs[0]
		if run.Pipeline == nil || run.Pipeline["timeouts_stored"].(int64) == 0 {
			t.Errorf("%s under %s: the pipeline did not run or no timed-out message was delivered: %v", r.Path, r.Load, run.Pipeline)
		}
		switch r.Path {
		case ReleaseOnSendTimeout:
			ev, _ := run.Evidence["P5"].(map[string]any)
			if n, _ := ev["released_under_undelivered_message"].(int); n == 0 || run.Pipeline["refused"].(int64) == 0 {
				t.Errorf("release-on-send-timeout: failed %v, P5 evidence %v, pipeline %v", run.Failed, ev, run.Pipeline)
			}
		case ReferenceName:
			if !run.Passed || run.Pipeline["releases"].(int64) != 0 || run.Pipeline["stuck"].(int64) != 0 {
				t.Errorf("reference under %s: failed %v, pipeline %v", r.Load, run.Failed, run.Pipeline)
			}
		}
	}
	// new-request-id-on-timeout is caught by the re-send cross-check of I5
	// alone: without it every invariant passes (the checker hole it closes).
	for _, r := range m.Rows {
		if r.Path != NewRequestIDOnTimeout {
			continue
		}
		run := r.Runs[0]
		ev, _ := run.Evidence["I5"].(map[string]any)
		if run.LostReplies == 0 || len(run.Failed) != 1 || ev["resent_mismatches"] != ev["violation_count"] {
			t.Errorf("new-request-id-on-timeout: lost replies %d, failed %v, I5 evidence %v", run.LostReplies, run.Failed, ev)
		}
	}
}

var actN atomic.Int64

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
	a := lua.NewActivity(fmt.Sprintf("bp%d-%d", time.Now().UnixMilli(), actN.Add(1)), "sku1", stock, 1, time.Hour)
	if err := lua.Setup(context.Background(), testRDB, a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = lua.Teardown(context.Background(), testRDB, a) })
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
			user, req := runner.UserID(5), runner.RequestID(5)
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
			op := runner.Op{ID: 0, Kind: runner.KindFresh, User: 5, Req: 5, Outcome: runner.Outcome(res.Code), RID: res.ReservationID,
				Flags: runner.FlagHadUnknown, Sends: 2, Start: time.Millisecond, End: 2 * time.Millisecond}
			rep, err := verify(ctx, tgt, checks.CheckInput{History: &runner.History{Ops: []runner.Op{op}}})
			if err != nil {
				t.Fatal(err)
			}
			var i5 checks.Check
			for _, ch := range rep.Checks {
				if ch.ID == "I5" {
					i5 = ch
				} else if ch.Status == checks.StatusFail && ch.ID != "I9" {
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

// A "bad" path that is in fact correct is not caught: the matrix is not OK
// (the selftest exits 1).
func TestMatrixFailsWhenABadPathGoesUncaught(t *testing.T) {
	saved := registry
	defer func() { registry = saved }()
	registry = append(append([]Info(nil), saved...), Info{
		Name: "reference-in-disguise", Description: "the reference path", Why: "it is not bad", Expect: []string{"I5"}, Load: LoadReplay,
		new: func(st *lua.Store) sut.System { return sut.NewReference(st) },
	})
	m, err := RunMatrix(context.Background(), testEnv(t), Options{Runs: 1, Quick: true, Only: []string{"reference-in-disguise"}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = m.WriteText(&text)
	t.Log("\n" + text.String())
	if m.OK || m.Rows[0].OK || m.Rows[0].Good != 0 || !m.Rows[1].OK || !strings.Contains(text.String(), "not caught by I5") {
		t.Fatalf("an uncaught bad path passed the matrix: %+v", m.Rows)
	}
}
