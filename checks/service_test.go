package checks

import (
	"slices"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
)

// served is soldOut as a service without state showed it: the same
// answers over HTTP (each with its own request_id, within the deadline),
// no record, stock or key read back.
func served() *Facts {
	f := soldOut()
	f.Records, f.Stock = nil, nil
	f.Answers = &sut.Answers{Total: int64(len(f.Ops)), Deadline: time.Second}
	f.Unexposed = map[sut.Fact]bool{sut.Records: true, sut.Stock: true, sut.Available: true, sut.Keys: true, sut.Queues: true, sut.Requests: true}
	return f
}

// busyOp is a reserve of user answered SYSTEM_BUSY between from and to.
func busyOp(user uint32, from, to time.Duration) history.Op {
	o := reserveOp(user, user, lua.Accepted, "")
	o.Outcome, o.ErrClass, o.Start, o.End = history.OutcomeError, history.ErrSystemBusy, from, to
	return o
}

// slotDown is served with a window without a master on bucket 0 from 20
// to 40 ms, in which user 4's request was answered SYSTEM_BUSY.
func slotDown() *Facts {
	f := served()
	f.Masterless = []MasterlessWindow{{Fault: "slot-down", From: 20 * milli, To: 40 * milli, Buckets: []uint32{0}}}
	f.Ops = append(f.Ops, busyOp(4, 25*milli, 26*milli))
	f.Answers.Busy++
	f.Answers.Total++
	return f
}

func init() {
	okFixtures["S1"] = []fixture{{"SYSTEM_BUSY inside the window without a master, retryable, its own request_id", slotDown},
		{"a replay of a reservation accepted before the window", func() *Facts {
			f := slotDown()
			replay := reserveOp(1, 1, lua.Accepted, "r-a")
			replay.Kind, replay.Flags, replay.Start, replay.End = history.KindReplay, history.FlagReplay, 30*milli, 31*milli
			f.Ops = append(f.Ops, replay)
			return f
		}}}
	badFixtures["S1"] = []fixture{{"ACCEPTED inside the window without a master (fail-open)", func() *Facts {
		f := slotDown()
		o := reserveOp(5, 5, lua.Accepted, "r-open")
		o.Start, o.End = 30*milli, 31*milli
		f.Ops = append(f.Ops, o)
		return f
	}}, {"SYSTEM_BUSY without retryable=true", func() *Facts {
		f := slotDown()
		f.Answers.BusyNotRetryable = 1
		return f
	}}, {"SYSTEM_BUSY with a new request_id", func() *Facts {
		f := slotDown()
		f.Answers.BusyWrongRequestID, f.Answers.WrongRequestID = 1, 1
		return f
	}}}
	vacuousFixtures["S1"] = []fixture{{"never had to fail closed", served}, {"not a service", soldOut}}

	okFixtures["S2"] = []fixture{{"own request ids in answers and cache", func() *Facts {
		f := served()
		f.CachedRequestIDs = map[uint32][]string{0: {history.RequestID(1), history.RequestID(2), history.RequestID(3)}}
		return f
	}}}
	badFixtures["S2"] = []fixture{{"a request id cached that the harness never sent", func() *Facts {
		f := served()
		f.CachedRequestIDs = map[uint32][]string{0: {history.RequestID(1), "retry-of-" + history.RequestID(2)}}
		return f
	}}, {"an answer with another request_id", func() *Facts {
		f := served()
		f.Answers.WrongRequestID = 1
		return f
	}}}
	vacuousFixtures["S2"] = []fixture{{"no answer, cache not read", func() *Facts {
		f := served()
		f.Answers.Total = 0
		return f
	}}, {"not a service", soldOut}}

	okFixtures["S3"] = []fixture{{"every request answered in time", served}}
	badFixtures["S3"] = []fixture{{"requests without an answer within the deadline", func() *Facts {
		f := served()
		f.Answers.TimedOut = 2
		return f
	}}}
	vacuousFixtures["S3"] = []fixture{{"no request sent", func() *Facts {
		f := served()
		f.Answers.Total = 0
		return f
	}}, {"not a service", soldOut}}
}

