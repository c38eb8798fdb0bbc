package checks

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// lop is a hand-built operation of user u with request r from ms a to b.
func lop(id uint32, kind history.Kind, u, r uint32, a, b int, out history.Outcome, rid string) history.Op {
	return history.Op{ID: id, Kind: kind, User: u, Req: r, Start: time.Duration(a) * time.Millisecond,
		End: time.Duration(b) * time.Millisecond, Outcome: out, RID: rid}
}

// counted is o with the count its answer carried.
func counted(o history.Op, n int32) history.Op {
	o.Remaining, o.Flags = n, o.Flags|history.FlagRemaining
	return o
}

// replayed is o answered with replay=1.
func replayed(o history.Op) history.Op {
	o.Flags |= history.FlagReplay
	return o
}

var (
	linAccepted = history.Outcome(lua.Accepted)
	linAlready  = history.Outcome(lua.UserAlreadyReserved)
	linSoldOut  = history.Outcome(lua.SoldOut)
	linReleased = history.Outcome(lua.CompensateReleased)
)

// judgeLin judges the table's linearizability check over ops with one
// bucket of stock units.
func judgeLin(t *testing.T, stock int64, ops ...history.Op) (Check, *CheckReport) {
	t.Helper()
	return linCheck(t, &Facts{Ops: ops, Planned: []int64{stock}})
}

// linCheck is the linearizability check of the table judged over f, and
// the whole report; the test fails when the report has none.
func linCheck(t *testing.T, f *Facts) (Check, *CheckReport) {
	t.Helper()
	rep := JudgeFacts(f)
	for _, c := range rep.Checks {
		if c.Name == "linearizability" {
			return c, rep
		}
	}
	t.Fatal("no linearizability check in the report")
	return Check{}, nil
}

func TestLinearizabilityExplainsALegalHistory(t *testing.T) {
	c, rep := judgeLin(t, 2,
		counted(lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"), 1),
		counted(lop(1, history.KindRelease, 1, 1, 20, 30, linReleased, "a1"), 2),
		counted(lop(2, history.KindSameUser, 1, 2, 40, 50, linAccepted, "a2"), 1),
		// a replay of the first request answers its cached ACCEPTED
		replayed(counted(lop(3, history.KindReplay, 1, 1, 60, 70, linAccepted, "a1"), 1)),
		// a USER_ALREADY_RESERVED concurrent with the release: ordered before it
		counted(lop(4, history.KindSameUser, 1, 3, 25, 26, linAlready, "a1"), 1),
		counted(lop(5, history.KindFresh, 2, 5, 80, 90, linAccepted, "b1"), 0),
		counted(lop(6, history.KindFresh, 3, 6, 100, 110, linSoldOut, ""), 0),
	)
	if c.Status != StatusPass {
		t.Fatalf("status %s, want pass: %s", c.Status, c.Detail)
	}
	if rep.Drawing != nil {
		t.Error("a drawing for a legal history")
	}
	t.Log(c.Detail)
}

func TestLinearizabilityFindsAMarkerLeftByARelease(t *testing.T) {
	c, rep := judgeLin(t, 2,
		lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
		lop(1, history.KindRelease, 1, 1, 20, 30, linReleased, "a1"),
		lop(2, history.KindReturn, 1, 2, 40, 50, linAlready, "a1"),
	)
	if c.Status != StatusFail {
		t.Fatalf("status %s, want fail: %s", c.Status, c.Detail)
	}
	if !strings.Contains(c.Detail, "user u1") || !strings.Contains(c.Detail, "USER_ALREADY_RESERVED") {
		t.Errorf("detail does not name the user and the answer: %s", c.Detail)
	}
	if rep.Drawing == nil || rep.Drawing.Partition != "user u1" {
		t.Fatalf("drawing %+v, want one of user u1", rep.Drawing)
	}
	var b bytes.Buffer
	if err := rep.Drawing.Render(&b, []LinWindow{{Name: "failover", From: 15 * time.Millisecond, To: 35 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "failover") || !strings.Contains(b.String(), "USER_ALREADY_RESERVED") {
		t.Error("the drawing does not show the fault window and the unexplained answer")
	}
	if page := b.String(); !strings.Contains(page, openAtError) || strings.Index(page, openAtError) > strings.LastIndex(page, "</body>") {
		t.Error("the drawing does not open at the unexplained answer")
	}
	t.Log(c.Detail)
}

func TestLinearizabilityUnknownMayHaveTakenEffect(t *testing.T) {
	// r1's reply was lost: it may have reserved, so r2's refusal is explained.
	c, _ := judgeLin(t, 2,
		lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeUnknown, ""),
		lop(1, history.KindSameUser, 1, 2, 20, 30, linAlready, "a1"),
	)
	if c.Status != StatusPass {
		t.Fatalf("status %s, want pass: %s", c.Status, c.Detail)
	}
	// ... but not both r1 (replayed ACCEPTED later) and r2 ACCEPTED with no release between.
	c, _ = judgeLin(t, 2,
		lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeUnknown, ""),
		lop(1, history.KindSameUser, 1, 2, 20, 30, linAccepted, "a2"),
		replayed(lop(2, history.KindReplay, 1, 1, 40, 50, linAccepted, "a1")),
	)
	if c.Status != StatusFail {
		t.Fatalf("status %s, want fail: %s", c.Status, c.Detail)
	}
	// The counter: a lost reply may have taken the last unit, so SOLD_OUT is explained ...
	c, _ = judgeLin(t, 1,
		lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeUnknown, ""),
		lop(1, history.KindFresh, 2, 2, 20, 30, linSoldOut, ""),
	)
	if c.Status != StatusPass {
		t.Fatalf("status %s, want pass: %s", c.Status, c.Detail)
	}
	// ... a request that never reached Redis did not.
	c, _ = judgeLin(t, 1,
		lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeError, ""),
		lop(1, history.KindFresh, 2, 2, 20, 30, linSoldOut, ""),
	)
	if c.Status != StatusFail || !strings.Contains(c.Detail, "bucket 0") {
		t.Fatalf("status %s, want fail on bucket 0: %s", c.Status, c.Detail)
	}
}

