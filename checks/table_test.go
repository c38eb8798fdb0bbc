package checks

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
)

// Pure judging tests: every check of the table is shown, on hand-built
// facts (no Redis), passing a correct history, catching a broken one, and
// skipping — with its reason — a history that gives it nothing to judge.

const milli = time.Millisecond

// reserveOp is a reserve operation answered code, in bucket 0.
func reserveOp(user, req uint32, code lua.ReserveCode, rid string) history.Op {
	return history.Op{Kind: history.KindFresh, User: user, Req: req, Outcome: history.Outcome(code), RID: rid, Sends: 1, Attempts: 1,
		Start: time.Duration(req) * milli, End: time.Duration(req)*milli + milli}
}

// releaseOp is a release (compensate) operation of rid answered code.
func releaseOp(user uint32, rid string, code lua.CompensateCode, at time.Duration) history.Op {
	return history.Op{Kind: history.KindRelease, User: user, RID: rid, Outcome: history.Outcome(code), Sends: 1, Attempts: 1, Start: at, End: at + milli}
}

func rec(user uint32, s lua.Status) ReservationRecord {
	return ReservationRecord{Status: s, User: history.UserID(user)}
}

// soldOut is a correct run on one bucket of 2: users 1 and 2 reserve, user
// 3 is refused SOLD_OUT, user 1 replays (same answer).
func soldOut() *Facts {
	replay := reserveOp(1, 1, lua.Accepted, "r-a")
	replay.Kind, replay.Flags, replay.Start, replay.End = history.KindReplay, history.FlagReplay, 10*milli, 11*milli
	return &Facts{
		Planned: []int64{2},
		Stock:   []lua.Stock{{Initial: 2, Available: 0, Reserved: 2}},
		Ops: []history.Op{reserveOp(1, 1, lua.Accepted, "r-a"), reserveOp(2, 2, lua.Accepted, "r-b"),
			reserveOp(3, 3, lua.SoldOut, ""), replay},
		Records:         map[string]ReservationRecord{"r-a": rec(1, lua.StatusReserved), "r-b": rec(2, lua.StatusReserved)},
		Requests:        map[RequestKey]RequestFact{},
		OwnReservation:  map[UserRequest]string{},
		SendPendingLeft: []int64{0}, ExpiryLeft: []int64{0},
	}
}

// flagged is a one-bucket run with a 1 s local sold-out flag (lsoOps):
// sold out at 1 s, a unit released at releaseAt and sold again at saleAt
// (never when saleAt < 0), the load running to 6 s.
func flagged(releaseAt, saleAt time.Duration) *Facts {
	return &Facts{Ops: lsoOps(releaseAt, saleAt, 6*time.Second), Stock: []lua.Stock{{Initial: 1}}, Planned: []int64{1},
		Records: map[string]ReservationRecord{}, Requests: map[RequestKey]RequestFact{}, OwnReservation: map[UserRequest]string{},
		SendPendingLeft: []int64{0}, ExpiryLeft: []int64{0}, LocalSoldOutTTL: time.Second}
}

// waitConfirmedFacts is soldOut run with WAIT: r-a's ACCEPTED was
// confirmed by the replica, r-b's WAIT timed out (sent, not confirmed).
func waitConfirmedFacts() *Facts {
	f := soldOut()
	f.Ops[0].Flags |= history.FlagWaitSent | history.FlagWaitConfirmed
	f.Ops[0].WaitUs = 300
	f.Ops[1].Flags |= history.FlagWaitSent
	f.Ops[1].WaitUs = 500_000
	return f
}

// withRelease is soldOut where r-b was released once (and its repeat
// answered ALREADY_RELEASED), and user 4 then bought the unit back.
func withRelease() *Facts {
	f := soldOut()
	f.Ops = append(f.Ops, releaseOp(2, "r-b", lua.CompensateReleased, 20*milli), releaseOp(2, "r-b", lua.CompensateAlreadyReleased, 22*milli),
		reserveOp(4, 30, lua.Accepted, "r-d"))
	f.Records["r-b"] = rec(2, lua.StatusReleased)
	f.Records["r-d"] = rec(4, lua.StatusReserved)
	f.Stock = []lua.Stock{{Initial: 2, Available: 0, Reserved: 2, ReleasedTotal: 1}}
	return f
}

// untouched is a run in which nothing reached the script.
func untouched() *Facts {
	return &Facts{Planned: []int64{2}, Stock: []lua.Stock{{Initial: 2, Available: 2}}, Records: map[string]ReservationRecord{},
		Requests: map[RequestKey]RequestFact{}, OwnReservation: map[UserRequest]string{}, SendPendingLeft: []int64{0}, ExpiryLeft: []int64{0}}
}

