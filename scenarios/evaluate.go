package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"seckill-harness/checks"
	"seckill-harness/reports"
)

// Evaluate judges the scenario's assertions against a finished report and
// returns one reports.Assertion per objective, in this order:
//
//   - invariants: one assertion. Required invariants (Assertions.Invariants,
//     or every invariant in the report when nil) must not have status fail;
//     skip is accepted (the check had nothing to judge) and noted in the
//     detail; an explicitly required id missing from the report fails, and
//     so does a missing pipeline check when the scenario has a pipeline
//     (nil: "all that ran" includes the pipeline checks).
//   - slo: one per bound: "p99 <= 20ms in baseline", "p99 <= 50ms during
//     kill", "p99 <= 20ms" for the whole run ("service_time p99 …" for
//     of: service_time), read
//     from rep.Phases by name (or rep.LatencyMs / rep.ServiceTimeMs);
//     "throughput >= N ops/s in <phase>" from the phase's
//     throughput_ops_per_s. A phase missing from the report, or with no
//     operations, fails with a detail saying so; except the scenario's only
//     load phase, which the report does not list (it lists load phases
//     only when there are two or more): it is judged on the whole run.
//   - max_lost_acks: "lost_acks <= N" from rep.LostAcks.
//   - max_unknown_ratio: "unknown ratio <= R", unknown.total / totals.ops
//     (fails when no operation ran).
//   - min_throughput: "throughput >= N ops/s" from throughput_ops_per_s.
//   - outcomes: "outcomes.ACCEPTED == 1" (or >=, <=, or lo <= x <= hi)
//     from totals.outcomes (absent counts 0).
//
// Latencies are in ms (Unit "ms"). A suite evaluates nothing (nil).
func (s *Scenario) Evaluate(rep *reports.Report) []reports.Assertion {
	if rep == nil || s.IsSuite() {
		return nil
	}
	a := s.Assertions
	out := []reports.Assertion{s.evalInvariants(rep)}
	for _, slo := range a.SLO {
		out = append(out, evalSLO(rep, slo, len(s.Phases) == 1 && slo.Phase == s.Phases[0].Name)...)
	}
	if a.MaxLostAcks != nil && rep.LostAcksNotJudged != "" {
		out = append(out, reports.Assertion{Name: fmt.Sprintf("lost_acks <= %d", *a.MaxLostAcks), Status: reports.StatusSkip, Unit: "acks", Detail: "not judged: " + rep.LostAcksNotJudged})
	} else if a.MaxLostAcks != nil {
		out = append(out, bounded(fmt.Sprintf("lost_acks <= %d", *a.MaxLostAcks), float64(rep.LostAcks), float64(*a.MaxLostAcks), "acks", rep.LostAcks <= *a.MaxLostAcks, ""))
	}
	if a.MaxUnknownRatio != nil {
		name := fmt.Sprintf("unknown ratio <= %g", *a.MaxUnknownRatio)
		if rep.Totals.Ops <= 0 {
			out = append(out, failed(name, 0, *a.MaxUnknownRatio, "", "no operation ran"))
		} else {
			r := float64(rep.Unknown.Total) / float64(rep.Totals.Ops)
			out = append(out, bounded(name, r, *a.MaxUnknownRatio, "", r <= *a.MaxUnknownRatio,
				fmt.Sprintf("%d UNKNOWN of %d operations", rep.Unknown.Total, rep.Totals.Ops)))
		}
	}
	if a.MinThroughput != nil {
		out = append(out, performance(bounded(fmt.Sprintf("throughput >= %g ops/s", *a.MinThroughput), rep.ThroughputOpsPerS, *a.MinThroughput, "ops/s",
			rep.ThroughputOpsPerS >= *a.MinThroughput, ""), "throughput", ""))
	}
	for _, b := range a.Outcomes {
		out = append(out, evalOutcome(rep, b))
	}
	return out
}

func bounded(name string, observed, threshold float64, unit string, ok bool, detail string) reports.Assertion {
	st := reports.StatusPass
	if !ok {
		st = reports.StatusFail
	}
	t := threshold
	return reports.Assertion{Name: name, Status: st, Observed: observed, Threshold: &t, Unit: unit, Detail: detail}
}

// performance marks a judged latency or throughput assertion with what it
// bounds and the report phase it read ("" the whole run), so the verdict
// can tell whether the stand sustained the plan in that window
// (lifecycle's inconclusive rule). An assertion that could not be judged
// (no such phase, no operation) is not marked: it stays a failure.
func performance(a reports.Assertion, judges, phase string) reports.Assertion {
	a.Judges, a.Phase = judges, phase
	return a
}

