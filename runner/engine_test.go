package runner

import (
	"context"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

func checkByID(t *testing.T, rep *CheckReport, id string) Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s", id)
	return Check{}
}

func smallConfig() Config {
	cfg := DefaultConfig()
	cfg.Shape = Shape{Kind: "constant", Rate: 1000}
	cfg.Duration = 2 * time.Second
	cfg.Users = 1500
	cfg.Concurrency = 32
	cfg.Mix = Mix{Replay: 0.05, SameUser: 0.05, ForeignRequest: 0.05, Release: 0.03}
	cfg.SampleEvery = 200 * time.Millisecond
	return cfg
}

func TestOpenLoopRunPassesEveryInvariant(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 500, 2)
	cfg := smallConfig()
	res, err := Run(context.Background(), cfg, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	ops := res.History.Ops
	if n := len(ops); n < 1900 || n > 2000 {
		t.Fatalf("%d ops scheduled in 2 s at 1000/s", n)
	}
	for i, o := range ops {
		if int(o.ID) != i {
			t.Fatalf("history not indexed by id at %d", i)
		}
		if o.Outcome == history.OutcomeDropped {
			continue
		}
		if o.End < o.Start || o.Start < 0 || o.Intended < 0 || o.Sends == 0 {
			t.Fatalf("op %+v has impossible times", o)
		}
	}
	// The pacer sleeps on the kernel's high-resolution timer (internal/sleep),
	// not on ~1 ms grained Go timers, and the run says so.
	if res.Observed.PacerClock != "timerfd" {
		t.Fatalf("pacer clock %q, want timerfd", res.Observed.PacerClock)
	}
	// Open loop: intended times follow the schedule, 1 ms apart, whatever the answers took.
	if d := ops[1000].Intended - ops[999].Intended; d < 999*time.Microsecond || d > 1001*time.Microsecond {
		t.Fatalf("intended spacing %v at 1000/s", d)
	}
	rep, err := Verify(context.Background(), tgt, CheckInput{History: res.History, Samples: res.Samples})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		t.Logf("%s %-24s %-4s %s", c.ID, c.Name, c.Status, c.Detail)
		if c.Status == StatusFail {
			t.Errorf("%s failed on the reference path: %s %v", c.ID, c.Detail, c.Evidence)
		}
	}
	if len(res.Samples) == 0 {
		t.Fatal("the I1 sampler took no sample")
	}
	kinds := map[history.Kind]int{}
	for _, o := range ops {
		kinds[o.Kind]++
	}
	if kinds[history.KindReplay] == 0 || kinds[history.KindSameUser] == 0 || kinds[history.KindForeignRequest] == 0 || kinds[history.KindRelease] == 0 {
		t.Fatalf("mix not exercised: %v", kinds)
	}
}

func TestClosedLoopRuns(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 100, 1)
	cfg := smallConfig()
	cfg.Mode = ModeClosed
	cfg.Concurrency = 8
	cfg.Duration = time.Second
	cfg.MaxOps = 3000
	res, err := Run(context.Background(), cfg, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.History.Ops) == 0 || len(res.History.Ops) > 3000 {
		t.Fatalf("%d ops", len(res.History.Ops))
	}
	if res.Observed.PacerClock != "" {
		t.Fatalf("a closed-loop run reports pacer clock %q", res.Observed.PacerClock)
	}
	rep, err := Verify(context.Background(), tgt, CheckInput{History: res.History})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() {
		t.Fatalf("failed: %v", rep.Failed())
	}
}

func TestWorkloadIsDeterministic(t *testing.T) {
	m := Mix{Replay: 0.1, SameUser: 0.1, ForeignRequest: 0.1, Release: 0.1}
	a, b := NewWorkload(7, 1000, m, nil), NewWorkload(7, 1000, m, nil)
	c := NewWorkload(8, 1000, m, nil)
	same := true
	seen := map[uint32]bool{}
	for i := uint64(0); i < 5000; i++ {
		k1, u1, r1 := a.Op(i)
		k2, u2, r2 := b.Op(i)
		if k1 != k2 || u1 != u2 || r1 != r2 {
			t.Fatalf("op %d differs for one seed", i)
		}
		k3, u3, r3 := c.Op(i)
		if k1 != k3 || u1 != u3 || r1 != r3 {
			same = false
		}
		if u1 >= 1000 {
			t.Fatalf("user %d out of range", u1)
		}
		if k1 == history.KindFresh {
			if uint64(r1) != i {
				t.Fatal("a fresh op must mint its own request")
			}
			if i < 1000 && seen[u1] {
				t.Fatalf("fresh user %d repeated within the first pass over users", u1)
			}
			seen[u1] = true
		} else if uint64(r1) > i {
			t.Fatal("a repeat refers to a future request")
		}
	}
	if same {
		t.Fatal("another seed gave the same workload")
	}
}