func withUnknown(f *Facts, res RequestFact) *Facts {
	o := reserveOp(5, 5, 0, "")
	o.Outcome, o.Flags = history.OutcomeUnknown, history.FlagHadUnknown
	f.Ops = append(f.Ops, o)
	f.Requests[RequestKey{0, 5}] = res
	return f
}

// at is a moment of the pipeline's clock.
func at(n int) time.Time { return time.Unix(1000, 0).Add(time.Duration(n) * milli) }

func transition(stage pipeline.Stage, rid string, user uint32, from, to lua.Status, code lua.TransitionCode, t int) pipeline.Event {
	return pipeline.Event{Start: at(t), End: at(t + 1), Stage: stage, Op: pipeline.OpTransition, RID: rid, User: history.UserID(user),
		Status: from, Target: to, Code: int64(code), Delivery: uint64(t)}
}

func compensate(stage pipeline.Stage, rid string, user uint32, code lua.CompensateCode, st lua.Status, t int) pipeline.Event {
	return pipeline.Event{Start: at(t), End: at(t + 1), Stage: stage, Op: pipeline.OpCompensate, RID: rid, User: history.UserID(user),
		Code: int64(code), Status: st}
}

// piped is a correct pipeline run on one bucket of 2: r-a is ordered; r-b
// is rejected by the order service and released through RELEASE_PENDING.
func piped() *Facts {
	f := &Facts{
		Planned:  []int64{2},
		Stock:    []lua.Stock{{Initial: 2, Available: 1, Reserved: 1, ReleasedTotal: 1}},
		Ops:      []history.Op{reserveOp(1, 1, lua.Accepted, "r-a"), reserveOp(2, 2, lua.Accepted, "r-b")},
		Records:  map[string]ReservationRecord{"r-a": rec(1, lua.StatusOrderCreated), "r-b": rec(2, lua.StatusReleased)},
		Requests: map[RequestKey]RequestFact{}, OwnReservation: map[UserRequest]string{},
		SendPendingLeft: []int64{0}, ExpiryLeft: []int64{0},
	}
	ev := &PipelineEvidence{Drained: true,
		Events: []pipeline.Event{
			transition(pipeline.StageDispatcher, "r-a", 1, lua.StatusReserved, lua.StatusEnqueued, lua.TransitionUpdated, 10),
			transition(pipeline.StageDispatcher, "r-b", 2, lua.StatusReserved, lua.StatusEnqueued, lua.TransitionUpdated, 12),
			transition(pipeline.StageOrder, "r-a", 1, lua.StatusEnqueued, lua.StatusOrderCreated, lua.TransitionUpdated, 20),
			transition(pipeline.StageOrder, "r-b", 2, lua.StatusEnqueued, lua.StatusRejected, lua.TransitionUpdated, 22),
			transition(pipeline.StageRelease, "r-b", 2, lua.StatusRejected, lua.StatusReleasePending, lua.TransitionUpdated, 30),
			compensate(pipeline.StageRelease, "r-b", 2, lua.CompensateReleased, lua.StatusReleased, 32),
		},
		Sends: []pipeline.Send{{MessageID: lua.MessageID("r-a"), RID: "r-a", Outcome: "ack", Stored: true},
			{MessageID: lua.MessageID("r-b"), RID: "r-b", Outcome: "ack", Stored: true}},
		Deliveries: []pipeline.Delivery{{MessageID: lua.MessageID("r-a"), RID: "r-a", Send: 1, Copy: 1},
			{MessageID: lua.MessageID("r-b"), RID: "r-b", Send: 2, Copy: 1}},
		Orders: []pipeline.OrderRow{{OrderID: "o-1", MessageID: lua.MessageID("r-a"), RID: "r-a", Result: pipeline.OrderCreated},
			{OrderID: "o-2", MessageID: lua.MessageID("r-b"), RID: "r-b", Result: pipeline.OrderRejected}},
	}
	f.Pipeline = ev
	return withPipelineReleases(f)
}

// withPipelineReleases adds the pipeline's releases to f's history, as a
// run does.
func withPipelineReleases(f *Facts) *Facts {
	f.Ops = WithPipelineReleases(&history.History{Ops: f.Ops}, f.Pipeline, at(0)).Ops
	return f
}

// idlePipeline is a pipeline run where nothing was reserved.
func idlePipeline() *Facts {
	f := untouched()
	f.Pipeline = &PipelineEvidence{Drained: true}
	return f
}

type fixture struct {
	name  string
	facts func() *Facts
}

