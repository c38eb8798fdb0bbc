package lifecycle

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner"
)

// CapacityOptions bound a capacity search.
type CapacityOptions struct {
	Start, Factor float64       // first rate; multiplier per step
	MaxSteps      int           // most steps to try
	StepDuration  time.Duration // load time per step
	SloP99        time.Duration // latency p99 a step must stay under
	MaxErrorRatio float64       // largest share of ERROR+UNKNOWN a step may have
}

// capacityStep is one rate tried.
type capacityStep struct {
	Rate              float64 `json:"rate"`
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
	P50Ms             float64 `json:"p50_ms"`
	P99Ms             float64 `json:"p99_ms"`
	P999Ms            float64 `json:"p999_ms"`
	ServiceP99Ms      float64 `json:"service_p99_ms"`
	LateStarts        int64   `json:"late_starts"`
	Dropped           int64   `json:"dropped"`
	ErrorRatio        float64 `json:"error_ratio"` // (ERROR + UNKNOWN) / ops
	Held              bool    `json:"held"`
	Why               string  `json:"why,omitempty"` // what broke
	ReportDir         string  `json:"report_dir"`

	ops, errors int64
	latency     reports.Percentiles
}

func (c CapacityOptions) Validate() error {
	switch {
	case c.Start <= 0:
		return fmt.Errorf("--start must be a positive rate")
	case c.Factor <= 1:
		return fmt.Errorf("--factor must be above 1 (each step multiplies the rate by it)")
	case c.MaxSteps < 1:
		return fmt.Errorf("--max-steps must be at least 1")
	case c.StepDuration <= 0:
		return fmt.Errorf("--step-duration must be positive")
	case c.SloP99 <= 0:
		return fmt.Errorf("--slo-p99 must be positive")
	case c.MaxErrorRatio < 0 || c.MaxErrorRatio > 1:
		return fmt.Errorf("--max-error-ratio must be within [0,1]")
	}
	return nil
}