func TestLinearizabilityFindsCountsGoingBackwards(t *testing.T) {
	c, _ := judgeLin(t, 3,
		counted(lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"), 2),
		counted(lop(1, history.KindFresh, 2, 2, 20, 30, linAccepted, "b1"), 1),
		counted(lop(2, history.KindFresh, 3, 3, 40, 50, linAccepted, "c1"), 2),
	)
	if c.Status != StatusFail || !strings.Contains(c.Detail, "bucket 0") {
		t.Fatalf("status %s, want fail on bucket 0: %s", c.Status, c.Detail)
	}
	// The same answers overlapping in time are explained by another order.
	c, _ = judgeLin(t, 3,
		counted(lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"), 2),
		counted(lop(1, history.KindFresh, 2, 2, 20, 50, linAccepted, "b1"), 0),
		counted(lop(2, history.KindFresh, 3, 3, 25, 50, linAccepted, "c1"), 1),
	)
	if c.Status != StatusPass {
		t.Fatalf("status %s, want pass: %s", c.Status, c.Detail)
	}
}

func TestLinearizabilityNotCheckedWithinItsBudgetNeverPasses(t *testing.T) {
	saved := linBudget
	linBudget = time.Nanosecond
	defer func() { linBudget = saved }()
	c, _ := judgeLin(t, 2,
		lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
		lop(1, history.KindFresh, 2, 2, 0, 10, linAccepted, "b1"),
	)
	if c.Status != StatusSkip || !strings.Contains(c.Detail, "not checked within") {
		t.Fatalf("status %s, want skip, not checked within: %s", c.Status, c.Detail)
	}
	t.Log(c.Detail)
}

func TestLinearizabilityResolvesUnknownsFromTheCachedResult(t *testing.T) {
	ops := []history.Op{
		lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeUnknown, ""),
		lop(1, history.KindFresh, 2, 2, 20, 30, linSoldOut, ""),
	}
	judge := func(rf RequestFact) Check {
		c, _ := linCheck(t, &Facts{Ops: ops, Planned: []int64{1}, Requests: map[RequestKey]RequestFact{{0, 1}: rf}})
		return c
	}
	// Redis holds u1's ACCEPTED for r1: it took the unit, SOLD_OUT is explained.
	if c := judge(RequestFact{Found: true, Result: lua.RequestResult{Code: lua.Accepted, ReservationID: "a1", Remaining: 0, UserID: history.UserID(1)}}); c.Status != StatusPass {
		t.Fatalf("executed: status %s, want pass: %s", c.Status, c.Detail)
	}
	// Redis holds no result for r1: it never ran, the unit was there.
	if c := judge(RequestFact{}); c.Status != StatusFail {
		t.Fatalf("not executed: status %s, want fail: %s", c.Status, c.Detail)
	}
}

// A status query reads the request's answer on record: ACCEPTED after the
// reserve, still ACCEPTED after its release (a release changes no
// request's answer), NOT_FOUND only while the request may not have run.
func TestLinearizabilityJudgesStatusQueries(t *testing.T) {
	notFound := history.OutcomeNotFound
	for _, c := range []struct {
		name string
		pass bool
		ops  []history.Op
	}{
		{"ACCEPTED, released, still ACCEPTED", true, []history.Op{
			lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
			lop(1, history.KindQuery, 1, 1, 12, 14, linAccepted, "a1"),
			lop(2, history.KindRelease, 1, 1, 20, 30, linReleased, "a1"),
			lop(3, history.KindQuery, 1, 1, 40, 50, linAccepted, "a1"),
		}},
		{"NOT_FOUND while the reserve is under way", true, []history.Op{
			lop(0, history.KindQuery, 1, 1, 1, 2, notFound, ""),
			lop(1, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
			lop(2, history.KindQuery, 1, 1, 3, 4, linAccepted, "a1"),
		}},
		{"a lost reply: NOT_FOUND then ACCEPTED", true, []history.Op{
			lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeUnknown, ""),
			lop(1, history.KindQuery, 1, 1, 20, 30, notFound, ""),
			lop(2, history.KindQuery, 1, 1, 40, 50, linAccepted, "a1"),
		}},
		{"a refusal is on record too", true, []history.Op{
			lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
			lop(1, history.KindSameUser, 1, 2, 20, 30, linAlready, "a1"),
			lop(2, history.KindQuery, 1, 2, 40, 50, linAlready, "a1"),
		}},
		{"NOT_FOUND after the ACCEPTED answer", false, []history.Op{
			lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
			lop(1, history.KindRelease, 1, 1, 20, 30, linReleased, "a1"),
			lop(2, history.KindQuery, 1, 1, 40, 50, notFound, ""),
		}},
		{"ACCEPTED, NOT_FOUND, ACCEPTED (a failover's flip)", false, []history.Op{
			lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeUnknown, ""),
			lop(1, history.KindQuery, 1, 1, 20, 30, linAccepted, "a1"),
			lop(2, history.KindQuery, 1, 1, 40, 50, notFound, ""),
			lop(3, history.KindQuery, 1, 1, 60, 70, linAccepted, "a1"),
		}},
		{"another answer than the one given", false, []history.Op{
			lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
			lop(1, history.KindQuery, 1, 1, 20, 30, linSoldOut, ""),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, rep := judgeLin(t, 5, c.ops...)
			if got := ch.Status == StatusPass; got != c.pass {
				t.Fatalf("status %s, want pass=%v: %s", ch.Status, c.pass, ch.Detail)
			}
			if !c.pass && (rep.Drawing == nil || !strings.Contains(ch.Detail, "no order explains query(u1, r1)")) {
				t.Errorf("a failing query is not named: %s", ch.Detail)
			}
			t.Log(ch.Detail)
		})
	}
}