// ok: the correct histories each check passes on.
var okFixtures = map[string][]fixture{
	"L1": {{"the unit released after the sell-out sold again 0.8 s later (TTL 1 s)", func() *Facts {
		return flagged(2*time.Second, 2800*time.Millisecond)
	}}},
	"I1": {{"sold out", soldOut}, {"with a release", withRelease}},
	"I2": {{"sold out", soldOut}, {"with a release", withRelease}},
	"I3": {{"sold out", soldOut}, {"sold again after a release", withRelease}},
	"I4": {{"sold out", soldOut}, {"reserved again after a release", func() *Facts {
		f := withRelease()
		f.Ops = append(f.Ops, reserveOp(2, 40, lua.Accepted, "r-e"))
		f.Records["r-e"] = rec(2, lua.StatusReserved)
		return f
	}}},
	"I5": {{"a replay answered alike", soldOut}, {"a re-send answered its own result", func() *Facts {
		f := soldOut()
		f.Ops[1].Sends = 2
		f.OwnReservation[UserRequest{2, 2}] = "r-b"
		f.Requests[RequestKey{0, 2}] = RequestFact{Found: true, Result: lua.RequestResult{Code: lua.Accepted, ReservationID: "r-b", UserID: history.UserID(2)}}
		return f
	}}, {"a re-send answered alike, the cached results not exposed", func() *Facts {
		f := soldOut()
		f.Ops[1].Sends = 2
		f.OwnReservation[UserRequest{2, 2}] = "r-b"
		f.Unexposed = map[sut.Fact]bool{sut.Requests: true}
		return f
	}}, {"a reused request id refused", func() *Facts {
		f := soldOut()
		f.Ops = append(f.Ops, reserveOp(9, 1, lua.RequestIDConflict, ""))
		f.Requests[RequestKey{0, 1}] = RequestFact{Found: true, Result: lua.RequestResult{Code: lua.Accepted, ReservationID: "r-a", UserID: history.UserID(1)}}
		return f
	}}},
	"I6": {{"sold out", soldOut}},
	"I10": {{"a confirmed reservation kept, an unconfirmed one lost", func() *Facts {
		f := waitConfirmedFacts()
		delete(f.Records, "r-b") // lost, but never confirmed: I6's, not I10's
		return f
	}}},
	"I7": {{"executed", func() *Facts {
		return withUnknown(soldOut(), RequestFact{Found: true, Result: lua.RequestResult{Code: lua.SoldOut, UserID: history.UserID(5)}})
	}}, {"not executed", func() *Facts { return withUnknown(soldOut(), RequestFact{}) }}},
	"I8": {{"released once, repeat ALREADY_RELEASED", withRelease}},
	"I9": {{"sold out", soldOut}, {"SOLD_OUT only before a release", func() *Facts {
		f := withRelease()
		f.Ops = f.Ops[:len(f.Ops)-1] // nobody bought the released unit back
		delete(f.Records, "r-d")
		f.Stock = []lua.Stock{{Initial: 2, Available: 1, Reserved: 1, ReleasedTotal: 1}}
		return f
	}}},
	"P1": {{"ordered and released", piped}},
	"H1": {{"sold out", soldOut}, {"released, repeated ALREADY_RELEASED, sold again", withRelease}},
	"P2": {{"all terminal after the drain", piped}},
	"P3": {{"transitions in the machine", piped}},
	"P4": {{"one order, a duplicate delivery deduped", func() *Facts {
		f := piped()
		ev := f.Pipeline
		ev.Sends = append(ev.Sends, pipeline.Send{MessageID: lua.MessageID("r-a"), RID: "r-a", Outcome: "timeout", Stored: true})
		ev.Deliveries = append(ev.Deliveries, pipeline.Delivery{MessageID: lua.MessageID("r-a"), RID: "r-a", Send: 3, Copy: 2})
		return f
	}}},
	"P5": {{"released through RELEASE_PENDING", piped}},
	"K1": {{"every key expires by retention", keysClean}},
	"K2": {{"counters read, nothing evicted", evictionsNone}},
	"A1": {{"the pre-flight found nothing", func() *Facts {
		f := soldOut()
		f.Preflight = &sut.Preflight{System: "cluster-safe"}
		return f
	}}},
	"R1": {{"every round saw the service's connections through the proxies, during a latency fault too", func() *Facts {
		return routed(func(r *ServiceRoutingFacts) {
			r.Add(0.5, 3, nil, nil)
			r.Add(1.0, 3, nil, []string{"latency"})
		})
	}}},
}

// routed is soldOut with the service child's connection rounds add makes.
func routed(add func(*ServiceRoutingFacts)) *Facts {
	f := soldOut()
	f.Service = &ServiceRoutingFacts{}
	add(f.Service)
	return f
}