// servedOnState is soldOut through a service that keeps the reference
// contract's keys (state: reference): its answers, and the records read
// back; user 4's request was answered FAILED (the record of the id the
// contract derives for it is asked for, as the collector does: absent).
func servedOnState() *Facts {
	f := soldOut()
	f.Answers = &sut.Answers{Total: int64(len(f.Ops)) + 1, Deadline: time.Second, Failed: 1}
	o := reserveOp(4, 4, lua.Accepted, "")
	o.Outcome, o.ErrClass = history.OutcomeError, history.ErrFailed
	f.Ops = append(f.Ops, o)
	f.OwnReservation[UserRequest{4, 4}] = "r-d"
	return f
}

func init() {
	okFixtures["S4"] = []fixture{{"FAILED to a request Redis never reserved", servedOnState},
		{"OUTCOME_UNKNOWN answers, no FAILED", func() *Facts {
			f := soldOut()
			f.Answers = &sut.Answers{Total: int64(len(f.Ops)), Deadline: time.Second, Unknown: 2}
			return f
		}}}
	badFixtures["S4"] = []fixture{{"FAILED, yet its reservation is in Redis (released at once: timeout-is-failure)", func() *Facts {
		f := servedOnState()
		f.Records["r-d"] = rec(4, lua.StatusReleased)
		return f
	}}, {"FAILED, yet Redis cached ACCEPTED for the request", func() *Facts {
		f := servedOnState()
		f.Requests[RequestKey{0, 4}] = RequestFact{Found: true, Result: lua.RequestResult{Code: lua.Accepted, ReservationID: "r-d"}}
		return f
	}}}
	vacuousFixtures["S4"] = []fixture{{"no FAILED and no OUTCOME_UNKNOWN answer", func() *Facts {
		f := soldOut()
		f.Answers = &sut.Answers{Total: int64(len(f.Ops)), Deadline: time.Second}
		return f
	}}, {"not a service", soldOut}}
}

// servedWithOrders is servedOnState's answers with a pipeline and its
// order database: r-a and r-b each became an order through the order
// stage (their messages delivered to it).
func servedWithOrders() *Facts {
	f := soldOut()
	f.Answers = &sut.Answers{Total: int64(len(f.Ops)), Deadline: time.Second}
	f.Pipeline = &PipelineEvidence{}
	f.EndToEnd = &EndToEndFacts{Stock: 2, Accepted: map[string]uint32{"r-a": 0, "r-b": 0},
		Redis: map[string]pipeline.ResvState{"r-a": {Found: true, Status: lua.StatusOrderCreated}, "r-b": {Found: true, Status: lua.StatusOrderCreated}},
		Sends: map[string]int{"r-a": 1, "r-b": 1}, Received: map[string]int{"r-a": 1, "r-b": 1}, Canceled: map[string]bool{}, Drained: true,
		Recon: pipeline.Reconciliation{Final: &pipeline.ReconcilePass{}},
		PG: &pipeline.OrderFacts{StockFound: true, Total: 2, Sold: 2,
			Orders: []pipeline.PGOrder{{OrderID: "o1", User: history.UserID(1), RID: "r-a", MessageID: "m1", Status: "CREATED"},
				{OrderID: "o2", User: history.UserID(2), RID: "r-b", MessageID: "m2", Status: "CREATED"}}}}
	return f
}

