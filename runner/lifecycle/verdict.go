package lifecycle

import (
	"fmt"
	"sort"
	"strings"

	"seckill-harness/history"
	"seckill-harness/reports"
	"seckill-harness/runner"
)

// A green verdict must be earned: the invariants say nothing was broken,
// these rules say the run did what it set out to do. Each rule judges the
// facts of a finished run (collected once, see runFacts) and yields one
// assertion in report.json, so a rule that fails fails the run (exit 1)
// and shows in the summary and in junit.xml like any other check.

// Bounds are the limits of the evidence rules; the zero value of a field
// means its default.
type Bounds struct {
	// MinOps is the fewest operations (sent, not dropped) a run must
	// complete; default 1: a run that ran nothing proves nothing.
	MinOps int64
	// MaxPathErrors bounds the operations that ended in an ERROR caused by
	// the path under test (a script error, NOPERM, a wrong reply shape,
	// CROSSSLOT, NOSCRIPT not cured by EVAL); 0: none allowed.
	MaxPathErrors int64
	// MaxDroppedRatio bounds dropped / scheduled operations (the harness
	// could not keep up with its own schedule); default 0.01.
	MaxDroppedRatio float64
}

func (b Bounds) withDefaults() Bounds {
	if b.MinOps <= 0 {
		b.MinOps = 1
	}
	if b.MaxDroppedRatio <= 0 {
		b.MaxDroppedRatio = runner.DefaultMaxDroppedRatio
	}
	return b
}

// pathErrorClasses are the error classes whose cause is the path under
// test itself, not the cluster or the network.
var pathErrorClasses = map[history.ErrClass]bool{history.ErrOther: true, history.ErrCrossSlot: true, history.ErrNoScript: true}

// runFacts is what the evidence rules judge, read off a finished run.
type runFacts struct {
	ops, scheduled, dropped int64
	pathErrors              map[string]int64    // error class -> operations
	errorTexts              map[string][]string // error class -> first texts
	planned                 int                 // faults planned
	notInjected             []string            // "spec: why"
	actedDespite            []string            // "spec: took effect though inject failed (err): outcome"
	interrupted             string              // "" or why the load stopped early
	judged, required        int                 // invariants judged (not skip) among the required (not waived)
	skipped                 []string            // required invariants skipped: "I3: why"
}

// collectFacts reads the facts the evidence rules need from a run.
func collectFacts(res *runner.Result, rep *reports.Report, notInjected, actedDespite []string, planned int, interrupted string) runFacts {
	f := runFacts{scheduled: res.Observed.Scheduled, dropped: res.Observed.Dropped, pathErrors: map[string]int64{},
		errorTexts: res.ErrorTexts, planned: planned, notInjected: notInjected, actedDespite: actedDespite, interrupted: interrupted}
	for _, o := range res.History.All() {
		if o.Outcome == history.OutcomeDropped {
			continue
		}
		f.ops++
		if o.Outcome == history.OutcomeError && pathErrorClasses[o.ErrClass] {
			f.pathErrors[o.ErrClass.String()]++
		}
	}
	for _, inv := range rep.Invariants {
		if inv.Waived || inv.Expected != nil {
			continue
		}
		f.required++
		if inv.Status == reports.StatusSkip {
			f.skipped = append(f.skipped, inv.ID+": "+inv.Detail)
		} else {
			f.judged++
		}
	}
	return f
}

// evidenceRule is one condition a run must meet to pass.
type evidenceRule struct {
	name    string
	applies func(f runFacts) bool // nil: always
	judge   func(f runFacts, b Bounds) reports.Assertion
}