// bad: broken histories, each caught by the check.
var badFixtures = map[string][]fixture{
	"H1": {{"a released user refused USER_ALREADY_RESERVED: the marker was left", func() *Facts {
		f := withRelease()
		o := reserveOp(2, 40, lua.UserAlreadyReserved, "r-b")
		o.Kind = history.KindReturn
		f.Ops = append(f.Ops, o)
		return f
	}}, {"SOLD_OUT while the released unit was in stock", func() *Facts {
		f := withRelease()
		f.Ops = append(f.Ops, reserveOp(5, 25, lua.SoldOut, ""))
		return f
	}}},
	"L1": {{"a flag that never expires: the released unit never sold again", func() *Facts {
		return flagged(2*time.Second, -1)
	}}, {"sold again only 2.5 s after the release (TTL 1 s)", func() *Facts {
		return flagged(2*time.Second, 4500*time.Millisecond)
	}}},
	"I1": {{"available drifted", func() *Facts {
		f := soldOut()
		f.Stock[0].Available = 1
		return f
	}}, {"a transient violation sampled during the run", func() *Facts {
		f := soldOut()
		f.Samples = []history.StockSample{{At: 5 * milli, Stock: lua.Stock{Initial: 2, Available: -1, Reserved: 2}}}
		return f
	}}},
	"I2": {{"reserved counts a record that does not exist", func() *Facts {
		f := soldOut()
		delete(f.Records, "r-b")
		return f
	}}, {"a release not counted", func() *Facts {
		f := withRelease()
		f.Stock[0].ReleasedTotal = 0
		return f
	}}},
	"I3": {{"more held than stock", func() *Facts {
		f := soldOut()
		f.Planned = []int64{1}
		f.Stock = []lua.Stock{{Initial: 1, Available: -1, Reserved: 2}}
		return f
	}}},
	"I4": {{"a user holds two live reservations", func() *Facts {
		f := soldOut()
		f.Records["r-c"] = rec(1, lua.StatusReserved)
		return f
	}}, {"a user told ACCEPTED twice", func() *Facts {
		f := soldOut()
		f.Ops = append(f.Ops, reserveOp(1, 20, lua.Accepted, "r-c"))
		return f
	}}},
	"I5": {{"a replay answered differently", func() *Facts {
		f := soldOut()
		f.Ops[3].Outcome, f.Ops[3].RID = history.Outcome(lua.SoldOut), ""
		return f
	}}, {"a conflict leaked the reservation", func() *Facts {
		f := soldOut()
		f.Ops = append(f.Ops, reserveOp(9, 1, lua.RequestIDConflict, "r-a"))
		return f
	}}, {"a re-send answered another reservation", func() *Facts {
		f := soldOut()
		f.Ops[1].Sends = 2
		f.OwnReservation[UserRequest{2, 2}] = "r-own"
		return f
	}}, {"refused USER_ALREADY_RESERVED for its own reservation", func() *Facts {
		f := soldOut()
		f.Ops = append(f.Ops, reserveOp(1, 7, lua.UserAlreadyReserved, "r-a"))
		f.OwnReservation[UserRequest{1, 7}] = "r-a" // request 7 created r-a itself
		return f
	}}, {"a re-send answered DUPLICATE_REQUEST", func() *Facts {
		f := soldOut()
		f.Ops[1].Sends, f.Ops[1].Outcome, f.Ops[1].RID = 2, history.Outcome(lua.DuplicateRequest), ""
		f.Unexposed = map[sut.Fact]bool{sut.Requests: true} // an adapter: no cached results
		return f
	}}, {"Redis caches another owner than the answers", func() *Facts {
		f := soldOut()
		f.Ops = append(f.Ops, reserveOp(9, 1, lua.RequestIDConflict, ""))
		f.Requests[RequestKey{0, 1}] = RequestFact{Found: true, Result: lua.RequestResult{Code: lua.Accepted, ReservationID: "r-a", UserID: history.UserID(9)}}
		return f
	}}},
	"I6": {{"an acknowledged reservation vanished", func() *Facts {
		f := soldOut()
		delete(f.Records, "r-a")
		return f
	}}},
	"I10": {{"a WAIT-confirmed reservation vanished", func() *Facts {
		f := waitConfirmedFacts()
		delete(f.Records, "r-a")
		return f
	}}},
	"I7": {{"an UNKNOWN whose result cannot be read", func() *Facts {
		return withUnknown(soldOut(), RequestFact{Err: "look up request r5: WRONGTYPE"})
	}}},
	"I8": {{"released twice", func() *Facts {
		f := withRelease()
		f.Ops = append(f.Ops, releaseOp(2, "r-b", lua.CompensateReleased, 25*milli))
		return f
	}}},
	"I9": {{"SOLD_OUT while holding stock", func() *Facts {
		f := soldOut()
		f.Stock = []lua.Stock{{Initial: 2, Available: 1, Reserved: 1}}
		return f
	}}, {"demand met stock, stock left", func() *Facts {
		f := soldOut()
		f.Ops = f.Ops[:2] // two users served, no SOLD_OUT, one unit still there
		f.Stock = []lua.Stock{{Initial: 2, Available: 1, Reserved: 1}}
		return f
	}}},
	"P1": {{"an order on a released reservation", func() *Facts {
		f := piped()
		f.Pipeline.Orders[1].Result = pipeline.OrderCreated
		return f
	}}, {"more orders than stock", func() *Facts {
		f := piped()
		f.Planned = []int64{0}
		return f
	}}},
	"P2": {{"a reservation stuck after the drain", func() *Facts {
		f := piped()
		f.Records["r-c"] = rec(3, lua.StatusEnqueued)
		return f
	}}, {"send_pending not empty", func() *Facts {
		f := piped()
		f.SendPendingLeft[0] = 1
		return f
	}}},
	"P3": {{"a transition outside the machine", func() *Facts {
		f := piped()
		f.Pipeline.Events[0].Target = lua.StatusOrderCreated
		return f
	}}, {"a terminal status left", func() *Facts {
		f := piped()
		f.Pipeline.Events = append(f.Pipeline.Events,
			transition(pipeline.StageExpiry, "r-a", 1, lua.StatusReserved, lua.StatusReleasePending, lua.TransitionIdempotent, 50))
		return f
	}}},
	"P4": {{"two orders for one reservation", func() *Facts {
		f := piped()
		f.Pipeline.Orders = append(f.Pipeline.Orders, pipeline.OrderRow{OrderID: "o-3", MessageID: lua.MessageID("r-a"), RID: "r-a", Result: pipeline.OrderCreated})
		return f
	}}, {"sent under another message id", func() *Facts {
		f := piped()
		f.Pipeline.Sends[0].MessageID = "reserve-order:r-a:v2"
		return f
	}}},
	"P5": {{"released from ENQUEUED without RELEASE_PENDING", func() *Facts {
		f := piped()
		f.Pipeline.Events = append(f.Pipeline.Events, compensate(pipeline.StageExpiry, "r-a", 1, lua.CompensateReleased, lua.StatusReleased, 15))
		return f
	}}, {"a message consumed after its reservation was released", func() *Facts {
		f := piped()
		f.Pipeline.Events[2].Code, f.Pipeline.Events[2].Status = int64(lua.TransitionIllegal), lua.StatusReleased
		return f
	}}},
	"K1": {{"reservation records without a TTL", keysWithoutTTL}, {"a request shard beyond retention", keysBeyondRetention}},
	"K2": {{"a master evicted keys", evictionsOnAMaster}},
	"A1": {{"a key the call does not pass in KEYS", func() *Facts {
		f := untouched()
		f.Preflight = &sut.Preflight{System: "keys-from-argv", Findings: []sut.Finding{{Problem: "not cluster-safe", Kind: "key-not-in-keys",
			Where: "keys-from-argv.lua:11", Keys: []string{"buyers:act1"}, Detail: "SISMEMBER touches \"buyers:act1\""}}}
		return f
	}}},
	"R1": {{"the service reached a node at its own address while a latency fault acted on the proxies", func() *Facts {
		return routed(func(r *ServiceRoutingFacts) {
			r.Add(0.5, 2, nil, nil)
			r.Add(1.0, 2, []string{"127.0.0.1:30001"}, []string{"latency"})
		})
	}}, {"the service never held a connection through the proxies", func() *Facts {
		return routed(func(r *ServiceRoutingFacts) { r.Add(0.5, 0, nil, nil); r.Add(1.0, 0, nil, []string{"latency"}) })
	}}},
}

