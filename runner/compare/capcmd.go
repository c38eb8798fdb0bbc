package compare

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"seckill-harness/reports"
	"seckill-harness/reports/results"
	"seckill-harness/runner/lifecycle"
)

// Capacity runs the plan's first phase open-loop at constant rates and
// finds the highest rate that holds the SLO (latency p99 from the intended
// send, no failed invariant, no dropped operation, throughput at least 95%
// of the rate, errors within MaxErrorRatio): ramp by Factor, bisect to
// Precision, confirm Confirm times (see SearchCapacity). It is compare's
// capacity search with no axis: one value, the plan as it is. It prints
// the curve, writes capacity.json and report.html into out.Dir (nothing
// when out.Dir is "") and every step's report into out.Dir/step-NN-RATE/.
func Capacity(ctx context.Context, log io.Writer, p *lifecycle.Plan, co CapacityOptions, out lifecycle.Output) (passed bool, err error) {
	if err := co.Validate(); err != nil {
		return false, err
	}
	paths, err := PathMixes(co.PathMix, false)
	if err != nil {
		return false, err
	}
	began := time.Now()
	rows, err := measureAll(ctx, log, p, Axis{Values: []Value{{Path: paths[0]}}}, searchAt{co}, out)
	if err != nil {
		return false, err
	}
	r := rows[0]
	sr := r.search
	fmt.Fprintf(log, "\ncapacity %s (%s path, %d bucket(s)): SLO p99 <= %s from the intended send, no drops, no failed invariant, errors <= %.1f%%\n",
		p.Name, r.Path, r.Buckets, co.SloP99, co.MaxErrorRatio*100)
	curveTable.text(log, sr.Steps)
	fmt.Fprintln(log, heldText(sr))
	if out.Dir == "" {
		return sr.Held > 0, nil
	}
	files := []string{filepath.Join(out.Dir, "capacity.json"), filepath.Join(out.Dir, "report.html")}
	if err := writeJSONFile(files[0], curveDoc(p, r, co)); err != nil {
		return false, err
	}
	sum := &reports.Report{Scenario: p.Name + " — capacity", Seed: p.Phases[0].Config.Seed, Passed: sr.Held > 0,
		StartedAt: began, DurationS: time.Since(began).Seconds(), Capacity: capacityResultOf(sr, co)}
	if err := writeHTMLFile(files[1], sum); err != nil {
		return false, err
	}
	fmt.Fprintf(log, "capacity: %s\n", strings.Join(files, ", "))
	_ = results.AppendReport(ctx, out.Results, sum, results.KindCapacity, out.Dir, out.ErrOut)
	return sr.Held > 0, nil
}

// heldText is the search's answer in a sentence.
func heldText(sr *SearchResult[Step]) string {
	if sr.StandBound > 0 {
		return standBoundText(sr)
	}
	switch {
	case sr.Held == 0:
		return fmt.Sprintf("no rate held, down to %.0f ops/s: try a lower --start", sr.Broke)
	case !sr.Converged:
		return fmt.Sprintf("highest rate that held: %.0f ops/s (every step held: raise --max-steps to find the limit)%s", sr.Held, confirmText(sr))
	}
	return fmt.Sprintf("highest rate that held: %.0f ops/s (broke at %.0f: within %.1f%%)%s", sr.Held, sr.Broke,
		100*(sr.Broke-sr.Held)/sr.Held, confirmText(sr))
}

// standBoundText is the answer of a search the stand ended: the system's
// limit was not reached, the highest rate that held is a lower bound.
func standBoundText(sr *SearchResult[Step]) string {
	by, _ := boundOf(sr)
	if sr.Held == 0 {
		return fmt.Sprintf("the system's limit was not reached: the stand could not pace %.0f ops/s (%s)", sr.StandBound, by)
	}
	return fmt.Sprintf("the system's limit was not reached: the stand could pace at most %.0f ops/s (fell behind at %.0f ops/s: %s); %.0f ops/s is a lower bound of the system's capacity%s",
		sr.Held, sr.StandBound, by, sr.Held, confirmText(sr))
}