// A release re-sent after a lost reply (the reference's same-call re-send)
// answers ALREADY_RELEASED when its own lost send released the
// reservation: explained, and the unit its lost send gave back counts.
// Without the lost send, ALREADY_RELEASED for a live reservation is not.
func TestLinearizabilityARetriedReleaseMayHaveReleasedItself(t *testing.T) {
	retried := func(o history.Op) history.Op {
		o.Flags |= history.FlagHadUnknown
		o.Sends = 2
		return o
	}
	already := history.Outcome(lua.CompensateAlreadyReleased)
	ops := func(release history.Op) []history.Op {
		return []history.Op{
			counted(lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"), 0),
			release,
			// the unit the release gave back is sold again
			counted(lop(2, history.KindFresh, 2, 2, 70, 80, linAccepted, "b1"), 0),
		}
	}
	c, _ := judgeLin(t, 1, ops(retried(counted(lop(1, history.KindRelease, 1, 1, 20, 60, already, "a1"), 1)))...)
	if c.Status != StatusPass {
		t.Fatalf("a retried release's ALREADY_RELEASED: status %s, want pass: %s", c.Status, c.Detail)
	}
	c, _ = judgeLin(t, 1, ops(counted(lop(1, history.KindRelease, 1, 1, 20, 60, already, "a1"), 1))...)
	if c.Status != StatusFail || !strings.Contains(c.Detail, "user u1") {
		t.Fatalf("ALREADY_RELEASED for a live reservation, no lost send: status %s, want fail: %s", c.Status, c.Detail)
	}
}

// A request answered only by replays (its first send ran, its reply was
// lost, the re-send replayed the cached answer) ran during one of their
// lost sends: the counter places that run anywhere from the first of
// them to the last, not at the replay that happened to end first.
func TestLinearizabilityARunOnlyReplaysSayItsSpan(t *testing.T) {
	lostFirst := func(o history.Op) history.Op {
		o.Flags |= history.FlagHadUnknown | history.FlagReplay
		o.Sends = 2
		return o
	}
	c, _ := judgeLin(t, 5,
		lostFirst(counted(lop(0, history.KindFresh, 1, 1, 10, 100, linAccepted, "a1"), 4)),
		counted(lop(1, history.KindFresh, 2, 2, 20, 21, linAccepted, "b1"), 3),
		counted(lop(2, history.KindFresh, 3, 3, 30, 31, linAccepted, "c1"), 2),
		// a replay of r1, sent and answered late, but the first to end
		replayed(counted(lop(3, history.KindReplay, 1, 1, 90, 91, linAccepted, "a1"), 4)),
	)
	if c.Status != StatusPass {
		t.Fatalf("status %s, want pass: %s", c.Status, c.Detail)
	}
	// The count a replay carries is still judged: 4 cannot be the count
	// left after the run if the run came after both other sales.
	c, _ = judgeLin(t, 5,
		counted(lop(1, history.KindFresh, 2, 2, 20, 21, linAccepted, "b1"), 4),
		counted(lop(2, history.KindFresh, 3, 3, 30, 31, linAccepted, "c1"), 3),
		lostFirst(counted(lop(0, history.KindFresh, 1, 1, 40, 100, linAccepted, "a1"), 4)),
	)
	if c.Status != StatusFail {
		t.Fatalf("status %s, want fail: %s", c.Status, c.Detail)
	}
}

// byPipeline is o as WithPipelineReleases adds a compensate call of the
// pipeline: no request of its own, only the reservation it names.
func byPipeline(o history.Op) history.Op {
	o.Req, o.Flags = 0, o.Flags|FlagPipelineRelease
	return o
}

func TestLinearizabilityFollowsThePipelinesReleases(t *testing.T) {
	// The release stage gave u1's reservation back; u1 reserves again.
	c, _ := judgeLin(t, 1,
		counted(lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"), 0),
		byPipeline(lop(1, history.KindRelease, 1, 0, 20, 30, linReleased, "a1")),
		counted(lop(2, history.KindReturn, 1, 2, 40, 50, linAccepted, "a2"), 0),
	)
	if c.Status != StatusPass {
		t.Fatalf("status %s, want pass: %s", c.Status, c.Detail)
	}
	if n, _ := c.Evidence["pipeline_releases"].(int); n != 1 {
		t.Errorf("pipeline_releases %v, want 1", c.Evidence["pipeline_releases"])
	}
	// A compensation that answers RELEASED but leaves the marker: the
	// user is refused for a reservation released before.
	c, _ = judgeLin(t, 1,
		lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
		byPipeline(lop(1, history.KindRelease, 1, 0, 20, 30, linReleased, "a1")),
		lop(2, history.KindReturn, 1, 2, 40, 50, linAlready, "a1"),
	)
	if c.Status != StatusFail {
		t.Fatalf("status %s, want fail: %s", c.Status, c.Detail)
	}
	// The counter: a unit the pipeline gave back is sold again; without
	// the release, the second ACCEPTED of a one-unit bucket is unexplained.
	c, _ = judgeLin(t, 1,
		lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
		byPipeline(lop(1, history.KindRelease, 1, 0, 20, 30, history.Outcome(lua.CompensateNotCompensatable), "a1")),
		lop(2, history.KindFresh, 2, 2, 40, 50, linAccepted, "b1"),
	)
	if c.Status != StatusFail || !strings.Contains(c.Detail, "bucket 0") {
		t.Fatalf("status %s, want the bucket failing: %s", c.Status, c.Detail)
	}
}

func TestLinearizabilityPipelineReleaseOfAnUnknownReservation(t *testing.T) {
	// u1's reserve reply was lost and its result not read back: the
	// pipeline's release names a reservation the history cannot tie to a
	// request, so u1 is not followed (never a false finding), and the
	// evidence says so.
	c, _ := judgeLin(t, 1,
		lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeUnknown, ""),
		byPipeline(lop(1, history.KindRelease, 1, 0, 20, 30, linReleased, "a1")),
		lop(2, history.KindReturn, 1, 2, 40, 50, linAccepted, "a2"),
	)
	if c.Status != StatusPass {
		t.Fatalf("status %s, want pass: %s", c.Status, c.Detail)
	}
	if n, _ := c.Evidence["users_not_followed"].(int); n != 1 || !strings.Contains(c.Detail, "not followed") {
		t.Errorf("users_not_followed %v, detail %q", c.Evidence["users_not_followed"], c.Detail)
	}
	// Read back, the lost reply's result ties the reservation to r1: u1
	// is followed, and a second ACCEPTED without the release would fail.
	f := &Facts{Ops: []history.Op{
		lop(0, history.KindFresh, 1, 1, 0, 10, history.OutcomeUnknown, ""),
		byPipeline(lop(1, history.KindRelease, 1, 0, 20, 30, linReleased, "a1")),
		lop(2, history.KindReturn, 1, 2, 40, 50, linAccepted, "a2"),
	}, Planned: []int64{1}, Requests: map[RequestKey]RequestFact{
		{0, 1}: {Found: true, Result: lua.RequestResult{Code: lua.Accepted, ReservationID: "a1", UserID: "u1"}},
	}}
	if c, _ := linCheck(t, f); c.Status != StatusPass || c.Evidence["users_not_followed"] != nil {
		t.Fatalf("read back: status %s, not followed %v: %s", c.Status, c.Evidence["users_not_followed"], c.Detail)
	}
}

// judgeLinNoFlag judges ops as a service's answers: they do not say which
// answer of a re-sent request ran it (no replay flag).
func judgeLinNoFlag(t *testing.T, stock int64, ops ...history.Op) Check {
	t.Helper()
	c, _ := linCheck(t, &Facts{Ops: ops, Planned: []int64{stock}, Answers: &sut.Answers{}})
	return c
}

func TestLinearizabilityCountersWithoutAReplayFlag(t *testing.T) {
	// A request answered ACCEPTED twice (the second a replay the answer
	// does not flag) is one run: the one-unit bucket is not oversold.
	c := judgeLinNoFlag(t, 1,
		counted(lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"), 0),
		counted(lop(1, history.KindReplay, 1, 1, 20, 30, linAccepted, "a1"), 0),
	)
	if c.Status != StatusPass || c.Evidence["counters_not_checked"] != nil {
		t.Fatalf("status %s, want pass with the counters judged: %s", c.Status, c.Detail)
	}
	// ... and a second user's ACCEPTED after it is an oversell the
	// counter sees.
	c = judgeLinNoFlag(t, 1,
		lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
		lop(1, history.KindReplay, 1, 1, 20, 30, linAccepted, "a1"),
		lop(2, history.KindFresh, 2, 2, 40, 50, linAccepted, "b1"),
	)
	if c.Status != StatusFail || !strings.Contains(c.Detail, "bucket 0") {
		t.Fatalf("status %s, want the bucket failing: %s", c.Status, c.Detail)
	}
	// A SOLD_OUT replayed after a release gave a unit back is the first
	// answer's, given while the bucket was empty: explained.
	c = judgeLinNoFlag(t, 1,
		lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"),
		lop(1, history.KindFresh, 2, 2, 20, 30, linSoldOut, ""),
		lop(2, history.KindRelease, 1, 1, 40, 50, linReleased, "a1"),
		lop(3, history.KindReplay, 2, 2, 60, 70, linSoldOut, ""),
	)
	if c.Status != StatusPass {
		t.Fatalf("status %s, want pass: %s", c.Status, c.Detail)
	}
	// Replays carry the first answer's count: one run with that count.
	c = judgeLinNoFlag(t, 2,
		counted(lop(0, history.KindFresh, 1, 1, 0, 10, linAccepted, "a1"), 0),
		counted(lop(1, history.KindReplay, 1, 1, 20, 30, linAccepted, "a1"), 0),
	)
	if c.Status != StatusFail {
		t.Fatalf("status %s, want fail (count 0 after one of two units): %s", c.Status, c.Detail)
	}
}

func TestLinearizabilityMergedClocksMayDisagreeBySkew(t *testing.T) {
	// Two generators' operations on one bucket of one unit: by the merged
	// clocks the SOLD_OUT ended 5 ms before the ACCEPTED began. Clocks
	// that may disagree by 20 ms cannot say so: explained. Clocks that
	// agree (one generator) say the SOLD_OUT came with stock left.
	ops := []history.Op{
		lop(0, history.KindFresh, 1, 1, 0, 25, linSoldOut, ""),
		counted(lop(1, history.KindFresh, 2, 2, 30, 40, linAccepted, "b1"), 0),
	}
	judge := func(skew time.Duration) Check {
		c, _ := linCheck(t, &Facts{Ops: ops, Planned: []int64{1}, ClockSkew: skew})
		return c
	}
	if c := judge(0); c.Status != StatusFail {
		t.Fatalf("one clock: status %s, want fail: %s", c.Status, c.Detail)
	}
	if c := judge(20 * time.Millisecond); c.Status != StatusPass {
		t.Fatalf("clocks 20 ms apart: status %s, want pass: %s", c.Status, c.Detail)
	}
}

func TestBucketWitnessPlacesTheEarliestDeadlineFirst(t *testing.T) {
	op := func(release bool, a, b int, out history.Outcome) porcupine.Operation {
		return porcupine.Operation{Input: linInput{release: release}, Output: linOutput{code: int16(out), held: -1, remaining: -1},
			Call: int64(a), Return: int64(b)}
	}
	// One unit: A (called first, answered last) and B both ACCEPTED, a
	// release between them. In call order A takes the unit and B finds
	// none; B first, the release, then A explains all three.
	legal := []porcupine.Operation{
		op(false, 0, 100, linAccepted),
		op(false, 10, 20, linAccepted),
		op(true, 30, 40, linReleased),
		op(false, 50, 60, linSoldOut),
	}
	if !bucketWitness(1, legal) {
		t.Error("no witness for a legal bucket history")
	}
	// Without the release the second ACCEPTED is an oversell: no witness.
	if bucketWitness(1, []porcupine.Operation{legal[0], legal[1]}) {
		t.Error("a witness for an oversold bucket")
	}
	// A SOLD_OUT that returned before anything was taken: no witness.
	if bucketWitness(1, []porcupine.Operation{op(false, 0, 5, linSoldOut), op(false, 10, 20, linAccepted)}) {
		t.Error("a witness for a SOLD_OUT answered with stock left")
	}
}

// The pipeline's releases carry no count while the reserves' answers do:
// two ACCEPTED answers both leaving 4 of 5 units, a count-less release
// between them that came back first. Earliest deadline first places the
// release first (5 -> 6), after which neither answer is explained; the
// order A, release, B explains all three. A bucket of a full-path run with
// ~800 such releases among 7,764 operations fell through to porcupine's
// search and was "not checked within 10 s" (catalogue, full-path-
// disconnect). The witness then tries the releases as late as the counts
// let them come.
func TestBucketWitnessPlacesCountlessReleasesWhereTheCountsNeedThem(t *testing.T) {
	op := func(release bool, a, b int, out history.Outcome, remaining int64) porcupine.Operation {
		return porcupine.Operation{Input: linInput{release: release}, Output: linOutput{code: int16(out), held: -1, remaining: remaining},
			Call: int64(a), Return: int64(b)}
	}
	legal := []porcupine.Operation{
		op(false, 0, 20, linAccepted, 4), // A
		op(true, 1, 10, linReleased, -1), // the pipeline's release
		op(false, 2, 30, linAccepted, 4), // B
	}
	if porcupine.CheckOperations(bucketModel(5), legal) != true {
		t.Fatal("porcupine finds the legal history illegal: the case is wrong")
	}
	if !bucketWitness(5, legal) {
		t.Error("no witness for a legal bucket history")
	}
	// Without the release, B's count is a unit no one gave back.
	if bucketWitness(5, []porcupine.Operation{legal[0], legal[2]}) {
		t.Error("a witness for two answers leaving the same count with nothing released")
	}
	// The other way round, where earliest deadline first is right: the
	// release must come first for a count of 5 to follow.
	first := []porcupine.Operation{
		op(true, 0, 10, linReleased, -1),
		op(false, 1, 12, linAccepted, 5),
		op(false, 2, 11, linAccepted, 4),
	}
	if !bucketWitness(5, first) {
		t.Error("no witness when the release must come first")
	}
}

// A partition real time orders wholly is stepped through without
// porcupine: the verdicts must be porcupine's, legal and illegal alike.
func TestCheckSequentialAgreesWithPorcupine(t *testing.T) {
	codes := []history.Outcome{linAccepted, linAlready, linSoldOut, linReleased, history.Outcome(lua.CompensateAlreadyReleased), history.Outcome(lua.CompensateNotFound)}
	seen := map[porcupine.CheckResult]int{}
	for seed := uint64(1); seed <= 400; seed++ {
		r := seed
		next := func(n int) int { r = r*6364136223846793005 + 1442695040888963407; return int(r>>33) % n }
		var ops []porcupine.Operation
		for i, at := 0, 0; i < 1+next(5); i++ {
			release := next(3) == 0
			code := codes[next(len(codes))]
			if release != (code == linReleased || code == history.Outcome(lua.CompensateAlreadyReleased) || code == history.Outcome(lua.CompensateNotFound)) {
				code = map[bool]history.Outcome{true: linReleased, false: linAccepted}[release]
			}
			req := uint32(1 + next(2))
			ops = append(ops, porcupine.Operation{Input: linInput{release: release, req: req, user: 1},
				Output: linOutput{code: int16(code), held: -1, remaining: -1}, Call: int64(at), Return: int64(at + 5)})
			at += 10
		}
		p := linPartition{name: "user u1", model: userModel(repeatedSet{1: true, 2: true}), ops: ops, stock: -1}
		got, ok := checkSequential(p)
		if !ok {
			t.Fatalf("seed %d: a sequential partition was not checked sequentially", seed)
		}
		if want := porcupine.CheckOperations(p.model, ops); want != (got == porcupine.Ok) {
			t.Fatalf("seed %d: sequential %v, porcupine ok=%v, ops %+v", seed, got, want, ops)
		}
		seen[got]++
	}
	if seen[porcupine.Ok] == 0 || seen[porcupine.Illegal] == 0 {
		t.Fatalf("verdicts %v: want both legal and illegal histories among the cases", seen)
	}
	t.Logf("verdicts: %v", seen)
	// Overlapping operations are left to porcupine.
	p := linPartition{model: userModel(nil), ops: []porcupine.Operation{
		{Input: linInput{req: 1, user: 1}, Output: linOutput{code: int16(linAccepted), held: -1, remaining: -1}, Call: 0, Return: 10},
		{Input: linInput{req: 2, user: 1}, Output: linOutput{code: int16(linAlready), held: -1, remaining: -1}, Call: 5, Return: 15},
	}}
	if _, ok := checkSequential(p); ok {
		t.Error("overlapping operations were checked sequentially")
	}
}

func TestOrderWitnessTriesReturnThenCallOrder(t *testing.T) {
	op := func(req uint32, a, b int, code history.Outcome, held int64) porcupine.Operation {
		return porcupine.Operation{Input: linInput{req: req, user: 1}, Output: linOutput{code: int16(code), held: held, remaining: -1},
			Call: int64(a), Return: int64(b)}
	}
	// r2's refusal came back first, but names r1's hold: only call order
	// (r1 then r2) explains it.
	legal := linPartition{model: userModel(nil), stock: -1, ops: []porcupine.Operation{
		op(1, 0, 100, linAccepted, -1), op(2, 10, 20, linAlready, 1)}}
	if !orderWitness(legal) {
		t.Error("no witness for r1 ACCEPTED then r2 refused with r1's hold")
	}
	// Two holds at once for one user: no order explains them, no witness,
	// and the search says so.
	illegal := linPartition{model: userModel(nil), stock: -1, ops: []porcupine.Operation{
		op(1, 0, 10, linAccepted, -1), op(2, 5, 15, linAccepted, -1)}}
	if orderWitness(illegal) {
		t.Error("a witness for two holds of one user")
	}
	if r := checkPartition(illegal, time.Second); r != porcupine.Illegal {
		t.Errorf("checkPartition %v, want Illegal", r)
	}
}