// vacuous: histories that give the check nothing to judge.
var vacuousFixtures = map[string][]fixture{
	"H1": {{"nothing reached the script", untouched}},
	"L1": {{"the only release came too near the end to judge", func() *Facts {
		return flagged(5500*time.Millisecond, -1)
	}}},
	"I1": {{"nothing reached the script", untouched}},
	"I2": {{"nothing reached the script", untouched}},
	"I3": {{"only SOLD_OUT answers", func() *Facts {
		f := untouched()
		f.Ops = []history.Op{reserveOp(1, 1, lua.SoldOut, "")}
		return f
	}}},
	"I4": {{"nothing reached the script", untouched}},
	"I5": {{"each request answered once", func() *Facts {
		f := soldOut()
		f.Ops = f.Ops[:3]
		return f
	}}},
	"I6": {{"every call errored", func() *Facts {
		f := untouched()
		f.Ops = []history.Op{{Kind: history.KindFresh, User: 1, Req: 1, Outcome: history.OutcomeError, Sends: 1}}
		return f
	}}},
	"I10": {{"no WAIT sent", soldOut}, {"WAIT sent, never confirmed, reservation lost", func() *Facts {
		f := waitConfirmedFacts()
		f.Ops[0].Flags &^= history.FlagWaitConfirmed
		delete(f.Records, "r-a")
		return f
	}}},
	"I7": {{"no UNKNOWN", soldOut}},
	"I8": {{"no compensation", soldOut}, {"compensations released nothing", func() *Facts {
		f := soldOut()
		f.Ops = append(f.Ops, releaseOp(3, "r-x", lua.CompensateNotFound, 20*milli))
		return f
	}}},
	"I9": {{"demand below stock, no SOLD_OUT", func() *Facts {
		f := untouched()
		f.Ops = []history.Op{reserveOp(1, 1, lua.Accepted, "r-a")}
		f.Records["r-a"] = rec(1, lua.StatusReserved)
		f.Stock = []lua.Stock{{Initial: 2, Available: 1, Reserved: 1}}
		return f
	}}},
	"P1": {{"nothing reserved", idlePipeline}},
	"P2": {{"nothing reserved", idlePipeline}},
	"P3": {{"nothing reserved", idlePipeline}},
	"P4": {{"nothing reserved", idlePipeline}},
	"P5": {{"nothing reserved", idlePipeline}},
	"K1": {{"only the set-up keys", keysSetUpOnly}, {"keys not read", keysNotRead}},
	"K2": {{"counters not read", soldOut}, {"no node read at both ends", evictionsUnread}},
	"A1": {{"not an adapter file: no pre-flight", soldOut}},
	"R1": {{"no service child", soldOut}, {"the service's connections never read", func() *Facts {
		return routed(func(*ServiceRoutingFacts) {})
	}}},
}

