package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"seckill-harness/runner"
)

// Limits on what a scenario file may ask for. A file is input from anyone:
// each limit makes a hostile or mistaken file fail fast, with source:line
// and the limit in the error, instead of exhausting the machine. None of the
// built-in scenarios comes near any of them.
const (
	// MaxFileBytes is the largest scenario file Load reads (256 KiB; a
	// thousand fully written phases take less). Larger files are refused
	// before they are parsed: the YAML parser allocates about 2 KB per
	// token, so this also bounds what parsing costs.
	MaxFileBytes = 256 << 10
	// MaxNesting is the deepest nesting of mappings and lists (flow
	// brackets or indentation). Brackets are counted before the YAML parser
	// runs, so a file of nested brackets costs one pass over its bytes.
	MaxNesting = 64
	// MaxNodes is the most values (mappings, lists, scalars) the document
	// may hold once its aliases (*name) and merges (<<:) are expanded; an
	// alias that would cross it fails at its line ("billion laughs").
	MaxNodes = 100_000
	// MaxPhases, MaxFaults and MaxSuiteMembers bound the lists a run
	// iterates (the report holds a section per phase and fault).
	MaxPhases       = 1_000
	MaxFaults       = 256
	MaxSuiteMembers = 256
	// MaxLoadDuration is the longest load (the sum of the phases'
	// durations): the report's per-second time series holds one point per
	// second of it.
	MaxLoadDuration = 24 * time.Hour
	// MaxRate is the highest arrival rate (ops/s, rate_scale applied) a
	// phase's shape may reach: more than one harness process can schedule;
	// split a larger load over generators (--generator I/N).
	MaxRate = 1_000_000
	// MaxPlannedOps bounds the operations a scenario's open phases may
	// schedule (peak rate × duration, or max_ops when smaller, summed over
	// the phases). The history keeps about 64 bytes per operation in
	// memory and about 250 bytes per line in history.jsonl.
	MaxPlannedOps = 50_000_000
)

// ResolveContext is Resolve that gives up when ctx is done (e.g. on the
// first SIGINT of signal.NotifyContext): the parse runs in a goroutine and
// ResolveContext returns ctx's error at once, naming nameOrFile. The limits
// above bound what the abandoned parse can still cost.
func ResolveContext(ctx context.Context, nameOrFile string) (*Scenario, error) {
	type result struct {
		s   *Scenario
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Resolve(nameOrFile)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("scenario %s: reading it was interrupted: %w", nameOrFile, context.Cause(ctx))
	}
}

// checkSize refuses data over MaxFileBytes, naming the line the limit
// falls on. data may be the file's first MaxFileBytes+1 bytes only.
func checkSize(source string, data []byte) error {
	if len(data) <= MaxFileBytes {
		return nil
	}
	line := bytes.Count(data[:MaxFileBytes], []byte("\n")) + 1
	return fmt.Errorf("%s:%d: the file goes on past %d bytes, the limit of a scenario file (256 KiB): a scenario needs far less; split it into a suite of smaller files",
		source, line, MaxFileBytes)
}

// checkBrackets refuses flow brackets ([ {) nested deeper than MaxNesting,
// naming the line of the first bracket too deep. It counts every bracket
// outside comments, quoted ones included: a scenario never quotes
// MaxNesting open brackets in a row, and the count costs one pass, where
// the YAML parser's time grows much faster than the depth.
func checkBrackets(source string, data []byte) error {
	depth, line := 0, 1
	comment, prev := false, byte('\n')
	for _, b := range data {
		switch {
		case b == '\n':
			line++
			comment = false
		case comment:
		case b == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			comment = true
		case b == '[' || b == '{':
			depth++
			if depth > MaxNesting {
				return fmt.Errorf("%s:%d: brackets nested more than %d deep: a scenario needs a few levels; remove the extra nesting", source, line, MaxNesting)
			}
		case b == ']' || b == '}':
			depth = max(depth-1, 0)
		}
		prev = b
	}
	return nil
}

// peakRate is the highest arrival rate c's shape reaches (ops/s).
func peakRate(c runner.Config) float64 {
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

// plannedOps is an upper bound on the operations an open phase schedules:
// its peak rate over its duration, or max_ops when that is smaller. A
// closed phase without max_ops has no bound known in advance (0).
func plannedOps(c runner.Config) float64 {
	n := math.Inf(1)
	if c.Mode == runner.ModeOpen {
		n = peakRate(c) * c.Duration.Seconds()
	}
	if c.MaxOps > 0 {
		n = min(n, float64(c.MaxOps))
	}
	if math.IsInf(n, 1) {
		return 0
	}
	return n
}

// CheckLoad applies a scenario's limits on the load (finite rates,
// MaxRate per phase, MaxLoadDuration, MaxPlannedOps) to phases that were
// not read from a scenario (capacity's steps, a library caller's plan):
// lifecycle.Execute calls it before anything starts, so no plan escapes
// the limits a file is held to.
func CheckLoad(phases []runner.Phase) error {
	s := &Scenario{Source: "the plan", RateScale: 1}
	for _, p := range phases {
		s.Phases = append(s.Phases, Phase{Name: p.Name, Config: p.Config})
	}
	v := &validator{s: s}
	finite := true
	for i := range s.Phases {
		finite = v.finiteRates(i, "") && finite
	}
	if finite {
		v.limits()
	}
	return errors.Join(v.errs...)
}

// limits checks the load a (non-suite) scenario asks for against
// MaxRate, MaxLoadDuration and MaxPlannedOps (the counts of phases,
// faults and suite members are checked when the file is decoded).
func (v *validator) limits() {
	s := v.s
	var total time.Duration
	var ops float64
	for i, p := range s.Phases {
		at := s.phaseField(i)
		c := p.Config
		if c.Duration > 0 {
			total += c.Duration
		}
		if c.Mode == runner.ModeOpen {
			if r := peakRate(c); r > MaxRate {
				key := "rate"
				if c.Shape.Rate <= MaxRate {
					key = map[string]string{"linear": "slope", "sine": "amplitude", "spike": "peak"}[c.Shape.Kind]
				}
				v.bad(at(key), "the shape reaches %g ops/s: at most %d ops/s per phase (one harness process cannot schedule more; split the load over generators with --generator I/N, or lower rate/rate_scale)", r, MaxRate)
			}
		}
		if c.Duration > 0 {
			ops += plannedOps(c)
		}
	}
	if total > MaxLoadDuration {
		v.bad("phases", "the phases last %s in all: at most %s of load per scenario (the report keeps a point per second); shorten the phases or split them into a suite", total, MaxLoadDuration)
	}
	if ops > MaxPlannedOps {
		v.bad("phases", "the phases may schedule %.0f operations (peak rate × duration, or max_ops): at most %d per run (the history keeps every one in memory); lower the rates or durations, set max_ops, or split the load over generators", ops, MaxPlannedOps)
	}
}