// A status query asks about an earlier request of the user who sent it,
// in about its share of the operations; a mix without queries draws none.
func TestWorkloadQueriesAskEarlierRequests(t *testing.T) {
	w := NewWorkload(11, 2000, Mix{Release: 0.1, Query: 0.2}, nil)
	owner := map[uint32]uint32{} // fresh request -> its user
	queries := 0
	for i := uint64(0); i < 10000; i++ {
		k, u, r := w.Op(i)
		switch k {
		case history.KindFresh:
			owner[r] = u
		case history.KindQuery:
			queries++
			if o, ok := owner[r]; !ok || o != u {
				t.Fatalf("op %d queries request %d of user %d: not an earlier request of that user (owner %d, %v)", i, r, u, o, ok)
			}
		}
	}
	if queries < 1800 || queries > 2200 {
		t.Fatalf("%d queries in 10000 ops, want about 2000", queries)
	}
	w = NewWorkload(11, 2000, Mix{Release: 0.1}, nil)
	for i := uint64(0); i < 10000; i++ {
		if k, _, _ := w.Op(i); k == history.KindQuery {
			t.Fatalf("op %d is a query in a mix without them", i)
		}
	}
}

func TestPacersKeepTheirRates(t *testing.T) {
	cases := []struct {
		s    Shape
		want float64 // ops due in the first 10 s
	}{
		{Shape{Kind: "constant", Rate: 100}, 1000},
		{Shape{Kind: "linear", Rate: 100, Slope: 10}, 100*10 + 10*100/2},
		{Shape{Kind: "spike", Rate: 100, Peak: 300, SpikeAt: 2 * time.Second, RampUp: 2 * time.Second, Hold: 2 * time.Second, RampDown: 2 * time.Second}, 100*10 + 200*4},
	}
	for _, c := range cases {
		p, err := NewPacer(c.s)
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		var last time.Duration
		for {
			d := dueTime(p, n, last, time.Hour)
			if d > 10*time.Second {
				break
			}
			if d < last {
				t.Fatalf("%s: op %d due at %v before op %d at %v", c.s.Kind, n, d, n-1, last)
			}
			last = d
			n++
		}
		if diff := float64(n) - c.want; diff < -2 || diff > 2 {
			t.Fatalf("%s: %d ops due in 10 s, want %.0f", c.s.Kind, n, c.want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Shape.Rate = -1
	cfg.Mix.Replay = 0.9
	cfg.Mix.SameUser = 0.5
	err := cfg.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"rate", "mix shares"} {
		if !contains(err.Error(), want) {
			t.Fatalf("error %q does not name %s", err, want)
		}
	}
	cfg = DefaultConfig()
	cfg.Mode = "fast"
	if err := cfg.Validate(); err == nil || !contains(err.Error(), "open or closed") {
		t.Fatalf("mode: %v", err)
	}
}

func contains(s, sub string) bool { return len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0) }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

var _ = lua.Accepted

func TestPhasesContinueOneClockAndOneWorkload(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 200, 1)
	p1 := smallConfig()
	p1.Duration, p1.Mix = time.Second, Mix{}
	p2 := smallConfig()
	p2.Mode, p2.Duration, p2.MaxOps, p2.Concurrency, p2.Mix = ModeClosed, time.Second, 500, 8, Mix{Replay: 1}
	res, err := RunPhases(context.Background(), []Phase{{"sell", p1}, {"replays", p2}}, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Phases) != 2 || res.Phases[1].FirstOp != res.Phases[0].EndOp || res.Phases[1].Start < res.Phases[0].End {
		t.Fatalf("phases %+v", res.Phases)
	}
	replays := 0
	for _, o := range res.History.Ops {
		inSecond := uint64(o.ID) >= res.Phases[1].FirstOp
		if inSecond && o.Intended < res.Phases[1].Start {
			t.Fatalf("op %d of phase 2 intended at %v, before the phase", o.ID, o.Intended)
		}
		if inSecond && o.Kind == history.KindReplay {
			replays++
			if uint64(o.Req) >= res.Phases[1].FirstOp {
				t.Fatalf("phase-2 replay of a request %d that phase 1 did not send", o.Req)
			}
		}
		if !inSecond && o.Kind != history.KindFresh {
			t.Fatalf("phase 1 op %d is %s, its mix is all fresh", o.ID, o.Kind)
		}
	}
	if n := res.Phases[1].EndOp - res.Phases[1].FirstOp; replays < int(n)*9/10 {
		t.Fatalf("%d replays of %d phase-2 ops", replays, n)
	}
	rep, err := Verify(context.Background(), tgt, CheckInput{History: res.History, Samples: res.Samples})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() {
		t.Fatalf("failed %v", rep.Failed())
	}
}