func judgeOne(t *testing.T, id string, f *Facts) Check {
	t.Helper()
	inv, ok := LookupInvariant(id)
	if !ok {
		t.Fatalf("no check %s in the table", id)
	}
	return inv.judge(f)
}

func TestEveryInvariantHasFixtures(t *testing.T) {
	for _, inv := range Invariants() {
		if inv.EndToEnd {
			continue // its fixtures are EndToEndFacts: TestEndToEndChecksOnFixtures (checker_e2e_test.go)
		}
		if len(okFixtures[inv.ID]) == 0 || len(badFixtures[inv.ID]) == 0 || len(vacuousFixtures[inv.ID]) == 0 {
			t.Errorf("%s: want at least one ok, one bad and one vacuous fixture (have %d, %d, %d)",
				inv.ID, len(okFixtures[inv.ID]), len(badFixtures[inv.ID]), len(vacuousFixtures[inv.ID]))
		}
		if inv.ID == "" || inv.Name == "" || inv.Contract == "" || inv.Judge == nil || strings.Contains(inv.Contract, "\n") {
			t.Errorf("incomplete declaration %+v", inv)
		}
		if inv.Vacuous != nil && inv.SkipWhen == "" {
			t.Errorf("%s: may skip but does not say when", inv.ID)
		}
	}
	for _, m := range []map[string][]fixture{okFixtures, badFixtures, vacuousFixtures} {
		for id := range m {
			if _, ok := LookupInvariant(id); !ok {
				t.Errorf("fixture for %s, which is not in the table", id)
			}
		}
	}
}

func TestJudgePassesCorrectHistories(t *testing.T) {
	for id, fs := range okFixtures {
		for _, fx := range fs {
			t.Run(id+"/"+fx.name, func(t *testing.T) {
				c := judgeOne(t, id, fx.facts())
				if c.Status != StatusPass {
					t.Fatalf("%s %s on a correct history: %s %v", id, c.Status, c.Detail, c.Evidence)
				}
			})
		}
	}
}

func TestJudgeCatchesBrokenHistories(t *testing.T) {
	for id, fs := range badFixtures {
		for _, fx := range fs {
			t.Run(id+"/"+fx.name, func(t *testing.T) {
				c := judgeOne(t, id, fx.facts())
				if c.Status != StatusFail {
					t.Fatalf("%s did not catch it: %s %s %v", id, c.Status, c.Detail, c.Evidence)
				}
				if len(c.Evidence) == 0 || c.Detail == "" {
					t.Fatalf("%s failed without detail or evidence", id)
				}
			})
		}
	}
}

func TestJudgeSkipsVacuousHistories(t *testing.T) {
	for id, fs := range vacuousFixtures {
		for _, fx := range fs {
			t.Run(id+"/"+fx.name, func(t *testing.T) {
				c := judgeOne(t, id, fx.facts())
				if c.Status != StatusSkip || c.Detail == "" {
					t.Fatalf("%s %s on a history with nothing to judge: %q", id, c.Status, c.Detail)
				}
				t.Logf("%s skip: %s", id, c.Detail)
			})
		}
	}
}

// A failure is never hidden by vacuity: a corrupted stock on a run that
// sent nothing still fails I1 and I2.
func TestVacuityNeverHidesAFailure(t *testing.T) {
	f := untouched()
	f.Stock[0].Reserved = 1
	for _, id := range []string{"I1", "I2"} {
		if c := judgeOne(t, id, f); c.Status != StatusFail {
			t.Errorf("%s %s: %s", id, c.Status, c.Detail)
		}
	}
}

