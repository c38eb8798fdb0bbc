package checks

import (
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
)

// lsoOps builds a one-bucket history: SOLD_OUT at 1 s, a release sent at
// releaseAt, local answers every 100 ms, a sale answered at saleAt (none
// when saleAt < 0), and the load running to end.
func lsoOps(releaseAt, saleAt, end time.Duration) []history.Op {
	ms := time.Millisecond
	ops := []history.Op{
		{ID: 0, Kind: history.KindFresh, Outcome: history.Outcome(lua.Accepted), RID: "r0", Start: 0, End: ms, Attempts: 1},
		{ID: 1, Kind: history.KindFresh, Outcome: history.Outcome(lua.SoldOut), Start: time.Second, End: time.Second + ms, Attempts: 1},
		{ID: 2, Kind: history.KindRelease, Outcome: history.Outcome(lua.CompensateReleased), RID: "r0", Start: releaseAt, End: releaseAt + 2*ms},
	}
	for t := time.Second + 100*ms; t <= end; t += 100 * ms {
		ops = append(ops, history.Op{ID: uint32(len(ops)), Kind: history.KindFresh, Outcome: history.OutcomeLocalSoldOut, Start: t, End: t})
	}
	if saleAt >= 0 {
		ops = append(ops, history.Op{ID: uint32(len(ops)), Kind: history.KindFresh, Outcome: history.Outcome(lua.Accepted), RID: "r9", Start: saleAt - ms, End: saleAt, Attempts: 1})
	}
	return ops
}

func judgeL1Of(ops []history.Op, ttl time.Duration) Check {
	f := &Facts{Ops: ops, Stock: []lua.Stock{{Initial: 1}}, Planned: []int64{1}, LocalSoldOutTTL: ttl}
	for _, c := range JudgeFacts(f).Checks {
		if c.ID == "L1" {
			return c
		}
	}
	return Check{}
}

// A flag that expires lets the released unit sell within the TTL: L1
// passes with the window measured; a flag that never expires leaves it
// unsold (L1 fails); one that expires too late fails too; without a flag
// L1 is not in the report.
func TestL1RecoveryWithinTTL(t *testing.T) {
	ttl := time.Second
	ok := judgeL1Of(lsoOps(2*time.Second, 2800*time.Millisecond, 6*time.Second), ttl)
	if ok.Status != StatusPass || ok.Evidence["recovered_within_ttl"] != 1 {
		t.Fatalf("expiring flag: %+v", ok)
	}
	r := AnalyzeLocalSoldOut((&history.History{Ops: lsoOps(2*time.Second, 2800*time.Millisecond, 6*time.Second)}).All(), 1, ttl)
	if r.FalseSoldOutWindowMs.Max != 800 || r.FalseSoldOutAnswers != 8 || r.AnsweredLocally == 0 || r.RedisCallsSaved != r.AnsweredLocally {
		t.Fatalf("figures: %+v", r)
	}
	never := judgeL1Of(lsoOps(2*time.Second, -1, 6*time.Second), ttl)
	if never.Status != StatusFail || never.Evidence["unrecovered"] != 1 {
		t.Fatalf("never-expiring flag: %+v", never)
	}
	late := judgeL1Of(lsoOps(2*time.Second, 4500*time.Millisecond, 6*time.Second), ttl)
	if late.Status != StatusFail {
		t.Fatalf("recovered after TTL + slack: %+v", late)
	}
	nearEnd := judgeL1Of(lsoOps(5500*time.Millisecond, -1, 6*time.Second), ttl)
	if nearEnd.Status != StatusSkip {
		t.Fatalf("release too near the end is not judged: %+v", nearEnd)
	}
	if c := judgeL1Of(lsoOps(2*time.Second, -1, 6*time.Second), 0); c.ID != "" {
		t.Fatalf("L1 judged without a flag: %+v", c)
	}
}

// A release whose reply was lost and whose same-id re-send answered
// ALREADY_RELEASED freed its unit: if that unit is never sold again L1
// fails, as for one answered RELEASED. A second operation on the same
// reservation (one answered RELEASED, the other ALREADY_RELEASED after a
// lost reply) frees one unit, not two: the one sale recovers it.
func TestL1CountsAReleaseWhoseReplyWasLost(t *testing.T) {
	ttl := time.Second
	lost := func(ops []history.Op) []history.Op {
		ops[2].Outcome, ops[2].Flags, ops[2].Sends = history.Outcome(lua.CompensateAlreadyReleased), history.FlagHadUnknown, 2
		return ops
	}
	if c := judgeL1Of(lost(lsoOps(2*time.Second, -1, 6*time.Second)), ttl); c.Status != StatusFail || c.Evidence["unrecovered"] != 1 {
		t.Fatalf("a lost-reply release never sold again: %s %v", c.Status, c.Evidence)
	}
	if c := judgeL1Of(lost(lsoOps(2*time.Second, 2800*time.Millisecond, 6*time.Second)), ttl); c.Status != StatusPass {
		t.Fatalf("a lost-reply release sold again within the TTL: %s %v", c.Status, c.Evidence)
	}
	ops := lsoOps(2*time.Second, 2800*time.Millisecond, 6*time.Second)
	dup := ops[2]
	dup.ID, dup.Start, dup.End = uint32(len(ops)), dup.Start+time.Millisecond, dup.End+5*time.Millisecond
	dup.Outcome, dup.Flags, dup.Sends = history.Outcome(lua.CompensateAlreadyReleased), history.FlagHadUnknown, 2
	if c := judgeL1Of(append(ops, dup), ttl); c.Status != StatusPass || c.Evidence["releases_after_sell_out"] != 1 {
		t.Fatalf("one reservation released by one of two operations: %s %v", c.Status, c.Evidence)
	}
}
