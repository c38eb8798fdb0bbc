package checks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// scripted drives the reference path by hand and records a history exactly
// as the engine does, so the checker can be shown a real run whose Redis
// state is then corrupted behind the script's back.
type scripted struct {
	t   *testing.T
	tgt target
	e   *runner.Stepper
	h   history.History
}

func newScripted(t *testing.T, stock int64, buckets uint32) *scripted {
	tgt := newTarget(t, stock, buckets)
	e := runner.NewStepper(smallConfig(), tgt.sale(), tgt.sys())
	return &scripted{t: t, tgt: tgt, e: e}
}

func (s *scripted) do(k history.Kind, user, req uint32) history.Op {
	s.t.Helper()
	op := s.e.Do(context.Background(), history.Op{ID: uint32(len(s.h.Ops)), Kind: k, User: user, Req: req})
	if op.Outcome < 0 {
		s.t.Fatalf("op %+v failed: %s", op, op.ErrClass)
	}
	s.h.Ops = append(s.h.Ops, op)
	return op
}

func (s *scripted) verify() *CheckReport {
	s.t.Helper()
	rep, err := Verify(context.Background(), s.tgt, CheckInput{History: &s.h})
	if err != nil {
		s.t.Fatal(err)
	}
	return rep
}

func (s *scripted) scope(user uint32) lua.Scope {
	a := s.tgt.Activity
	return a.Scope(a.BucketOf(history.UserID(user)))
}

// sellOut: users 0..n-1 each reserve once; some replays, a foreign reuse
// and a release, so every check has something to look at.
func (s *scripted) sellOut(n uint32) {
	for u := uint32(0); u < n; u++ {
		s.do(history.KindFresh, u, u)
	}
	s.do(history.KindReplay, 0, 0)
	s.do(history.KindSameUser, 1, 1000)
	s.do(history.KindRelease, 2, 2)
	s.do(history.KindRelease, 2, 2)
}

func wantFail(t *testing.T, rep *CheckReport, id string) {
	t.Helper()
	c := checkByID(t, rep, id)
	if c.Status != StatusFail {
		t.Fatalf("%s did not catch the corruption: %s %s", id, c.Status, c.Detail)
	}
	t.Logf("%s caught it: %s", id, c.Detail)
}

func TestCheckerPassesTheReferencePath(t *testing.T) {
	clustertest.Need(t)
	s := newScripted(t, 5, 1)
	s.sellOut(8)
	rep := s.verify()
	for _, c := range rep.Checks {
		if c.Status == StatusFail {
			t.Fatalf("%s failed on the reference path: %s", c.ID, c.Detail)
		}
	}
	if checkByID(t, rep, "I8").Status != StatusPass || checkByID(t, rep, "I9").Status != StatusPass {
		t.Fatal("I8/I9 did not run")
	}
}