func failed(name string, observed, threshold float64, unit, detail string) reports.Assertion {
	return bounded(name, observed, threshold, unit, false, detail)
}

// evalInvariants judges the invariants assertion: every required
// invariant (or, without a list, every one that ran, including the local
// sold-out and pipeline checks the scenario runs) is in the report and did
// not fail. A failure the scenario does not require is listed as waived,
// an expected failure is left to its own assertion.
func (s *Scenario) evalInvariants(rep *reports.Report) reports.Assertion {
	required := s.Assertions.Invariants
	name := "invariants pass (all that ran)"
	if required != nil {
		ids := make([]string, len(required))
		for i, r := range required {
			ids[i] = strings.ToUpper(r)
		}
		required = ids
		name = "invariants pass: " + strings.Join(ids, ", ")
	}
	byID := map[string]reports.Invariant{}
	for _, inv := range rep.Invariants {
		byID[strings.ToUpper(inv.ID)] = inv
	}
	var t invariantTally
	if required == nil {
		if len(rep.Invariants) == 0 {
			return failed(name, 0, 0, "", "the report has no invariant results (the final checks did not run)")
		}
		s.tallyAllThatRan(&t, rep, byID)
	} else {
		t.tallyRequired(required, rep, byID)
	}
	return bounded(name, float64(len(t.fails)), 0, "failed", len(t.fails) == 0, t.detail())
}

// invariantTally sorts the report's invariants for the invariants
// assertion: failures (with their detail), skips, failures not required
// (waived) and expected failures (by id).
type invariantTally struct {
	fails, skips, waived, expected []string
}

// check files one invariant under its id: expected (judged by its own
// assertion), failed or skipped; a pass is not listed.
func (t *invariantTally) check(id string, inv reports.Invariant) {
	if inv.Expected != nil {
		t.expected = append(t.expected, id) // judged by its own assertion
		return
	}
	switch {
	case inv.Status == reports.StatusFail && inv.Waived && inv.ConsequenceOf != "":
		// Required, but its failure is wholly a consequence of one the
		// scenario waives (reports.Invariant.ConsequenceOf).
		t.waived = append(t.waived, id+" (a consequence of "+inv.ConsequenceOf+")")
	case inv.Status == reports.StatusFail:
		t.fails = append(t.fails, fmt.Sprintf("%s %s failed: %s", id, inv.Name, inv.Detail))
	case inv.Status == reports.StatusSkip:
		t.skips = append(t.skips, id)
	}
}

// tallyAllThatRan checks every invariant in the report, and counts as a
// failure each local sold-out or pipeline check the scenario runs that is
// missing from it.
func (s *Scenario) tallyAllThatRan(t *invariantTally, rep *reports.Report, byID map[string]reports.Invariant) {
	for _, inv := range rep.Invariants {
		t.check(inv.ID, inv)
	}
	if s.LocalSoldOut > 0 {
		for _, id := range LocalSoldOutInvariantIDs {
			if _, ok := byID[id]; !ok {
				t.fails = append(t.fails, id+" is not in the report (the scenario runs the local sold-out flag: its check did not run)")
			}
		}
	}
	if s.Pipeline != nil {
		// "All that ran" includes the pipeline checks: a run with the
		// pipeline on whose report lacks them was not judged.
		for _, id := range PipelineInvariantIDs {
			if _, ok := byID[id]; !ok {
				t.fails = append(t.fails, id+" is not in the report (the scenario runs the pipeline: its checks "+checks.IDRange(true)+" did not run)")
			}
		}
	}
}

// tallyRequired checks each required id (upper case), a missing one
// failing, and lists the report's other failures as waived.
func (t *invariantTally) tallyRequired(required []string, rep *reports.Report, byID map[string]reports.Invariant) {
	for _, id := range required {
		inv, ok := byID[id]
		if !ok {
			t.fails = append(t.fails, id+" is not in the report")
			continue
		}
		t.check(id, inv)
	}
	for _, inv := range rep.Invariants {
		if inv.Status == reports.StatusFail && inv.Expected == nil && !slices.Contains(required, strings.ToUpper(inv.ID)) {
			t.waived = append(t.waived, inv.ID)
		}
	}
}