func TestChecksThatDoNotApply(t *testing.T) {
	f := badFixtures["I9"][0].facts()
	f.FaultsInjected = true
	if c := judgeOne(t, "I9", f); c.Status != StatusSkip || !strings.Contains(c.Detail, "faults were injected; 1 units left unsold") {
		t.Errorf("I9 under faults: %s %q", c.Status, c.Detail)
	}
	f = badFixtures["P2"][0].facts()
	f.Pipeline.Drained = false
	if c := judgeOne(t, "P2", f); c.Status != StatusSkip || !strings.Contains(c.Detail, "no drain phase ran; 1 reservations not terminal") {
		t.Errorf("P2 without a drain: %s %q", c.Status, c.Detail)
	}
	f = badFixtures["I2"][0].facts()
	f.Generator = history.Generator{Index: 1, Count: 2}
	for _, inv := range Invariants() {
		if inv.Pipeline {
			continue
		}
		c := inv.judge(f)
		if want := inv.WholeLoad; want != (c.Status == StatusSkip && c.Evidence["judged_on"] == "merge") {
			t.Errorf("%s on a split generator: %s %q", inv.ID, c.Status, c.Detail)
		}
	}
}

// JudgeFacts gives the table's checks in its order, the pipeline checks
// only with a pipeline.
func TestJudgeFactsOrderAndPipeline(t *testing.T) {
	ids := func(r *CheckReport) []string {
		var out []string
		for _, c := range r.Checks {
			out = append(out, c.ID)
		}
		return out
	}
	var core, all []string // all: without the end-to-end checks, whose facts these fixtures lack
	for _, inv := range Invariants() {
		if inv.LocalSoldOut || inv.Service {
			continue // only with a local sold-out flag (below), against a service (service_test.go)
		}
		if !inv.Pipeline {
			core = append(core, inv.ID)
		}
		if !inv.EndToEnd {
			all = append(all, inv.ID)
		}
	}
	if got := ids(JudgeFacts(soldOut())); !slices.Equal(got, core) {
		t.Errorf("without a pipeline: %v, want %v", got, core)
	}
	rep := JudgeFacts(piped())
	if got := ids(rep); !slices.Equal(got, all) {
		t.Errorf("with a pipeline: %v, want %v", got, all)
	}
	if got := ids(JudgeFacts(flagged(2*time.Second, -1))); !slices.Contains(got, "L1") || slices.Index(got, "L1") != len(core) {
		t.Errorf("with a local sold-out flag: %v, want L1 after the core checks %v", got, core)
	}
	if !rep.Passed() {
		t.Errorf("a correct pipeline run failed %v", rep.Failed())
	}
	lost := JudgeFacts(badFixtures["I6"][0].facts())
	if !slices.Equal(lost.LostAcks, []string{"r-a"}) || !slices.Equal(lost.Failed(), []string{"I2", "I6"}) {
		t.Errorf("lost acks %v, failed %v", lost.LostAcks, lost.Failed())
	}
	unk := JudgeFacts(okFixtures["I7"][0].facts())
	if unk.Unknown.Total != 1 || unk.Unknown.Executed != 1 {
		t.Errorf("unknown summary %+v", unk.Unknown)
	}
}

// A run that judged nothing (every call failed) skips every check, and
// the report says it may not pass; a run that judged one does not.
func TestAllRequiredSkipped(t *testing.T) {
	f := untouched()
	for i := range 50 {
		f.Ops = append(f.Ops, history.Op{ID: uint32(i), Kind: history.KindFresh, User: uint32(i), Req: uint32(i), Outcome: history.OutcomeError, Sends: 1})
	}
	rep := JudgeFacts(f)
	for _, c := range rep.Checks {
		if c.Status != StatusSkip {
			t.Errorf("%s %s on an all-error history: %s", c.ID, c.Status, c.Detail)
		}
	}
	skipped, why := rep.AllRequiredSkipped(nil)
	if !skipped || !strings.Contains(why, "I1 (the stock never moved") || !strings.Contains(why, "I3 (no operation was answered ACCEPTED") {
		t.Errorf("all-error run: %v %q", skipped, why)
	}
	if skipped, why := rep.AllRequiredSkipped([]string{"i3", "P2"}); !skipped || !strings.Contains(why, "P2 (not in the report)") {
		t.Errorf("required i3, P2: %v %q", skipped, why)
	}
	if skipped, _ := JudgeFacts(soldOut()).AllRequiredSkipped(nil); skipped {
		t.Error("a sold-out run judged nothing?")
	}
	if skipped, _ := JudgeFacts(soldOut()).AllRequiredSkipped([]string{"I7", "I8"}); !skipped {
		t.Error("I7 and I8 both skip on a run without UNKNOWN or release")
	}
	if skipped, _ := (&CheckReport{}).AllRequiredSkipped(nil); !skipped {
		t.Error("a report without checks judged something?")
	}
}

