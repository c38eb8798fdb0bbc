package runner

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Limits on the load one harness process is asked to drive. Every plan is
// held to them before anything starts: a scenario file when it is read
// (with its file:line), any other plan (capacity's steps, a library
// caller's) by CheckLoad.
const (
	// MaxLoadDuration is the longest load (the sum of the phases'
	// durations): the report's per-second time series holds one point per
	// second of it.
	MaxLoadDuration = 24 * time.Hour
	// MaxRate is the highest arrival rate (ops/s) a phase's shape may
	// reach: more than one harness process can schedule; split a larger
	// load over generators (--generator I/N).
	MaxRate = 1_000_000
	// MaxPlannedOps bounds the operations the open phases may schedule
	// (peak rate × duration, or max_ops when smaller, summed over the
	// phases). The history keeps about 64 bytes per operation in memory
	// and about 250 bytes per line in history.jsonl.
	MaxPlannedOps = 50_000_000
)

// LoadProblem is one limit a load breaks: the phase (-1: the phases as a
// whole), the field that gave the value (rate, slope, amplitude, peak;
// "" for the phases as a whole) and what is wrong, with the fix.
type LoadProblem struct {
	Phase int
	Field string
	Msg   string
}

// FiniteRates lists the NaN or infinite rate, slope, amplitude or peak of
// c's shape. suffix is appended to each value (e.g. " (rate_scale 2
// applied)").
func FiniteRates(phase int, c Config, suffix string) []LoadProblem {
	var out []LoadProblem
	sh := c.Shape
	for _, x := range []struct {
		key string
		v   float64
	}{{"rate", sh.Rate}, {"slope", sh.Slope}, {"amplitude", sh.Amplitude}, {"peak", sh.Peak}} {
		if math.IsNaN(x.v) || math.IsInf(x.v, 0) {
			out = append(out, LoadProblem{phase, x.key, fmt.Sprintf("%g%s: want a finite number of ops/s (e.g. 2000)", x.v, suffix)})
		}
	}
	return out
}

// LoadLimits lists what the phases break of MaxRate (per open phase),
// MaxLoadDuration and MaxPlannedOps (over all of them). Call it on phases
// whose rates are finite (FiniteRates).
func LoadLimits(phases []Phase) []LoadProblem {
	var out []LoadProblem
	var total time.Duration
	var ops float64
	for i, p := range phases {
		c := p.Config
		if c.Duration > 0 {
			total += c.Duration
		}
		if c.Mode == ModeOpen {
			if r := PeakRate(c); r > MaxRate {
				key := "rate"
				if c.Shape.Rate <= MaxRate {
					key = map[string]string{"linear": "slope", "sine": "amplitude", "spike": "peak"}[c.Shape.Kind]
				}
				out = append(out, LoadProblem{i, key, fmt.Sprintf("the shape reaches %g ops/s: at most %d ops/s per phase (one harness process cannot schedule more; split the load over generators with --generator I/N, or lower rate/rate_scale)", r, MaxRate)})
			}
		}
		if c.Duration > 0 {
			ops += PlannedOps(c)
		}
	}
	if total > MaxLoadDuration {
		out = append(out, LoadProblem{-1, "", fmt.Sprintf("the phases last %s in all: at most %s of load per scenario (the report keeps a point per second); shorten the phases or split them into a suite", total, MaxLoadDuration)})
	}
	if ops > MaxPlannedOps {
		out = append(out, LoadProblem{-1, "", fmt.Sprintf("the phases may schedule %.0f operations (peak rate × duration, or max_ops): at most %d per run (the history keeps every one in memory); lower the rates or durations, set max_ops, or split the load over generators", ops, MaxPlannedOps)})
	}
	return out
}

// CheckLoad holds phases that were not read from a scenario file
// (capacity's steps, a library caller's plan) to the limits a file is held
// to: finite rates, then LoadLimits. lifecycle.Execute calls it before
// anything starts, so no plan escapes them.
func CheckLoad(phases []Phase) error {
	var probs []LoadProblem
	for i, p := range phases {
		probs = append(probs, FiniteRates(i, p.Config, "")...)
	}
	if len(probs) == 0 {
		probs = LoadLimits(phases)
	}
	errs := make([]error, len(probs))
	for i, p := range probs {
		path := "phases"
		if p.Phase >= 0 {
			path = fmt.Sprintf("phases[%d].%s", p.Phase, p.Field)
		}
		errs[i] = fmt.Errorf("the plan: %s: %s", path, p.Msg)
	}
	return errors.Join(errs...)
}

// PeakRate is the highest arrival rate c's shape reaches (ops/s).
func PeakRate(c Config) float64 {
	sh := c.Shape
	switch sh.Kind {
	case "linear":
		return max(sh.Rate, sh.Rate+sh.Slope*c.Duration.Seconds())
	case "sine":
		return sh.Rate + max(sh.Amplitude, 0)
	case "spike":
		return max(sh.Rate, sh.Peak)
	}
	return sh.Rate
}

// PlannedOps is an upper bound on the operations an open phase schedules:
// its peak rate over its duration, or max_ops when that is smaller. A
// closed phase without max_ops has no bound known in advance (0).
func PlannedOps(c Config) float64 {
	n := math.Inf(1)
	if c.Mode == ModeOpen {
		n = PeakRate(c) * c.Duration.Seconds()
	}
	if c.MaxOps > 0 {
		n = min(n, float64(c.MaxOps))
	}
	if math.IsInf(n, 1) {
		return 0
	}
	return n
}