// evidenceRules are judged in this order after every run.
var evidenceRules = []evidenceRule{
	{"the load ran to its end", nil, func(f runFacts, _ Bounds) reports.Assertion {
		a := assertion("the load ran to its end (not interrupted)", f.interrupted == "", 0, nil, "")
		if f.interrupted != "" {
			a.Observed, a.Detail = 1, "interrupted: "+f.interrupted+"; the report is partial"
		}
		return a
	}},
	{"operations ran", nil, func(f runFacts, b Bounds) reports.Assertion {
		return assertion(fmt.Sprintf("operations completed >= %d", b.MinOps), f.ops >= b.MinOps, float64(f.ops), ptr(float64(b.MinOps)),
			fmt.Sprintf("%d operations completed of %d scheduled", f.ops, f.scheduled))
	}},
	{"no error from the path under test", nil, func(f runFacts, b Bounds) reports.Assertion {
		var n int64
		var parts []string
		classes := make([]string, 0, len(f.pathErrors))
		for c := range f.pathErrors {
			classes = append(classes, c)
		}
		sort.Strings(classes)
		for _, c := range classes {
			n += f.pathErrors[c]
			parts = append(parts, fmt.Sprintf("%d %s (first: %s)", f.pathErrors[c], c, strings.Join(f.errorTexts[c], " | ")))
		}
		detail := "no script error, NOPERM, wrong reply shape, CROSSSLOT or uncured NOSCRIPT"
		if n > 0 {
			detail = strings.Join(parts, "; ")
		}
		return assertion(fmt.Sprintf("errors caused by the path under test <= %d", b.MaxPathErrors), n <= b.MaxPathErrors, float64(n), ptr(float64(b.MaxPathErrors)), detail)
	}},
	{"every planned fault injected", func(f runFacts) bool { return f.planned > 0 }, func(f runFacts, _ Bounds) reports.Assertion {
		ok := len(f.notInjected) == 0
		detail := fmt.Sprintf("%d of %d planned faults took effect", f.planned-len(f.notInjected), f.planned)
		if len(f.actedDespite) > 0 {
			detail += "; " + strings.Join(f.actedDespite, "; ")
		}
		if !ok {
			detail += "; not: " + strings.Join(f.notInjected, "; ")
		}
		return assertion("every planned fault injected", ok, float64(f.planned-len(f.notInjected)), ptr(float64(f.planned)), detail)
	}},
	{"dropped operations within bound", nil, func(f runFacts, b Bounds) reports.Assertion {
		r := 0.0
		if f.scheduled > 0 {
			r = float64(f.dropped) / float64(f.scheduled)
		}
		return assertion(fmt.Sprintf("dropped ratio <= %g", b.MaxDroppedRatio), r <= b.MaxDroppedRatio, r, ptr(b.MaxDroppedRatio),
			fmt.Sprintf("%d of %d scheduled operations dropped over the in-flight cap (the harness could not keep its schedule)", f.dropped, f.scheduled))
	}},
	{"a required invariant was judged", nil, func(f runFacts, _ Bounds) reports.Assertion {
		detail := fmt.Sprintf("%d of %d required invariants judged", f.judged, f.required)
		if len(f.skipped) > 0 {
			detail += "; skipped: " + strings.Join(f.skipped, "; ")
		}
		return assertion("required invariants judged (not all skipped)", f.judged > 0, float64(f.judged), ptr(1), detail)
	}},
}

// judgeEvidence applies every evidence rule, in order.
func judgeEvidence(f runFacts, b Bounds) []reports.Assertion {
	b = b.withDefaults()
	out := make([]reports.Assertion, 0, len(evidenceRules))
	for _, r := range evidenceRules {
		if r.applies != nil && !r.applies(f) {
			continue
		}
		out = append(out, r.judge(f, b))
	}
	return out
}

func assertion(name string, ok bool, observed float64, threshold *float64, detail string) reports.Assertion {
	st := reports.StatusPass
	if !ok {
		st = reports.StatusFail
	}
	return reports.Assertion{Name: name, Status: st, Observed: observed, Threshold: threshold, Detail: detail}
}

func ptr(v float64) *float64 { return &v }

// waiveConsequences waives each failed invariant whose failure is wholly a
// consequence of another (reports.Invariant.ConsequenceOf) that failed and
// that the scenario waives: the scenario does not require the cause, so
// not its consequence either (failover-kill tolerates acks lost to async
// replication, and so the units Redis sold again after losing them). The
// detail says so. A required cause leaves both failing.
func waiveConsequences(invs []reports.Invariant) []reports.Invariant {
	byID := map[string]reports.Invariant{}
	for _, inv := range invs {
		byID[inv.ID] = inv
	}
	for i := range invs {
		inv := &invs[i]
		cause, ok := byID[inv.ConsequenceOf]
		if inv.Status != reports.StatusFail || inv.Waived || inv.Expected != nil || !ok ||
			cause.Status != reports.StatusFail || !cause.Waived {
			continue
		}
		inv.Waived = true
		inv.Detail += fmt.Sprintf(" (waived: a consequence of %s %s, which this scenario does not require)", cause.ID, cause.Name)
	}
	return invs
}
