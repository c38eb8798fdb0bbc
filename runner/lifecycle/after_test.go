package lifecycle

import (
	"context"
	"testing"
	"time"
)

// The steps from heal on run on a context that outlives the load's (a
// signal that stopped the load still leaves time to check and write) but
// ends InterruptGrace after it: a system under test that never answers
// does not hold an interrupted run past the grace.
func TestAfterLoadEndsAGraceAfterTheSignal(t *testing.T) {
	run, interrupt := context.WithCancel(context.Background())
	a := newAfter(run)
	defer a.stop()
	a.start()
	if a.ctx.Err() != nil {
		t.Fatal("the context of the steps after the load ended as it started")
	}
	interrupt()
	began := time.Now()
	select {
	case <-a.ctx.Done():
	case <-time.After(InterruptGrace + 5*time.Second):
		t.Fatalf("still going %s after the signal, want it ended after %s", time.Since(began), InterruptGrace)
	}
	if took := time.Since(began); took < InterruptGrace/2 {
		t.Errorf("ended %s after the signal: the grace is %s", took, InterruptGrace)
	}
	if dl, ok := a.ctx.Deadline(); !ok || time.Until(dl) > AfterLoadBudget {
		t.Errorf("deadline %v (set %v): want the budget %s from the heal step", dl, ok, AfterLoadBudget)
	}
}