// docs/CHECKS.md's invariant table is the table's (its one copy): edit
// the table (invariants.go) and paste InvariantsMarkdown() between the
// markers.
func TestInvariantTableDocMatches(t *testing.T) {
	raw, err := os.ReadFile("../docs/CHECKS.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- invariants:begin (generated from checks/table.go) -->\n", "<!-- invariants:end -->"
	_, rest, ok := strings.Cut(string(raw), begin)
	got, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("docs/CHECKS.md lacks the markers %q … %q", begin, end)
	}
	if want := InvariantsMarkdown(); got != want {
		t.Fatalf("docs/CHECKS.md's invariant table drifted from the table; put this between the markers:\n%s", want)
	}
}

// The JUnit report has one test case per check of the report, in the
// table's order, named "<id> <name>".
func TestJUnitCasesFollowTheTable(t *testing.T) {
	chk := JudgeFacts(piped())
	rep := &reports.Report{Scenario: "fixture", Passed: true}
	for _, c := range chk.Checks {
		rep.Invariants = append(rep.Invariants, reports.Invariant{ID: c.ID, Name: c.Name, Status: reports.Status(c.Status), Detail: c.Detail, Evidence: c.Evidence})
	}
	var buf bytes.Buffer
	if err := reports.WriteJUnit(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var prev int
	for _, inv := range Invariants() {
		if inv.EndToEnd || inv.LocalSoldOut || inv.Service {
			continue // not judged on these facts
		}
		i := strings.Index(buf.String(), `name="`+inv.ID+" "+inv.Name+`"`)
		if i < 0 || i < prev {
			t.Fatalf("junit.xml lacks %s %s in table order:\n%s", inv.ID, inv.Name, buf.String())
		}
		prev = i
	}
}

// Evidence stays JSON: every check's evidence of a pipeline run marshals.
func TestEvidenceMarshals(t *testing.T) {
	for _, c := range JudgeFacts(piped()).Checks {
		if _, err := json.Marshal(c.Evidence); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
	}
}

// BenchmarkJudgeFacts judges every core check over a synthetic sold-out
// history of a million operations (1,000 accepted over 4 buckets, the rest
// SOLD_OUT, 5% replays): the pure half of the checker, without Redis.
// Reports the judging time per operation.
func BenchmarkJudgeFacts(b *testing.B) {
	const n, stock, buckets = 1_000_000, 1000, 4
	f := &Facts{Records: map[string]ReservationRecord{}, Requests: map[RequestKey]RequestFact{}, OwnReservation: map[UserRequest]string{}}
	for bk := 0; bk < buckets; bk++ {
		f.Planned = append(f.Planned, stock/buckets)
		f.Stock = append(f.Stock, lua.Stock{Initial: stock / buckets, Reserved: stock / buckets})
		f.SendPendingLeft, f.ExpiryLeft = append(f.SendPendingLeft, 0), append(f.ExpiryLeft, 0)
	}
	f.Ops = make([]history.Op, 0, n)
	for i := uint32(0); i < n; i++ {
		o := reserveOp(i, i, lua.SoldOut, "")
		o.ID, o.Bucket = i, uint16(i%buckets)
		switch {
		case i < stock:
			o.Outcome, o.RID = history.Outcome(lua.Accepted), history.RequestID(i)
			f.Records[o.RID] = ReservationRecord{Status: lua.StatusReserved, User: history.UserID(i), Bucket: uint32(o.Bucket)}
		case i%20 == 0: // a replay of an earlier accepted request
			o.User, o.Req, o.Kind, o.Bucket = i%stock, i%stock, history.KindReplay, uint16(i%stock%buckets)
			o.Outcome, o.RID = history.Outcome(lua.Accepted), history.RequestID(i%stock)
		}
		f.Ops = append(f.Ops, o)
	}
	b.ResetTimer()
	for range b.N {
		f.memo.derived = nil
		rep := JudgeFacts(f)
		if !rep.Passed() {
			b.Fatalf("failed %v", rep.Failed())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/op-judged")
}

// TestI5SaysWhatItDidNotCompare: a system without cached request results
// (an adapter) has I5 judged on its answers, and the detail says the
// cached results were not compared — never a silent pass, never a skip.
func TestI5SaysWhatItDidNotCompare(t *testing.T) {
	f := soldOut()
	f.Ops[1].Sends = 2
	f.OwnReservation[UserRequest{2, 2}] = "r-b"
	f.Unexposed = map[sut.Fact]bool{sut.Requests: true}
	for _, c := range JudgeFacts(f).Checks {
		if c.ID != "I5" {
			continue
		}
		if c.Status != StatusPass || !strings.Contains(c.Detail, "not compared: this system under test does not expose "+string(sut.Requests)) {
			t.Fatalf("I5 = %s %q, want pass saying the cached results were not compared", c.Status, c.Detail)
		}
		return
	}
	t.Fatal("I5 not judged")
}