func init() {
	okFixtures["S5"] = []fixture{{"every order came through the order stage", servedWithOrders}}
	badFixtures["S5"] = []fixture{{"an order written while Redis was out of reach, no reservation behind it", func() *Facts {
		f := servedWithOrders()
		f.EndToEnd.PG.Orders[1] = pipeline.PGOrder{OrderID: "bypass-r-x", User: history.UserID(3), RID: "r-x", MessageID: "bypass:r-x", Status: "CREATED"}
		return f
	}}, {"an order of a reserved unit, never delivered to the order stage", func() *Facts {
		f := servedWithOrders()
		f.EndToEnd.Received["r-b"] = 0
		return f
	}}}
	vacuousFixtures["S5"] = []fixture{{"no order", func() *Facts {
		f := servedWithOrders()
		f.EndToEnd.PG.Orders = nil
		return f
	}}}
}

// From the answers alone (a service or an adapter file that shows no
// records), no-oversell and one-per-user are judged, not skipped: the reference's answers pass,
// an oversell and a second reservation of one user are caught, and a
// unit sold again after a release answered RELEASED is no oversell.
func TestCoreChecksFromTheAnswersAlone(t *testing.T) {
	for _, id := range []string{"I3", "I4"} {
		if c := judgeOne(t, id, served()); c.Status != StatusPass || c.Evidence["not_compared"] == nil {
			t.Errorf("%s on the reference's answers: %s %s; want pass, saying what it could not compare", id, c.Status, c.Detail)
		}
	}
	over := served()
	over.Ops = append(over.Ops, reserveOp(4, 4, lua.Accepted, "r-c"))
	if c := judgeOne(t, "I3", over); c.Status != StatusFail {
		t.Errorf("I3 on three ACCEPTED against a stock of 2: %s %s; want fail", c.Status, c.Detail)
	}
	resold := served()
	resold.Ops = append(resold.Ops, releaseOp(1, "r-a", lua.CompensateReleased, 20*milli), reserveOp(4, 40, lua.Accepted, "r-c"))
	if c := judgeOne(t, "I3", resold); c.Status != StatusPass {
		t.Errorf("I3 with a unit sold again after a release answered RELEASED: %s %s; want pass", c.Status, c.Detail)
	}
	twice := served()
	twice.Ops = append(twice.Ops, reserveOp(1, 9, lua.Accepted, "r-second"))
	if c := judgeOne(t, "I4", twice); c.Status != StatusFail {
		t.Errorf("I4 on a user told ACCEPTED twice: %s %s; want fail", c.Status, c.Detail)
	}
	// An adapter file without state.record: the same answers, judged the
	// same way (they were skipped before: a newcomer's script that
	// oversold went unjudged).
	adapterLike := served()
	adapterLike.Answers = nil
	if c := judgeOne(t, "I3", adapterLike); c.Status != StatusPass || c.Evidence["not_compared"] == nil {
		t.Errorf("I3 on a system (not a service) without records: %s %s; want judged from the answers", c.Status, c.Detail)
	}
	overAdapter := served()
	overAdapter.Answers = nil
	overAdapter.Ops = append(overAdapter.Ops, reserveOp(4, 4, lua.Accepted, "r-c"))
	if c := judgeOne(t, "I3", overAdapter); c.Status != StatusFail {
		t.Errorf("I3 on an adapter's three ACCEPTED against a stock of 2: %s %s; want fail", c.Status, c.Detail)
	}
}

// The service checks are judged only in runs against a service, after
// the core checks in table order; the other runs' reports do not change.
func TestServiceChecksOnlyAgainstAService(t *testing.T) {
	var got, want []string
	for _, c := range JudgeFacts(served()).Checks {
		got = append(got, c.ID)
	}
	for _, inv := range Invariants() {
		if !inv.Pipeline && !inv.EndToEnd && !inv.LocalSoldOut { // served() has no pipeline
			want = append(want, inv.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("against a service: %v, want %v", got, want)
	}
	for _, c := range JudgeFacts(soldOut()).Checks {
		if inv, _ := LookupInvariant(c.ID); inv.Service {
			t.Errorf("%s judged on a run that is not against a service", c.ID)
		}
	}
}
