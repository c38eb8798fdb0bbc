package compare

import (
	"errors"
	"strings"
	"testing"
)

// sloAt is a synthetic SLO: a rate holds when it is at most capacity.
// calls records every probe.
type sloAt struct {
	capacity float64
	calls    []float64
	phases   []SearchPhase
	// breakConfirm makes every confirmation break (a noisy machine).
	breakConfirm bool
}

func (s *sloAt) probe(rate float64, ph SearchPhase) (bool, string, error) {
	s.calls = append(s.calls, rate)
	s.phases = append(s.phases, ph)
	if ph == PhaseConfirm && s.breakConfirm {
		return false, "noise", nil
	}
	return rate <= s.capacity, string(ph), nil
}

func TestSearchConvergesWithinPrecisionAndConfirms(t *testing.T) {
	for _, tc := range []struct {
		name            string
		start, capacity float64
	}{
		{"ramp up", 1000, 7300},
		{"capacity on a ramp rate", 1000, 2250},
		{"start above capacity", 20000, 3100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slo := &sloAt{capacity: tc.capacity}
			o := SearchOptions{Start: tc.start, Factor: 1.5, MaxSteps: 12, Precision: 0.05, Confirm: 2}
			r, err := SearchCapacity(o, slo.probe)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Converged || r.Held > tc.capacity || r.Broke <= tc.capacity {
				t.Fatalf("held %.1f broke %.1f converged %v around capacity %.0f (calls %v)", r.Held, r.Broke, r.Converged, tc.capacity, slo.calls)
			}
			if r.Broke-r.Held > 0.05*r.Held {
				t.Fatalf("held %.1f and broke %.1f are more than 5%% apart", r.Held, r.Broke)
			}
			if r.Held < 0.95*tc.capacity {
				t.Fatalf("held %.1f is more than 5%% under capacity %.0f", r.Held, tc.capacity)
			}
			if r.Confirmations != 2 || r.ConfirmationsHeld != 2 {
				t.Fatalf("confirmations %d held %d, want 2 and 2", r.Confirmations, r.ConfirmationsHeld)
			}
			last := r.Steps[len(r.Steps)-1]
			if last.Phase != PhaseConfirm || last.Rate != r.Held {
				t.Fatalf("last step %+v is not a confirmation at %.1f", last, r.Held)
			}
			if len(r.Steps) != len(slo.calls) {
				t.Fatalf("%d steps kept for %d probes", len(r.Steps), len(slo.calls))
			}
			var sawBisect bool
			for _, s := range r.Steps {
				sawBisect = sawBisect || s.Phase == PhaseBisect
			}
			if !sawBisect {
				t.Fatalf("no bisection step: %v", slo.phases)
			}
			if f, ok := r.Final(); !ok || f.Rate != r.Held || !f.Held {
				t.Fatalf("final step %+v, %v", f, ok)
			}
		})
	}
}

// A confirmation that breaks is counted, not hidden, and does not move the
// answer found by the search.
func TestSearchCountsConfirmationsThatBreak(t *testing.T) {
	slo := &sloAt{capacity: 5000, breakConfirm: true}
	r, err := SearchCapacity(SearchOptions{Start: 1000, Factor: 2, MaxSteps: 8, Precision: 0.05, Confirm: 1}, slo.probe)
	if err != nil {
		t.Fatal(err)
	}
	if r.Confirmations != 1 || r.ConfirmationsHeld != 0 {
		t.Fatalf("confirmations %d held %d, want 1 and 0", r.Confirmations, r.ConfirmationsHeld)
	}
	if r.Held > 5000 || r.Held < 4750 {
		t.Fatalf("held %.1f", r.Held)
	}
	if f, ok := r.Final(); !ok || f.Phase == PhaseConfirm {
		t.Fatalf("final step %+v should be the search's, not the broken confirmation", f)
	}
}

// A ramp that never breaks within MaxSteps has nothing to bisect: it says
// it did not converge.
func TestSearchThatNeverBreaksDoesNotClaimConvergence(t *testing.T) {
	slo := &sloAt{capacity: 1e9}
	r, err := SearchCapacity(SearchOptions{Start: 100, Factor: 2, MaxSteps: 3, Precision: 0.05, Confirm: 1}, slo.probe)
	if err != nil {
		t.Fatal(err)
	}
	if r.Converged || r.Broke != 0 || r.Held != 400 || len(r.Steps) != 4 {
		t.Fatalf("held %.0f broke %.0f converged %v steps %d", r.Held, r.Broke, r.Converged, len(r.Steps))
	}
}

// Nothing holds, even stepping down: no answer, no confirmation.
func TestSearchWhereNothingHolds(t *testing.T) {
	slo := &sloAt{capacity: 1}
	r, err := SearchCapacity(SearchOptions{Start: 1000, Factor: 2, MaxSteps: 3, Precision: 0.05, Confirm: 1}, slo.probe)
	if err != nil {
		t.Fatal(err)
	}
	if r.Held != 0 || r.Confirmations != 0 || len(r.Steps) != 3 || slo.calls[2] != 250 {
		t.Fatalf("held %.0f confirmations %d calls %v", r.Held, r.Confirmations, slo.calls)
	}
	if _, ok := r.Final(); ok {
		t.Fatal("a final step where nothing held")
	}
}