func TestCheckerCatchesCorruption(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	cases := []struct {
		id      string
		corrupt func(s *scripted)
	}{
		{"I1", func(s *scripted) { testRDB.HIncrBy(ctx, s.scope(0).StockKey(), "available", 1) }},
		{"I2", func(s *scripted) { // conserved, but reserved no longer counts the records
			testRDB.HIncrBy(ctx, s.scope(0).StockKey(), "available", -1)
			testRDB.HIncrBy(ctx, s.scope(0).StockKey(), "reserved", 1)
		}},
		{"I3", func(s *scripted) { // the bucket silently holds more than it was given
			testRDB.HIncrBy(ctx, s.scope(0).StockKey(), "available", 3)
			testRDB.HIncrBy(ctx, s.scope(0).StockKey(), "initial", 3)
			for u := uint32(100); u < 104; u++ {
				s.do(history.KindFresh, u, u)
			}
		}},
		{"I4", func(s *scripted) { // a user's marker vanishes; the user reserves again
			testRDB.HIncrBy(ctx, s.scope(0).StockKey(), "available", 1)
			testRDB.HIncrBy(ctx, s.scope(0).StockKey(), "initial", 1)
			testRDB.Del(ctx, s.scope(0).UserKey(history.UserID(0)))
			s.do(history.KindSameUser, 0, 2000)
		}},
		{"I5", func(s *scripted) { // a replay answered differently
			sc := s.scope(3)
			testRDB.HSet(ctx, sc.ReqShardKey(history.RequestID(3)), history.RequestID(3), "15||0|SOLD_OUT|"+history.UserID(3))
			s.do(history.KindReplay, 3, 3)
		}},
		{"I6", func(s *scripted) { // an acknowledged reservation's record is deleted
			rid := s.h.Ops[4].RID
			testRDB.Del(ctx, s.scope(4).ResvKey(rid))
		}},
		{"I7", func(s *scripted) { // an UNKNOWN whose request result cannot be read
			key := s.scope(9).ReqShardKey(history.RequestID(9))
			testRDB.Del(ctx, key)
			testRDB.Set(ctx, key, "not a hash", time.Hour)
			// The activity's teardown scans its request shards as hashes:
			// the string goes first (cleanups run last in, first out).
			s.t.Cleanup(func() { testRDB.Del(context.Background(), key) })
			s.h.Ops = append(s.h.Ops, history.Op{ID: uint32(len(s.h.Ops)), Kind: history.KindFresh, User: 9, Req: 9,
				Bucket: uint16(s.tgt.Activity.BucketOf(history.UserID(9))), Outcome: history.OutcomeUnknown, Flags: history.FlagHadUnknown, Sends: 1})
		}},
		{"I8", func(s *scripted) { // a released reservation is put back to REJECTED and released again
			rid := s.h.Ops[2].RID
			testRDB.HSet(ctx, s.scope(2).ResvKey(rid), "status", "REJECTED")
			s.do(history.KindRelease, 2, 2)
		}},
		{"I9", func(s *scripted) { // the bucket says SOLD_OUT while it holds stock
			sk := s.scope(0).StockKey()
			testRDB.HIncrBy(ctx, sk, "available", -1)
			testRDB.HIncrBy(ctx, sk, "initial", -1)
			s.do(history.KindFresh, 200, 200)
			testRDB.HIncrBy(ctx, sk, "available", 1)
			testRDB.HIncrBy(ctx, sk, "initial", 1)
		}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			s := newScripted(t, 5, 1)
			s.sellOut(8)
			c.corrupt(s)
			rep := s.verify()
			wantFail(t, rep, c.id)
			ev := fmt.Sprint(checkByID(t, rep, c.id).Evidence)
			if strings.TrimSpace(ev) == "" {
				t.Fatal("no evidence")
			}
		})
	}
}

func TestSamplerRecordsTransientViolation(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 10, 1)
	// A run that barely loads (twenty reserves a second) samples the stock
	// every 50 ms through the system's StateReader.
	cfg := runner.DefaultConfig()
	cfg.Shape, cfg.Duration, cfg.Users, cfg.SampleEvery, cfg.Mix = runner.Shape{Kind: "constant", Rate: 20}, 600*time.Millisecond, 10, 50*time.Millisecond, runner.Mix{}
	done := make(chan []history.StockSample)
	go func() {
		res, err := runner.Run(context.Background(), cfg, tgt.sale(), tgt.sys())
		if err != nil {
			t.Error(err)
		}
		done <- res.Samples
	}()
	sk := tgt.Activity.Scope(0).StockKey()
	time.Sleep(150 * time.Millisecond)
	testRDB.HIncrBy(context.Background(), sk, "initial", 1) // broken for a moment…
	time.Sleep(150 * time.Millisecond)
	testRDB.HIncrBy(context.Background(), sk, "initial", -1) // …then repaired
	samples := <-done
	c := judgeI1(&Facts{Stock: []lua.Stock{{Initial: 10, Available: 10}}, Samples: samples})
	if !c.Failed {
		t.Fatalf("a transient violation went unseen: %s (%d samples)", c.Detail, len(samples))
	}
	t.Logf("%s %v", c.Detail, c.Evidence["transient_violations"])
}