// detail is the assertion's detail: the failures, then the skipped,
// waived and expected ids, each part only when it has entries.
func (t *invariantTally) detail() string {
	var parts []string
	if len(t.fails) > 0 {
		parts = append(parts, strings.Join(t.fails, "; "))
	}
	if len(t.skips) > 0 {
		parts = append(parts, "skipped (nothing to judge): "+strings.Join(t.skips, ", "))
	}
	if len(t.waived) > 0 {
		parts = append(parts, "failed but not required by this scenario: "+strings.Join(t.waived, ", "))
	}
	if len(t.expected) > 0 {
		parts = append(parts, "expected to fail (judged by their own assertion): "+strings.Join(t.expected, ", "))
	}
	return strings.Join(parts, "; ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtDur(d time.Duration) string { return d.String() }

// evalSLO judges one SLO. onlyPhase says slo.Phase is the scenario's only
// load phase: the report lists load phases only when there are two or
// more, so that phase is then judged on the whole run (the same operations).
func evalSLO(rep *reports.Report, slo SLO, onlyPhase bool) []reports.Assertion {
	in, prefix := "", ""
	switch {
	case strings.HasPrefix(slo.Phase, "during ") || strings.HasPrefix(slo.Phase, "after "):
		in = " " + slo.Phase
	case slo.Phase != "":
		in = " in " + slo.Phase
	}
	if slo.Of == "service_time" {
		prefix = "service_time "
	}
	pct := rep.LatencyMs
	if slo.Of == "service_time" {
		pct = rep.ServiceTimeMs
	}
	throughput := rep.ThroughputOpsPerS
	problem, note := "", ""
	if slo.Phase != "" && onlyPhase && !slices.ContainsFunc(rep.Phases, func(p reports.Phase) bool { return p.Name == slo.Phase }) {
		note = fmt.Sprintf("%s is the only load phase: judged on the whole run", slo.Phase)
		if rep.Totals.Ops == 0 {
			problem = "no operation ran"
		}
	} else if slo.Phase != "" {
		var ph *reports.Phase
		var names []string
		for i := range rep.Phases {
			names = append(names, rep.Phases[i].Name)
			if rep.Phases[i].Name == slo.Phase && ph == nil {
				ph = &rep.Phases[i]
			}
		}
		switch {
		case ph == nil:
			problem = fmt.Sprintf("phase %q is not in the report (report phases: %s)", slo.Phase, strings.Join(names, ", "))
		case ph.Ops == 0:
			problem = fmt.Sprintf("phase %q had no operations", slo.Phase)
		default:
			pct, throughput = ph.LatencyMs, ph.ThroughputOpsPerS
			if slo.Of == "service_time" {
				pct = ph.ServiceTimeMs
			}
		}
	} else if rep.Totals.Ops == 0 {
		problem = "no operation ran"
	}
	var out []reports.Assertion
	for _, b := range slo.bounds() {
		if b.limit == 0 {
			continue
		}
		name := fmt.Sprintf("%s%s <= %s%s", prefix, b.key, fmtDur(b.limit), in)
		if problem != "" {
			out = append(out, failed(name, 0, ms(b.limit), "ms", problem))
			continue
		}
		obs := b.pick(pct)
		out = append(out, performance(bounded(name, obs, ms(b.limit), "ms", obs <= ms(b.limit), note), "latency", slo.Phase))
	}
	if slo.MinThroughput > 0 {
		name := fmt.Sprintf("throughput >= %g ops/s%s", slo.MinThroughput, in)
		if problem != "" {
			out = append(out, failed(name, 0, slo.MinThroughput, "ops/s", problem))
		} else {
			out = append(out, performance(bounded(name, throughput, slo.MinThroughput, "ops/s", throughput >= slo.MinThroughput, note), "throughput", slo.Phase))
		}
	}
	return out
}

func evalOutcome(rep *reports.Report, b OutcomeBound) reports.Assertion {
	got := rep.Totals.Outcomes[b.Outcome]
	obs := float64(got)
	key := "outcomes." + b.Outcome
	switch {
	case b.Exactly != nil:
		return bounded(fmt.Sprintf("%s == %d", key, *b.Exactly), obs, float64(*b.Exactly), "ops", got == *b.Exactly, "")
	case b.Min != nil && b.Max != nil:
		a := bounded(fmt.Sprintf("%d <= %s <= %d", *b.Min, key, *b.Max), obs, float64(*b.Max), "ops", got >= *b.Min && got <= *b.Max, "")
		return a
	case b.Min != nil:
		return bounded(fmt.Sprintf("%s >= %d", key, *b.Min), obs, float64(*b.Min), "ops", got >= *b.Min, "")
	case b.Max != nil:
		return bounded(fmt.Sprintf("%s <= %d", key, *b.Max), obs, float64(*b.Max), "ops", got <= *b.Max, "")
	}
	return failed(key, obs, 0, "ops", "no bound given")
}
