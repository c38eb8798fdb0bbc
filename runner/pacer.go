package runner

import (
	"fmt"
	"math"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// NewPacer returns the vegeta Pacer of a shape: ConstantPacer, LinearPacer,
// SinePacer, or the spike pacer of this package.
func NewPacer(s Shape) (vegeta.Pacer, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	switch s.Kind {
	case "constant":
		return constantPacer(s.Rate), nil
	case "linear":
		return vegeta.LinearPacer{StartAt: constantPacer(s.Rate), Slope: s.Slope}, nil
	case "sine":
		return vegeta.SinePacer{Period: s.Period, Mean: constantPacer(s.Rate), Amp: constantPacer(s.Amplitude), StartAt: vegeta.MeanUp}, nil
	case "spike":
		return &SpikePacer{Base: s.Rate, Peak: s.Peak, At: s.SpikeAt, RampUp: s.RampUp, Hold: s.Hold, RampDown: s.RampDown}, nil
	}
	return nil, fmt.Errorf("shape %q: want one of %v", s.Kind, Shapes)
}

// constantPacer keeps fractional rates: Freq hits per 1000 s.
func constantPacer(rate float64) vegeta.ConstantPacer {
	return vegeta.ConstantPacer{Freq: int(math.Round(rate * 1000)), Per: 1000 * time.Second}
}

// SpikePacer is the flash-sale wave (anti-pattern §6.1): Base ops/s until At,
// a linear ramp to Peak over RampUp, Peak for Hold, a linear fall back to Base
// over RampDown, then Base again.
type SpikePacer struct {
	Base, Peak                 float64
	At, RampUp, Hold, RampDown time.Duration
}

var _ vegeta.Pacer = (*SpikePacer)(nil)

// Rate is the ops/s at elapsed.
func (p *SpikePacer) Rate(elapsed time.Duration) float64 {
	t := elapsed.Seconds()
	a, u, h, d := p.At.Seconds(), p.RampUp.Seconds(), p.Hold.Seconds(), p.RampDown.Seconds()
	switch {
	case t < a:
		return p.Base
	case t < a+u:
		return p.Base + (p.Peak-p.Base)*(t-a)/u
	case t < a+u+h:
		return p.Peak
	case t < a+u+h+d:
		return p.Peak - (p.Peak-p.Base)*(t-a-u-h)/d
	}
	return p.Base
}

// hits is the integral of Rate over [0, elapsed]: the number of operations
// due by then.
func (p *SpikePacer) hits(elapsed time.Duration) float64 {
	t := elapsed.Seconds()
	if t <= 0 {
		return 0
	}
	a, u, h, d := p.At.Seconds(), p.RampUp.Seconds(), p.Hold.Seconds(), p.RampDown.Seconds()
	seg := func(from, to float64) float64 { // ∫ Rate over [from, to] with to <= t
		if to > t {
			to = t
		}
		if to <= from {
			return 0
		}
		r0, r1 := p.Rate(time.Duration(from*1e9)), p.Rate(time.Duration(to*1e9))
		if to == t { // Rate at the open end of a segment
			r1 = p.Rate(elapsed)
		}
		return (r0 + r1) / 2 * (to - from)
	}
	return seg(0, a) + seg(a, a+u) + seg(a+u, a+u+h) + seg(a+u+h, a+u+h+d) + seg(a+u+h+d, math.Inf(1))
}

// Pace is vegeta's contract: 0 when operation number `hits` (0-based) is due,
// otherwise the wait until it is.
func (p *SpikePacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if p.Base <= 0 {
		return 0, true
	}
	if float64(hits) < p.hits(elapsed) {
		return 0, false
	}
	// The smallest t with hits(t) >= hits+1, by bisection (rate >= Base > 0,
	// so the bound below always holds it).
	lo, hi := elapsed, elapsed+time.Duration(float64(time.Second)*(float64(hits)+1-p.hits(elapsed)+1)/p.Base)
	for hi-lo > time.Microsecond {
		mid := lo + (hi-lo)/2
		if p.hits(mid) >= float64(hits)+1 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi - elapsed, false
}

// dueTime is the intended start of operation n: the earliest t in [lo, hi]
// at which the pacer says n is due (to 1 µs), found by bisection. Pace is
// monotone in elapsed, so this is exact for every vegeta pacer, including
// those that answer 0 (rather than a negative wait) when behind.
func dueTime(p vegeta.Pacer, n uint64, lo, hi time.Duration) time.Duration {
	if w, _ := p.Pace(lo, n); w <= 0 {
		return lo
	}
	for hi-lo > time.Microsecond {
		mid := lo + (hi-lo)/2
		if w, _ := p.Pace(mid, n); w <= 0 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