// I6 names each lost acknowledged reservation (id, bucket, when
// acknowledged) and counts the units sold a second time: with one of two
// acknowledged reservations gone and the bucket holding 3 acknowledged
// against a stock of 2, one unit was resold.
func TestI6NamesLostAcksAndCountsResold(t *testing.T) {
	f := &Facts{Planned: []int64{2}, Stock: make([]lua.Stock, 1), Records: map[string]ReservationRecord{
		"kept1": {Status: lua.StatusReserved, User: "u1"}, "kept2": {Status: lua.StatusReserved, User: "u2"}}}
	for i, rid := range []string{"kept1", "gone", "kept2"} {
		f.Ops = append(f.Ops, history.Op{ID: uint32(i), User: uint32(i), Req: uint32(i), RID: rid, Kind: history.KindFresh,
			Outcome: history.Outcome(lua.Accepted), End: time.Duration(i+1) * time.Second})
	}
	v := judgeI6(f)
	named, _ := v.Evidence["lost_acks"].([]LostAck)
	if !v.Failed || len(named) != 1 || named[0].ReservationID != "gone" || named[0].AckedAtS != 2 || named[0].Bucket != 0 {
		t.Fatalf("I6 = %+v", v)
	}
	if v.Evidence["resold_units"] != int64(1) {
		t.Errorf("resold_units = %v, want 1", v.Evidence["resold_units"])
	}
	if n, _, ok := FailureCount("I6", v.Evidence); !ok || n != 1 {
		t.Errorf("FailureCount = %d %v", n, ok)
	}
	i3 := judgeI3(f)
	if n, _, ok := FailureCount("I3", i3.Evidence); !i3.Failed || !ok || n != 1 {
		t.Errorf("I3 = %+v", i3)
	}
	// The same history with every record kept: nothing lost, nothing resold.
	f.Records["gone"], f.memo.derived = ReservationRecord{Status: lua.StatusReserved, User: "u3"}, nil
	if v := judgeI6(f); v.Failed || v.Evidence["resold_units"] != int64(0) {
		t.Errorf("no loss: %+v", v)
	}
}

// A master refusing a write for want of in-sync replicas is the cluster's
// mitigation, classified NOREPLICAS, never a path error.
func TestClassifyNoReplicas(t *testing.T) {
	out, class := history.Classify(replyError("NOREPLICAS Not enough good replicas to write."))
	if out != history.OutcomeError || class != history.ErrNoReplicas || class.String() != "NOREPLICAS" {
		t.Fatalf("%v %v", out, class)
	}
}

// replyError is an error reply's text as go-redis hands it over (redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// I3's oversell is a consequence of I6 exactly when every unit sold
// beyond the stock was sold again after a lost acknowledged reservation:
// one lost of three acknowledged against a stock of 2 explains the one
// unit too many; a fourth acknowledged reservation (two too many, one
// lost) is the reserve's own oversell; with nothing lost there is no cause.
func TestI3OversellConsequenceOfLostAcks(t *testing.T) {
	i3 := Invariants()[slices.IndexFunc(Invariants(), func(inv Invariant) bool { return inv.ID == "I3" })]
	facts := func(rids ...string) *Facts {
		f := &Facts{Planned: []int64{2}, Stock: make([]lua.Stock, 1), Unexposed: map[sut.Fact]bool{}, Records: map[string]ReservationRecord{}}
		for i, rid := range rids {
			if rid != "gone" {
				f.Records[rid] = ReservationRecord{Status: lua.StatusReserved, User: fmt.Sprint("u", i)}
			}
			f.Ops = append(f.Ops, history.Op{ID: uint32(i), User: uint32(i), Req: uint32(i), RID: rid, Kind: history.KindFresh,
				Outcome: history.Outcome(lua.Accepted), End: time.Duration(i+1) * time.Second})
		}
		return f
	}
	cases := []struct {
		name string
		f    *Facts
		want string
	}{
		{"one lost, one resold", facts("kept1", "gone", "kept2"), "I6"},
		{"one lost, two oversold", facts("kept1", "gone", "kept2", "kept3"), ""},
		{"nothing lost, one oversold", facts("kept1", "kept2", "kept3"), ""},
	}
	for _, c := range cases {
		got := i3.judge(c.f)
		if got.Status != StatusFail || got.ConsequenceOf != c.want {
			t.Errorf("%s: I3 %s, consequence of %q, want fail and %q (%s)", c.name, got.Status, got.ConsequenceOf, c.want, got.Detail)
		}
	}
}