// runCapacity runs the plan's first phase open-loop at a constant rate,
// multiplying the rate by factor each step, until a step breaks the SLO
// (latency p99 from the intended send, a failed invariant, a dropped
// operation, throughput under 95% of the rate, or too many errors); it
// reports the highest rate that held and the curve.
func Capacity(ctx context.Context, log io.Writer, p *Plan, co CapacityOptions, out Output) (passed bool, err error) {
	if err := co.Validate(); err != nil {
		return false, err
	}
	var steps []capacityStep
	best := -1.0
	began := time.Now()
	rate := co.Start
	for i := 0; i < co.MaxSteps; i++ {
		cfg := p.Phases[0].Config
		cfg.Mode, cfg.Shape, cfg.Duration, cfg.MaxOps = runner.ModeOpen, runner.Shape{Kind: "constant", Rate: rate}, co.StepDuration, 0
		q := *p
		q.Phases = []runner.Phase{{Name: fmt.Sprintf("%.0f ops/s", rate), Config: cfg}}
		q.Faults, q.Evaluate = nil, nil
		q.Name = fmt.Sprintf("%s capacity step %d (%.0f ops/s)", p.Name, i+1, rate)
		sub := out
		sub.Dir = filepath.Join(out.Dir, fmt.Sprintf("step-%02d-%.0f", i+1, rate))
		oc, err := Execute(ctx, &q, sub)
		if err != nil {
			return false, fmt.Errorf("step %d: %w", i+1, err)
		}
		if oc.RunErr != nil {
			return false, oc.Interrupted()
		}
		st := capacityStepOf(rate, oc, sub.Dir, co)
		steps = append(steps, st)
		verdict := "held"
		if !st.Held {
			verdict = "broke: " + st.Why
		}
		fmt.Fprintf(log, "step %d: %.0f ops/s -> %.0f ops/s, p99 %.2f ms, %s\n", i+1, rate, st.ThroughputOpsPerS, st.P99Ms, verdict)
		if !st.Held {
			break
		}
		best = rate
		rate *= co.Factor
	}
	fmt.Fprintf(log, "\ncapacity %s: SLO p99 <= %s from the intended send, no drops, no failed invariant, errors <= %.1f%%\n",
		p.Name, co.SloP99, co.MaxErrorRatio*100)
	w := tabwriter.NewWriter(log, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "rate\tachieved\tp50 ms\tp99 ms\tp99.9 ms\tservice p99\tlate\tdropped\terrors\tresult\t")
	for _, s := range steps {
		res := "held"
		if !s.Held {
			res = "BROKE " + s.Why
		}
		fmt.Fprintf(w, "%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.2f%%\t%s\t\n", s.Rate, s.ThroughputOpsPerS, s.P50Ms, s.P99Ms, s.P999Ms,
			s.ServiceP99Ms, s.LateStarts, s.Dropped, s.ErrorRatio*100, res)
	}
	w.Flush()
	summary := map[string]any{"scenario": p.Name, "slo_p99_ms": float64(co.SloP99.Microseconds()) / 1000,
		"max_error_ratio": co.MaxErrorRatio, "steps": steps}
	switch {
	case best < 0:
		fmt.Fprintf(log, "no rate held: the first step (%.0f ops/s) already broke the SLO; try a lower --start\n", co.Start)
		summary["highest_rate_that_held"] = nil
	case len(steps) == co.MaxSteps && steps[len(steps)-1].Held:
		fmt.Fprintf(log, "highest rate that held: %.0f ops/s (every step held: raise --max-steps to find the limit)\n", best)
		summary["highest_rate_that_held"] = best
	default:
		fmt.Fprintf(log, "highest rate that held: %.0f ops/s\n", best)
		summary["highest_rate_that_held"] = best
	}
	if err := writeJSONFile(filepath.Join(out.Dir, "capacity.json"), summary); err != nil {
		return false, err
	}
	cr := &reports.CapacityResult{TargetP99Ms: float64(co.SloP99.Microseconds()) / 1000, MaxRateOpsPerS: max(best, 0)}
	for _, s := range steps {
		cr.Steps = append(cr.Steps, reports.CapacityStep{RateOpsPerS: s.Rate, ThroughputOpsPerS: s.ThroughputOpsPerS,
			DurationS: co.StepDuration.Seconds(), Ops: s.ops, Errors: s.errors, Dropped: s.Dropped,
			LatencyMs: s.latency, Passed: s.Held})
	}
	sum := &reports.Report{Scenario: p.Name + " — capacity", Seed: p.Phases[0].Config.Seed, Passed: best >= 0,
		StartedAt: began, DurationS: time.Since(began).Seconds(), Capacity: cr}
	if err := writeHTMLFile(filepath.Join(out.Dir, "report.html"), sum); err != nil {
		return false, err
	}
	fmt.Fprintf(log, "capacity: %s, %s\n", filepath.Join(out.Dir, "capacity.json"), filepath.Join(out.Dir, "report.html"))
	if best < 0 {
		return false, nil
	}
	return true, nil
}

func capacityStepOf(rate float64, oc *Outcome, dir string, co CapacityOptions) capacityStep {
	rep := oc.Report
	s := capacityStep{Rate: rate, ThroughputOpsPerS: rep.ThroughputOpsPerS, P50Ms: rep.LatencyMs.P50, P99Ms: rep.LatencyMs.P99,
		P999Ms: rep.LatencyMs.P999, ServiceP99Ms: rep.ServiceTimeMs.P99, LateStarts: rep.Totals.LateStarts,
		Dropped: rep.Totals.Dropped, ReportDir: dir, ops: rep.Totals.Ops, latency: rep.LatencyMs,
		errors: rep.Totals.Outcomes["ERROR"] + rep.Totals.Outcomes["UNKNOWN"]}
	if rep.Totals.Ops > 0 {
		s.ErrorRatio = float64(rep.Totals.Outcomes["ERROR"]+rep.Totals.Outcomes["UNKNOWN"]) / float64(rep.Totals.Ops)
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
