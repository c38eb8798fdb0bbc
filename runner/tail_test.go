package runner

import (
	"context"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// silent is a system under test that never answers: every send waits for
// its deadline.
type silent struct{}

func (silent) Name() string { return "silent" }

func (silent) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	<-ctx.Done()
	return lua.ReserveResult{Attempts: 1}, lua.ErrOutcomeUnknown
}

func (silent) Resend(call lua.ReserveCall, send int) lua.ReserveCall { return call }

func (silent) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	<-ctx.Done()
	return lua.CompensateResult{}, lua.ErrOutcomeUnknown
}

var _ sut.System = silent{}

// runTailCase runs one second of 200 ops/s on 4 workers against sys,
// each send given 300 ms and up to 3 re-sends, and returns the result,
// the config and how long the run took. Without the tail, 200 operations
// of 4 sends of 300 ms on 4 workers take a minute: the test's own limit
// stops them at 10 s.
func runTailCase(t *testing.T, sys sut.System) (*Result, Config, time.Duration) {
	t.Helper()
	tgt := newTarget(t, 100, 2)
	tgt.Path = sys
	cfg := smallConfig()
	cfg.Shape = Shape{Kind: "constant", Rate: 200}
	cfg.Duration, cfg.Concurrency, cfg.SampleEvery = time.Second, 4, 0
	cfg.CallTimeout, cfg.RetrySends, cfg.RetryBackoff = 300*time.Millisecond, 3, 10*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	res, err := Run(ctx, cfg, tgt.Sale(), tgt.System())
	took := time.Since(began)
	if err != nil {
		t.Fatalf("after %s: %v", took, err)
	}
	return res, cfg, took
}

// A system that never answers holds a phase no longer than its duration
// plus Config.Tail: the operations still in flight then are cut (UNKNOWN
// on the wire, DROPPED when never sent), never re-sent for minutes.
func TestTailCutsWhatANeverAnsweringSystemHolds(t *testing.T) {
	res, cfg, took := runTailCase(t, silent{})
	if limit := cfg.Duration + cfg.Tail() + time.Second; took > limit {
		t.Errorf("the run took %s, want at most %s (duration %s + tail %s + 1 s)", took, limit, cfg.Duration, cfg.Tail())
	}
	var unknown, dropped, errs int
	for _, o := range res.History.All() {
		switch o.Outcome {
		case history.OutcomeUnknown:
			unknown++
		case history.OutcomeDropped:
			dropped++
		case history.OutcomeError:
			errs++
		}
	}
	t.Logf("took %s: %d ops, %d UNKNOWN, %d DROPPED, %d ERROR, cut at the tail %d", took, res.History.Len(), unknown, dropped, errs, res.Observed.CutAtTail)
	if cut := res.Observed.CutAtTail; unknown == 0 || dropped == 0 || cut <= int64(dropped) || cut > int64(unknown+dropped) {
		t.Errorf("want UNKNOWN and DROPPED operations, the DROPPED and some UNKNOWN cut at the tail (%d)", cut)
	}
	if errs > 0 {
		t.Errorf("%d operations the harness never sent are ERROR, want DROPPED", errs)
	}
}

// waiting is a system under test whose calls wait for a connection that
// never frees (as go-redis' pool does when every connection is taken) and
// return their context's error: nothing is ever sent.
type waiting struct{ silent }

func (waiting) Name() string { return "waiting" }

func (waiting) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	<-ctx.Done()
	return lua.ReserveResult{}, ctx.Err()
}

// An operation the tail cuts while it waits for a connection was never
// sent: it is DROPPED, as the cut promises, never an ERROR of the system
// (a cancelled wait used to be classified OTHER, which the verdict counts
// as an error of the path under test: a run failed for the harness's own
// cut).
func TestTailCutOfAWaitingCallIsNotAnErrorOfTheSystem(t *testing.T) {
	res, _, _ := runTailCase(t, waiting{})
	classes := map[history.ErrClass]int{}
	var dropped int
	for _, o := range res.History.All() {
		switch o.Outcome {
		case history.OutcomeError:
			classes[o.ErrClass]++
		case history.OutcomeDropped:
			dropped++
		}
	}
	t.Logf("%d ops, ERROR by class %v, %d DROPPED, cut at the tail %d", res.History.Len(), classes, dropped, res.Observed.CutAtTail)
	if res.Observed.CutAtTail < 4 || dropped < int(res.Observed.CutAtTail) {
		t.Errorf("cut at the tail %d, DROPPED %d: want the waiting calls (one per worker at least) cut and DROPPED", res.Observed.CutAtTail, dropped)
	}
	for c, n := range classes {
		if c != history.ErrConnect {
			t.Errorf("%d operations ERROR %s: a wait that timed out or was cut is CONNECT (never sent)", n, c)
		}
	}
}
