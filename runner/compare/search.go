package compare

import (
	"errors"
	"fmt"
	"math"

	"seckill-harness/scenarios"
)

// SearchOptions bound a capacity search (see SearchCapacity).
type SearchOptions struct {
	// Start is the first rate tried (ops/s); Factor multiplies the rate
	// each ramp step (divides it when even Start breaks).
	Start, Factor float64
	// MaxSteps is the most ramp steps (up, or down when Start breaks);
	// bisection and confirmation steps come on top.
	MaxSteps int
	// Precision is the relative width the bisection stops at: the highest
	// rate that held and the lowest that broke differ by at most
	// Precision × the rate that held (0.05: the answer is good to ±5%).
	Precision float64
	// Confirm is how many times the final rate is run again once the
	// search converged (0: not at all).
	Confirm int
}

// Validate names the flag to fix.
func (o SearchOptions) Validate() error {
	switch {
	case !(o.Start > 0 && o.Start <= scenarios.MaxRate):
		return fmt.Errorf("--start %g: want a positive rate of at most %d ops/s (the most one harness process schedules)", o.Start, scenarios.MaxRate)
	case !(o.Factor > 1) || math.IsInf(o.Factor, 0):
		return errors.New("--factor must be a finite number above 1 (each step multiplies the rate by it)")
	case o.MaxSteps < 1:
		return errors.New("--max-steps must be at least 1")
	case !(o.Precision > 0 && o.Precision < 1):
		return errors.New("--precision must be within (0,1), e.g. 0.05 for ±5%")
	case o.Confirm < 0:
		return errors.New("--confirm must be 0 or more")
	}
	return nil
}

// SearchPhase says why a step was run.
type SearchPhase string

// The phases of a capacity search, in the order they run.
const (
	PhaseRamp    SearchPhase = "ramp"    // multiplying (or dividing) by Factor
	PhaseBisect  SearchPhase = "bisect"  // halving the gap between held and broke
	PhaseConfirm SearchPhase = "confirm" // the final rate once more
)

// SearchStep is one probe of a search: the rate, why it was run, whether it
// held, and what the probe returned for it.
type SearchStep[S any] struct {
	Rate  float64     `json:"rate"`
	Phase SearchPhase `json:"phase"`
	Held  bool        `json:"held"`
	Step  S           `json:"step"`
}

// SearchResult is where a search ended.
type SearchResult[S any] struct {
	// Steps is every probe in the order run (the curve).
	Steps []SearchStep[S] `json:"steps"`
	// Held is the highest rate that held (0: none did); Broke the lowest
	// rate above it that broke (0: none broke within MaxSteps).
	Held, Broke float64
	// Converged: Held and Broke are within Precision of each other.
	Converged bool
	// Confirmations run at Held, and how many of them held.
	Confirmations, ConfirmationsHeld int
	// StandBound is the rate whose step the stand could not pace (the
	// probe returned ErrStandBound): the search ended there, the system's
	// limit was not reached and Held is a lower bound of it (0: none).
	StandBound float64
}

// Final is the step of the answer: the last probe at Held that held
// (ok false when no rate held).
func (r *SearchResult[S]) Final() (SearchStep[S], bool) {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		if s := r.Steps[i]; s.Held && s.Rate == r.Held {
			return s, true
		}
	}
	return SearchStep[S]{}, false
}

// SearchCapacity finds the highest rate at which probe holds: it ramps the
// rate up by Factor from Start until a step breaks (or, when Start itself
// breaks, down by Factor until one holds), then bisects between the highest
// rate that held and the lowest that broke until they are within Precision
// of each other, then runs the rate that held Confirm more times and counts
// how many held (a noisy machine may break a rate that held once: the
// count says so, the answer stays the rate that held during the search).
//
// probe runs one step at rate and reports whether it held; an error from
// probe (a harness error, Ctrl-C) ends the search and is returned with the
// steps run so far. A probe that returns ErrStandBound (the stand could
// not pace the rate) ends the search with no error: the step is recorded
// as not held, StandBound is its rate, nothing is bisected or confirmed;
// when no rate held yet, the ramp first steps down by Factor (within
// MaxSteps) to the highest rate the stand paced, so the answer can say
// "the stand could pace at most Held" (StandBound is then the lowest
// rate it could not pace). A confirmation the stand could not pace counts
// as one that did not hold and changes nothing else: the rate held during
// the search, and the count says how noisy the machine was.
// The search is a pure function of the probe's answers.
func SearchCapacity[S any](o SearchOptions, probe func(rate float64, phase SearchPhase) (held bool, step S, err error)) (*SearchResult[S], error) {
	r, err := runSearch(o, probe)
	if errors.Is(err, ErrStandBound) {
		r.Converged, err = false, nil
	}
	return r, err
}

func runSearch[S any](o SearchOptions, probe func(rate float64, phase SearchPhase) (held bool, step S, err error)) (*SearchResult[S], error) {
	r := &SearchResult[S]{}
	if err := o.Validate(); err != nil {
		return r, err
	}
	try := func(rate float64, ph SearchPhase) (bool, error) {
		held, st, err := probe(rate, ph)
		if errors.Is(err, ErrStandBound) {
			r.Steps = append(r.Steps, SearchStep[S]{Rate: rate, Phase: ph, Step: st})
			if ph != PhaseConfirm {
				r.StandBound = rate
			}
			return false, err
		}
		if err != nil {
			return false, fmt.Errorf("%s step at %.0f ops/s: %w", ph, rate, err)
		}
		r.Steps = append(r.Steps, SearchStep[S]{Rate: rate, Phase: ph, Held: held, Step: st})
		return held, nil
	}
	// Ramp: up from Start until a break; down when Start breaks.
	rate := o.Start
	for i := 0; i < o.MaxSteps; i++ {
		held, err := try(rate, PhaseRamp)
		if errors.Is(err, ErrStandBound) && r.Held == 0 {
			rate /= o.Factor // find a rate the stand can pace
			continue
		}
		if err != nil {
			return r, err
		}
		if held {
			r.Held = rate
			if r.Broke > 0 || r.StandBound > 0 {
				break // stepping down found a rate that holds
			}
			rate *= o.Factor
			continue
		}
		r.Broke = rate
		if r.Held > 0 {
			break
		}
		rate /= o.Factor
	}
	if r.StandBound > 0 {
		return r, ErrStandBound
	}
	if r.Held == 0 {
		return r, nil
	}
	// Bisect the gap (a ramp that never broke has nothing to bisect).
	for r.Broke > 0 && r.Broke-r.Held > o.Precision*r.Held {
		mid := (r.Held + r.Broke) / 2
		held, err := try(mid, PhaseBisect)
		if err != nil {
			return r, err
		}
		if held {
			r.Held = mid
		} else {
			r.Broke = mid
		}
	}
	r.Converged = r.Broke > 0
	for i := 0; i < o.Confirm; i++ {
		held, err := try(r.Held, PhaseConfirm)
		if err != nil && !errors.Is(err, ErrStandBound) {
			return r, err
		}
		r.Confirmations++
		if held {
			r.ConfirmationsHeld++
		}
	}
	return r, nil
}
