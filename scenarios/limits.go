package scenarios

import (
	"bytes"
	"context"
	"fmt"

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
	// MaxLoadDuration, MaxRate and MaxPlannedOps are the engine's limits on
	// one process's load (runner.MaxLoadDuration, runner.MaxRate,
	// runner.MaxPlannedOps), applied to a file with its positions.
	MaxLoadDuration = runner.MaxLoadDuration
	MaxRate         = runner.MaxRate
	MaxPlannedOps   = runner.MaxPlannedOps
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

// limits checks the load a (non-suite) scenario asks for against
// MaxRate, MaxLoadDuration and MaxPlannedOps (the counts of phases,
// faults and suite members are checked when the file is decoded).
func (v *validator) limits() {
	v.problems(runner.LoadLimits(v.s.runnerPhases()))
}

// problems reports each of the engine's load problems at the field of the
// file that gave it.
func (v *validator) problems(probs []runner.LoadProblem) {
	for _, p := range probs {
		if p.Phase < 0 {
			v.bad("phases", "%s", p.Msg)
			continue
		}
		v.bad(v.s.phaseField(p.Phase)(p.Field), "%s", p.Msg)
	}
}

// runnerPhases is the scenario's phases as the engine's.
func (s *Scenario) runnerPhases() []runner.Phase {
	out := make([]runner.Phase, len(s.Phases))
	for i, p := range s.Phases {
		out[i] = runner.Phase{Name: p.Name, Config: p.Config}
	}
	return out
}
