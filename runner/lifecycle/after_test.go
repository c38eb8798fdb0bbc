package lifecycle

import (
	"context"
	"testing"
	"time"
)

// The steps from heal on run on contexts that outlive the load's (a
// signal that stopped the load still leaves time to check and write) but
// end InterruptGrace after it, whichever step is running: a system under
// test that never answers does not hold an interrupted run past the
// grace, and a step begun after the signal gets what is left of it.
func TestAfterLoadEndsAGraceAfterTheSignal(t *testing.T) {
	run, interrupt := context.WithCancel(context.Background())
	a := newAfter(run)
	defer a.stop()
	ctx := a.begin()
	if ctx.Err() != nil {
		t.Fatal("the context of the steps after the load ended as it started")
	}
	interrupt()
	began := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(InterruptGrace + 5*time.Second):
		t.Fatalf("still going %s after the signal, want it ended after %s", time.Since(began), InterruptGrace)
	}
	if took := time.Since(began); took < InterruptGrace/2 {
		t.Errorf("ended %s after the signal: the grace is %s", took, InterruptGrace)
	}
	if dl, ok := a.begin().Deadline(); !ok || dl.After(began.Add(InterruptGrace+time.Second)) {
		t.Errorf("a step begun after the grace: deadline %v (set %v), want the cut at the signal + %s", dl, ok, InterruptGrace)
	}
}

// Each step after the load gets its own budget from its own start: a
// step that begins after a long one (a drain of minutes) is not left an
// expired context. With one clock for all the steps, the check after a
// 3.5-minute drain read the final state on an expired context (exit 2).
func TestAfterLoadGivesEachStepItsOwnBudget(t *testing.T) {
	a := newAfter(context.Background())
	defer a.stop()
	first := a.begin()
	d1, _ := first.Deadline()
	time.Sleep(20 * time.Millisecond)
	second := a.begin()
	d2, ok := second.Deadline()
	if !ok || !d2.After(d1) || time.Until(d2) < AfterLoadBudget-time.Second {
		t.Fatalf("second step's deadline %v, the first's %v: want a fresh %s", d2, d1, AfterLoadBudget)
	}
	if first.Err() == nil {
		t.Error("the previous step's context is still live after the next began")
	}
}