// curveDoc is capacity.json: the SLO, the curve in the order run, and the
// answer (null rates when none held or none broke).
func curveDoc(p *lifecycle.Plan, r Row, co CapacityOptions) map[string]any {
	sr := r.search
	doc := map[string]any{"scenario": p.Name, "slo_p99_ms": float64(co.SloP99.Microseconds()) / 1000,
		"max_error_ratio": co.MaxErrorRatio, "steps": stepsOf(sr), "path": r.Path, "buckets": r.Buckets,
		"precision": co.Precision, "converged": sr.Converged, "confirmations": sr.Confirmations,
		"confirmations_held": sr.ConfirmationsHeld, "placement": r.Placement,
		"highest_rate_that_held": nil, "lowest_rate_that_broke": nil, "stand_bound": sr.StandBound > 0, "bound_by": nil}
	if by, _ := boundOf(sr); by != "" {
		doc["bound_by"] = by
	}
	if sr.Held > 0 {
		doc["highest_rate_that_held"] = sr.Held
	}
	if sr.Broke > 0 {
		doc["lowest_rate_that_broke"] = sr.Broke
	}
	return doc
}

func confirmText(sr *SearchResult[Step]) string {
	if sr.Confirmations == 0 {
		return ""
	}
	return fmt.Sprintf("; confirmed %d of %d", sr.ConfirmationsHeld, sr.Confirmations)
}

// stepsOf is the curve in the order run.
func stepsOf(sr *SearchResult[Step]) []Step {
	out := make([]Step, 0, len(sr.Steps))
	for _, s := range sr.Steps {
		out = append(out, s.Step)
	}
	return out
}

// capacityResultOf is the report section: the curve sorted by rate (the
// order run is in capacity.json).
func capacityResultOf(sr *SearchResult[Step], co CapacityOptions) *reports.CapacityResult {
	cr := &reports.CapacityResult{TargetP99Ms: float64(co.SloP99.Microseconds()) / 1000, MaxRateOpsPerS: sr.Held,
		LowestBrokeOpsPerS: sr.Broke, Confirmations: sr.Confirmations, ConfirmationsHeld: sr.ConfirmationsHeld}
	for _, ss := range sr.Steps {
		s := ss.Step
		cr.Steps = append(cr.Steps, reports.CapacityStep{RateOpsPerS: s.Rate, ThroughputOpsPerS: s.ThroughputOpsPerS,
			DurationS: co.StepDuration.Seconds(), Ops: s.ops, Errors: s.errors, Dropped: s.Dropped,
			LatencyMs: s.latency, Passed: s.Held, Phase: string(ss.Phase), StandBound: s.StandBound, BoundBy: s.BoundBy})
	}
	sort.SliceStable(cr.Steps, func(i, j int) bool { return cr.Steps[i].RateOpsPerS < cr.Steps[j].RateOpsPerS })
	return cr
}

// stepOf reads one step's run and judges it against the SLO: p99, the
// checks, drops, throughput at least 95% of the rate, errors.
func stepOf(rate float64, res *lifecycle.Result, dir string, co CapacityOptions) Step {
	rep := res.Report
	s := Step{Rate: rate, ThroughputOpsPerS: rep.ThroughputOpsPerS, P50Ms: rep.LatencyMs.P50, P99Ms: rep.LatencyMs.P99,
		P999Ms: rep.LatencyMs.P999, ServiceP99Ms: rep.ServiceTimeMs.P99, LateStarts: rep.Totals.LateStarts,
		Dropped: rep.Totals.Dropped, ReportDir: dir, ops: rep.Totals.Ops, latency: rep.LatencyMs,
		errors: rep.Totals.Outcomes["ERROR"] + rep.Totals.Outcomes["UNKNOWN"], stock: rep.Stock, outcomes: rep.Totals.Outcomes}
	if rep.Totals.Ops > 0 {
		s.ErrorRatio = float64(s.errors) / float64(rep.Totals.Ops)
		s.SoldOutShare = float64(rep.Totals.Outcomes["SOLD_OUT"]) / float64(rep.Totals.Ops)
	}
	var why []string
	if s.P99Ms > float64(co.SloP99.Microseconds())/1000 {
		why = append(why, fmt.Sprintf("p99 %.2f ms > %s", s.P99Ms, co.SloP99))
	}
	if !rep.Passed {
		why = append(why, "checks failed: "+strings.Join(rep.FailedChecks(), ","))
	}
	if s.Dropped > 0 {
		why = append(why, fmt.Sprintf("%d dropped", s.Dropped))
	}
	if s.ThroughputOpsPerS < 0.95*rate {
		why = append(why, fmt.Sprintf("throughput %.0f < 95%% of %.0f", s.ThroughputOpsPerS, rate))
	}
	if s.ErrorRatio > co.MaxErrorRatio {
		why = append(why, fmt.Sprintf("errors %.2f%%", s.ErrorRatio*100))
	}
	s.Held = len(why) == 0
	s.Why = strings.Join(why, "; ")
	return s
}