func TestProgressSnapshots(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 100, 1)
	cfg := smallConfig()
	cfg.Duration = 1500 * time.Millisecond
	var snaps []Progress
	res, err := Run(context.Background(), cfg, tgt.Sale(), tgt.System(), WithProgress(300*time.Millisecond, func(p Progress) { snaps = append(snaps, p) }))
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) < 4 {
		t.Fatalf("%d snapshots in 1.5 s at 300 ms", len(snaps))
	}
	last := snaps[len(snaps)-1]
	answered := int64(0)
	for _, o := range res.History.Ops {
		if o.Outcome != history.OutcomeDropped {
			answered++
		}
	}
	if last.Completed != answered || last.InFlight != 0 || last.Scheduled != res.Observed.Scheduled || last.Dropped != res.Observed.Dropped {
		t.Fatalf("final snapshot %+v, history has %d answered; observed %+v", last, answered, res.Observed)
	}
	if mid := snaps[len(snaps)/2]; mid.Rate < 500 || mid.LastP99 <= 0 {
		t.Fatalf("mid-run snapshot %+v", mid)
	}
}

// A replay-only phase after a selling phase spreads its replays over the
// selling phase's requests (it does not pile them onto the first one).
func TestReplayOnlySegmentSpreadsOverEarlierRequests(t *testing.T) {
	w := NewWorkload(3, 1000, Mix{}, nil)
	w.StartSegment(2000, Mix{Replay: 1})
	targets := map[uint32]int{}
	for i := uint64(2000); i < 10000; i++ {
		k, _, r := w.Op(i)
		if k != history.KindReplay || r >= 2000 {
			t.Fatalf("op %d: %s of request %d", i, k, r)
		}
		targets[r]++
	}
	if len(targets) < 1500 || targets[0] > 20 {
		t.Fatalf("8000 replays hit %d distinct requests (request 0: %d times)", len(targets), targets[0])
	}
}

// A closed-loop phase sends every id it claims: a one-op phase ends at id 1
// (not at 1 + the ids its workers claimed after the cap), and a phase ended
// by its duration leaves no gap either. So the repeats of the next phase
// pick only requests that were sent: a replay storm after one first request
// replays that request on every op (spec §15.2 scene 2), and a release storm
// releases op 0's reservation, never a reservation nobody made.
func TestClosedPhasesSendEveryIDTheyClaim(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 1, 1)
	first := smallConfig()
	first.Mode, first.Duration, first.MaxOps, first.Concurrency, first.Mix = ModeClosed, 5*time.Second, 1, 4, Mix{}
	storm := first
	storm.MaxOps, storm.Concurrency, storm.Mix = 400, 16, Mix{Replay: 1}
	timed := storm
	timed.MaxOps, timed.Duration = 0, 300*time.Millisecond
	res, err := RunPhases(context.Background(), []Phase{{"first", first}, {"storm", storm}, {"timed", timed}}, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	if res.Phases[0].EndOp != 1 || res.Phases[1].EndOp != 401 {
		t.Fatalf("phases end at ops %d and %d, want 1 and 401: %+v", res.Phases[0].EndOp, res.Phases[1].EndOp, res.Phases)
	}
	if uint64(res.History.Len()) != res.Phases[2].EndOp {
		t.Fatalf("%d ops recorded, ids up to %d: a claimed id was not sent", res.History.Len(), res.Phases[2].EndOp)
	}
	for i, o := range res.History.All() {
		if uint64(o.ID) != uint64(i) {
			t.Fatalf("op %d has id %d: the ids have a gap", i, o.ID)
		}
		if i > 0 && (o.Kind != history.KindReplay || o.Req != 0 || o.Outcome != history.Outcome(lua.Accepted)) {
			t.Fatalf("op %d: %s of request %d answered %s; every op after the first replays request 0", i, o.Kind, o.Req, o.OutcomeName())
		}
	}
}

// The workload of a replay storm: after a segment of one op, a replay-only
// segment replays op 0 on every op — the originals of a later segment's
// repeats are the indices below its start, and nothing else.
func TestReplayOnlySegmentAfterOneOpReplaysOpZero(t *testing.T) {
	w := NewWorkload(42, 1000, Mix{}, nil)
	w.StartSegment(1, Mix{Replay: 1})
	_, u0, _ := w.Op(0)
	for i := uint64(1); i < 100000; i++ {
		if k, u, r := w.Op(i); k != history.KindReplay || u != u0 || r != 0 {
			t.Fatalf("op %d: %s of user %d request %d; want a replay of op 0 (user %d)", i, k, u, r, u0)
		}
	}
}
