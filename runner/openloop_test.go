package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// slow is a system under test that answers SOLD_OUT after d.
type slow struct{ d time.Duration }

func (slow) Name() string { return "slow" }

func (s slow) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	t := time.NewTimer(s.d)
	defer t.Stop()
	select {
	case <-t.C:
		return lua.ReserveResult{Code: lua.SoldOut, Attempts: 1}, nil
	case <-ctx.Done():
		return lua.ReserveResult{Attempts: 1}, lua.ErrOutcomeUnknown
	}
}

func (slow) Resend(call lua.ReserveCall, send int) lua.ReserveCall { return call }

func (s slow) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	return lua.CompensateResult{}, nil
}

var _ sut.System = slow{}

// Past maxPacedAhead workers asleep on operations taken ahead, free
// workers wait for a turn, and get it while the workers sending are slow to
// come back: 400 ops/s of 10 ms each need 4 workers sending at once, more
// than the 2 that may sleep ahead. Were the waiting workers never given a
// turn, the 2 would send 200 ops/s and the starts would fall further behind
// all along (a median lateness of about half a second).
func TestPacedWorkersPastTheTimerBoundTakeTurns(t *testing.T) {
	clustertest.Need(t)
	defer func(n int) { maxPacedAhead = n }(maxPacedAhead)
	maxPacedAhead = 2
	tgt := newTarget(t, 100, 1)
	tgt.Path = slow{10 * time.Millisecond}
	cfg := smallConfig()
	cfg.Shape = Shape{Kind: "constant", Rate: 400}
	cfg.Duration, cfg.Concurrency, cfg.SampleEvery, cfg.Mix = 1500*time.Millisecond, 8, 0, Mix{}
	res, err := Run(context.Background(), cfg, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	var late []time.Duration
	for _, o := range res.History.All() {
		late = append(late, o.Start-o.Intended)
	}
	slices.Sort(late)
	med := late[len(late)/2]
	t.Logf("%d scheduled, %d dropped, %d late starts, median lateness %v, worst %v",
		res.Observed.Scheduled, res.Observed.Dropped, res.Observed.LateStarts, med, late[len(late)-1])
	if n := res.Observed.Scheduled; n < 590 || n > 600 {
		t.Errorf("%d operations scheduled, want 600 (400/s for 1.5 s)", n)
	}
	if med > 50*time.Millisecond {
		t.Errorf("median lateness %v: the waiting workers did not get their turns", med)
	}
}

// An in-flight cap below the worker count bounds the operations scheduled
// and unfinished, and only those due while it is reached are dropped: a
// free worker over the cap waits, it does not drop the operations not yet
// due (which emptied the rest of the phase at once).
func TestInFlightCapBelowTheWorkersDropsOnlyWhatIsDue(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 100, 1)
	tgt.Path = slow{time.Millisecond}
	cfg := smallConfig()
	cfg.Shape = Shape{Kind: "constant", Rate: 200}
	cfg.Duration, cfg.Concurrency, cfg.MaxInFlight, cfg.SampleEvery, cfg.Mix = time.Second, 8, 2, 0, Mix{}
	res, err := Run(context.Background(), cfg, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d scheduled, %d sent, %d dropped, %d late starts", res.Observed.Scheduled, res.History.Len(), res.Observed.Dropped, res.Observed.LateStarts)
	if n := res.Observed.Scheduled; n < 195 || n > 200 {
		t.Errorf("%d operations scheduled, want 200 (200/s for 1 s)", n)
	}
	if d := res.Observed.Dropped; d > 20 {
		t.Errorf("%d of %d operations dropped: 1 ms operations 5 ms apart never reach a cap of 2", d, res.Observed.Scheduled)
	}
}