func TestSearchStopsOnProbeErrorAndRejectsBadOptions(t *testing.T) {
	boom := errors.New("cluster gone")
	n := 0
	r, err := SearchCapacity(SearchOptions{Start: 100, Factor: 2, MaxSteps: 5, Precision: 0.05}, func(rate float64, _ SearchPhase) (bool, int, error) {
		n++
		if n == 2 {
			return false, 0, boom
		}
		return true, n, nil
	})
	if !errors.Is(err, boom) || len(r.Steps) != 1 || !strings.Contains(err.Error(), "200 ops/s") {
		t.Fatalf("err %v, %d steps", err, len(r.Steps))
	}
	for _, o := range []SearchOptions{
		{Start: 0, Factor: 2, MaxSteps: 1, Precision: 0.05},
		{Start: 1, Factor: 1, MaxSteps: 1, Precision: 0.05},
		{Start: 1, Factor: 2, MaxSteps: 0, Precision: 0.05},
		{Start: 1, Factor: 2, MaxSteps: 1, Precision: 0},
		{Start: 1, Factor: 2, MaxSteps: 1, Precision: 0.05, Confirm: -1},
	} {
		if _, err := SearchCapacity(o, func(float64, SearchPhase) (bool, int, error) { return true, 0, nil }); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// A probe that says the stand fell behind ends the search at that step:
// no bisection, no confirmation, no error, StandBound set and Broke not
// (the system did not break).
func TestSearchEndsOnAStandBoundStep(t *testing.T) {
	var calls []float64
	probe := func(rate float64, ph SearchPhase) (bool, string, error) {
		calls = append(calls, rate)
		if rate >= 4000 {
			return false, "stand", ErrStandBound
		}
		return true, "ok", nil
	}
	o := SearchOptions{Start: 1000, Factor: 2, MaxSteps: 8, Precision: 0.05, Confirm: 2}
	r, err := SearchCapacity(o, probe)
	if err != nil {
		t.Fatal(err)
	}
	if r.StandBound != 4000 || r.Held != 2000 || r.Broke != 0 || r.Converged || r.Confirmations != 0 {
		t.Fatalf("stand-bound %.0f held %.0f broke %.0f converged %v confirmations %d; want 4000, 2000, 0, false, 0",
			r.StandBound, r.Held, r.Broke, r.Converged, r.Confirmations)
	}
	if len(calls) != 3 || len(r.Steps) != 3 || r.Steps[2].Held || r.Steps[2].Step != "stand" {
		t.Fatalf("calls %v, steps %+v: want 1000, 2000, 4000 and the last recorded as not held", calls, r.Steps)
	}
	sr := &SearchResult[Step]{Held: 2000, StandBound: 4000, Steps: []SearchStep[Step]{{Rate: 4000, Phase: PhaseRamp,
		Step: Step{StandBound: true, BoundBy: "stand: generator late 40%"}}}}
	if txt := heldText(sr); !strings.Contains(txt, "the system's limit was not reached: the stand could pace at most 2000 ops/s") ||
		!strings.Contains(txt, "stand: generator late 40%") {
		t.Fatalf("answer %q", txt)
	}
	if by, stand := boundOf(sr); !stand || by != "stand: generator late 40%" {
		t.Fatalf("boundOf: %q, %v", by, stand)
	}
	// A stand-bound confirmation does not make the search's bound the stand's.
	sr = &SearchResult[Step]{Held: 2000, Broke: 2100, Steps: []SearchStep[Step]{
		{Rate: 2100, Phase: PhaseBisect, Step: Step{BoundBy: "system: hot master at 0.97 cores"}},
		{Rate: 2000, Phase: PhaseConfirm, Step: Step{StandBound: true, BoundBy: "stand: generator late 9%"}}}}
	if by, stand := boundOf(sr); stand || by != "system: hot master at 0.97 cores" {
		t.Fatalf("boundOf with a stand-bound confirmation: %q, %v", by, stand)
	}
}

// A stand that cannot pace the start rate: the ramp steps down to a rate
// it paces and stops there (no bisection, no confirmation).
func TestSearchStepsDownFromAStandBoundStart(t *testing.T) {
	var calls []float64
	probe := func(rate float64, ph SearchPhase) (bool, string, error) {
		calls = append(calls, rate)
		if rate > 1000 {
			return false, "stand", ErrStandBound
		}
		return true, "ok", nil
	}
	o := SearchOptions{Start: 4000, Factor: 2, MaxSteps: 8, Precision: 0.05, Confirm: 2}
	r, err := SearchCapacity(o, probe)
	if err != nil {
		t.Fatal(err)
	}
	if r.StandBound != 2000 || r.Held != 1000 || r.Broke != 0 || r.Converged || len(calls) != 3 {
		t.Fatalf("stand-bound %.0f held %.0f broke %.0f converged %v calls %v; want 2000, 1000, 0, false, [4000 2000 1000]",
			r.StandBound, r.Held, r.Broke, r.Converged, calls)
	}
}

// A confirmation the stand could not pace is a confirmation that did not
// hold; the answer stays the system's (StandBound unset).
func TestSearchCountsAStandBoundConfirmationAsNotHeld(t *testing.T) {
	probe := func(rate float64, ph SearchPhase) (bool, string, error) {
		if ph == PhaseConfirm {
			return false, "stand", ErrStandBound
		}
		return rate <= 1500, "ok", nil
	}
	o := SearchOptions{Start: 1000, Factor: 2, MaxSteps: 8, Precision: 0.05, Confirm: 2}
	r, err := SearchCapacity(o, probe)
	if err != nil {
		t.Fatal(err)
	}
	if r.StandBound != 0 || !r.Converged || r.Confirmations != 2 || r.ConfirmationsHeld != 0 {
		t.Fatalf("stand-bound %.0f converged %v confirmations %d/%d; want 0, true, 0/2", r.StandBound, r.Converged, r.ConfirmationsHeld, r.Confirmations)
	}
}
