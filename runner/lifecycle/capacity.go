package lifecycle

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner"
)

// CapacityOptions bound a capacity search.
type CapacityOptions struct {
	Start, Factor float64       // first rate; multiplier per ramp step
	MaxSteps      int           // most ramp steps to try
	StepDuration  time.Duration // load time per step
	SloP99        time.Duration // latency p99 a step must stay under
	MaxErrorRatio float64       // largest share of ERROR+UNKNOWN a step may have
	// Precision is the relative width the bisection stops at (0.05: the
	// capacity is known to ±5%).
	Precision float64
	// Confirm is how many times the final rate is run again.
	Confirm int
	// PathMix is the reserve path the steps load: PathScenario (the
	// scenario's stock and users as they are), PathAccept or PathSoldOut
	// (see PathMixes); "" is PathScenario. compare also takes PathBoth.
	PathMix string
}

// The --path-mix values.
const (
	// PathScenario keeps the scenario's proportions at every rate: each
	// step's stock and users are the scenario's scaled by the step's demand
	// (rate × step duration) over the scenario's (its phases' rate ×
	// duration), so a scenario that sells out after a tenth of its traffic
	// does so in every step. A closed-loop scenario keeps its figures.
	PathScenario = "scenario"
	// PathAccept sizes each step's stock at twice its demand (rate ×
	// step duration) and its users above the demand: nearly every
	// operation takes the accept path.
	PathAccept = "accept"
	// PathSoldOut sizes each step's stock at a tenth of its demand: the
	// stock is exhausted early and ~90% of the operations take the
	// SOLD_OUT path.
	PathSoldOut = "sold-out"
	// PathBoth (compare only) measures PathAccept, then PathSoldOut.
	PathBoth = "both"
)

// PathMixes lists the paths a --path-mix value measures, in order.
func PathMixes(v string, allowBoth bool) ([]string, error) {
	switch v {
	case "", PathScenario:
		return []string{PathScenario}, nil
	case PathAccept, PathSoldOut:
		return []string{v}, nil
	case PathBoth:
		if allowBoth {
			return []string{PathAccept, PathSoldOut}, nil
		}
	}
	valid := "scenario, accept, sold-out"
	if allowBoth {
		valid += ", both"
	}
	return nil, fmt.Errorf("--path-mix %q: valid values are %s", v, valid)
}

// capacityStep is one rate tried.
type capacityStep struct {
	Rate              float64     `json:"rate"`
	Phase             SearchPhase `json:"phase"`
	ThroughputOpsPerS float64     `json:"throughput_ops_per_s"`
	P50Ms             float64     `json:"p50_ms"`
	P99Ms             float64     `json:"p99_ms"`
	P999Ms            float64     `json:"p999_ms"`
	ServiceP99Ms      float64     `json:"service_p99_ms"`
	LateStarts        int64       `json:"late_starts"`
	Dropped           int64       `json:"dropped"`
	ErrorRatio        float64     `json:"error_ratio"` // (ERROR + UNKNOWN) / ops
	Held              bool        `json:"held"`
	Why               string      `json:"why,omitempty"` // what broke
	ReportDir         string      `json:"report_dir"`
	// Stock and Users the step ran with (see CapacityOptions.PathMix).
	Stock int64 `json:"stock"`
	Users int   `json:"users"`
	// SoldOutShare is the share of operations answered SOLD_OUT: which
	// path the step measured.
	SoldOutShare float64 `json:"sold_out_share"`
	// MasterCPU is each master's CPU over the load (INFO cpu deltas of
	// used_cpu_sys + used_cpu_user); ClientCPUSecs this process's.
	MasterCPU     []MasterCPU `json:"master_cpu,omitempty"`
	MasterCPUErr  string      `json:"master_cpu_error,omitempty"`
	ClientCPUSecs float64     `json:"client_cpu_s"`

	ops, errors int64
	latency     reports.Percentiles
	stock       reports.Stock
	outcomes    map[string]int64
}

func (c CapacityOptions) Validate() error {
	switch {
	case c.StepDuration <= 0:
		return fmt.Errorf("--step-duration must be positive")
	case c.SloP99 <= 0:
		return fmt.Errorf("--slo-p99 must be positive")
	case !(c.MaxErrorRatio >= 0 && c.MaxErrorRatio <= 1):
		return fmt.Errorf("--max-error-ratio must be within [0,1]")
	}
	return c.search().Validate()
}

func (c CapacityOptions) search() SearchOptions {
	return SearchOptions{Start: c.Start, Factor: c.Factor, MaxSteps: c.MaxSteps, Precision: c.Precision, Confirm: c.Confirm}
}

// capacityFinding is one capacity search: its variant, its steps and the
// placement of its buckets.
type capacityFinding struct {
	Path      string
	Buckets   uint32
	Search    *SearchResult[capacityStep]
	Placement *Placement
}

// searchCapacity runs the capacity search of p (its first phase,
// open-loop, at constant rates) on one stand it opens (unless p.Stand is
// set): every step is a fresh activity with the same id, so the buckets
// sit on the same slots at every rate. Step reports go to
// <out.Dir>/step-NN-RATE/.
func searchCapacity(ctx context.Context, log io.Writer, p *Plan, co CapacityOptions, path string, out Output) (*capacityFinding, error) {
	if err := co.Validate(); err != nil {
		return nil, err
	}
	stand := p.Stand
	if stand == nil {
		st, err := OpenStand(ctx, out.logger(), p.Cluster, p.MaxConcurrency(), false)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		stand = st
	}
	id := p.ActivityID
	if id == "" {
		id = "capacity"
		if !stand.Cluster.Owned() {
			id = fmt.Sprintf("capacity%d", time.Now().UnixMilli())
		}
	}
	f := &capacityFinding{Path: path, Buckets: p.Buckets}
	n := 0
	probe := func(rate float64, ph SearchPhase) (bool, capacityStep, error) {
		n++
		q := *p
		cfg := p.Phases[0].Config
		cfg.Mode, cfg.Shape, cfg.Duration, cfg.MaxOps = runner.ModeOpen, runner.Shape{Kind: "constant", Rate: rate}, co.StepDuration, 0
		q.Stock, cfg.Users = pathSizing(path, p.Stock, p.Buckets, cfg.Users, scenarioDemand(p), rate*co.StepDuration.Seconds())
		q.Phases = []runner.Phase{{Name: fmt.Sprintf("%.0f ops/s", rate), Config: cfg}}
		q.Faults, q.FaultNames, q.Evaluate, q.Stand, q.ActivityID = nil, nil, nil, stand, id
		q.Name = fmt.Sprintf("%s capacity step %d (%s, %.0f ops/s)", p.Name, n, ph, rate)
		cpu := &loadCPU{cluster: stand.Cluster}
		q.OnLoad = cpu.onLoad
		sub := out
		sub.Dir = filepath.Join(out.Dir, fmt.Sprintf("step-%02d-%.0f", n, rate))
		oc, err := Execute(ctx, &q, sub)
		if err != nil {
			return false, capacityStep{}, err
		}
		if oc.RunErr != nil {
			return false, capacityStep{}, oc.Interrupted()
		}
		if f.Placement == nil {
			if f.Placement, err = PlacementOf(ctx, stand.Cluster, oc.Activity); err != nil {
				return false, capacityStep{}, err
			}
		}
		if err := clearActivity(ctx, stand); err != nil {
			return false, capacityStep{}, err
		}
		st := capacityStepOf(rate, oc, sub.Dir, co)
		st.Phase, st.Stock, st.Users, st.ClientCPUSecs = ph, q.Stock, cfg.Users, cpu.clientSecs()
		if m, err := cpu.masters(); err != nil {
			st.MasterCPUErr = err.Error()
		} else {
			st.MasterCPU = m
		}
		verdict := "held"
		if !st.Held {
			verdict = "broke: " + st.Why
		}
		fmt.Fprintf(log, "step %d (%s): %.0f ops/s -> %.0f ops/s, p99 %.2f ms, %s\n", n, ph, rate, st.ThroughputOpsPerS, st.P99Ms, verdict)
		return st.Held, st, nil
	}
	sr, err := SearchCapacity(co.search(), probe)
	f.Search = sr
	return f, err
}

// pathSizing is the stock and users of a step whose demand (operations
// offered) is demand, for the path; the scenario's are stock and users for
// its own demand scenario (0: unknown).
func pathSizing(path string, stock int64, buckets uint32, users int, scenario, demand float64) (int64, int) {
	switch path {
	case PathAccept:
		return max(int64(math.Ceil(2*demand)), stock, int64(buckets)), max(users, int(math.Ceil(1.2*demand)))
	case PathSoldOut:
		return max(int64(math.Ceil(demand/10)), int64(buckets)), max(users, int(math.Ceil(1.2*demand)))
	}
	if scenario <= 0 {
		return stock, users
	}
	scale := demand / scenario
	return max(int64(math.Round(float64(stock)*scale)), int64(buckets)), max(int(math.Round(float64(users)*scale)), 1)
}

// scenarioDemand is the operations the plan's load offers: rate × duration
// over its open-loop phases (0 when a phase is closed-loop: unknown).
func scenarioDemand(p *Plan) float64 {
	var d float64
	for _, ph := range p.Phases {
		if ph.Config.Mode != runner.ModeOpen {
			return 0
		}
		d += ph.Config.Shape.Rate * ph.Config.Duration.Seconds()
	}
	return d
}

// clearActivity removes a step's keys from a cluster the harness owns
// (FLUSHALL on every master; the replicas follow), so the next step can set
// up the same activity id. On someone else's cluster Execute already
// removed exactly its keys.
func clearActivity(ctx context.Context, st *Stand) error {
	if !st.Cluster.Owned() {
		return nil
	}
	nodes, err := st.Cluster.Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.Role != "master" {
			continue
		}
		adm, err := st.Cluster.Admin(n.Addr)
		if err != nil {
			return err
		}
		if err := adm.FlushAll(ctx).Err(); err != nil {
			return fmt.Errorf("clear the step's keys on %s: %w", n.Addr, err)
		}
	}
	return nil
}

// Capacity runs the plan's first phase open-loop at constant rates and
// finds the highest rate that holds the SLO (latency p99 from the intended
// send, no failed invariant, no dropped operation, throughput at least 95%
// of the rate, errors within MaxErrorRatio): ramp by Factor, bisect to
// Precision, confirm Confirm times (see SearchCapacity). It prints the
// curve, writes capacity.json and report.html into out.Dir and every
// step's report into out.Dir/step-NN-RATE/.
func Capacity(ctx context.Context, log io.Writer, p *Plan, co CapacityOptions, out Output) (passed bool, err error) {
	if err := co.Validate(); err != nil {
		return false, err
	}
	paths, err := PathMixes(co.PathMix, false)
	if err != nil {
		return false, err
	}
	began := time.Now()
	f, err := searchCapacity(ctx, log, p, co, paths[0], out)
	if err != nil {
		return false, err
	}
	sr := f.Search
	fmt.Fprintf(log, "\ncapacity %s (%s path, %d bucket(s)): SLO p99 <= %s from the intended send, no drops, no failed invariant, errors <= %.1f%%\n",
		p.Name, f.Path, f.Buckets, co.SloP99, co.MaxErrorRatio*100)
	writeCurve(log, sr.Steps)
	summary := map[string]any{"scenario": p.Name, "slo_p99_ms": float64(co.SloP99.Microseconds()) / 1000,
		"max_error_ratio": co.MaxErrorRatio, "steps": stepsOf(sr), "path": f.Path, "buckets": f.Buckets,
		"precision": co.Precision, "converged": sr.Converged, "confirmations": sr.Confirmations,
		"confirmations_held": sr.ConfirmationsHeld, "placement": f.Placement}
	summary["highest_rate_that_held"] = nil
	if sr.Held > 0 {
		summary["highest_rate_that_held"] = sr.Held
	}
	summary["lowest_rate_that_broke"] = nil
	if sr.Broke > 0 {
		summary["lowest_rate_that_broke"] = sr.Broke
	}
	switch {
	case sr.Held == 0:
		fmt.Fprintf(log, "no rate held, down to %.0f ops/s: try a lower --start\n", sr.Broke)
	case !sr.Converged:
		fmt.Fprintf(log, "highest rate that held: %.0f ops/s (every step held: raise --max-steps to find the limit)%s\n", sr.Held, confirmText(sr))
	default:
		fmt.Fprintf(log, "highest rate that held: %.0f ops/s (broke at %.0f: within %.1f%%)%s\n", sr.Held, sr.Broke,
			100*(sr.Broke-sr.Held)/sr.Held, confirmText(sr))
	}
	if err := writeJSONFile(filepath.Join(out.Dir, "capacity.json"), summary); err != nil {
		return false, err
	}
	sum := &reports.Report{Scenario: p.Name + " — capacity", Seed: p.Phases[0].Config.Seed, Passed: sr.Held > 0,
		StartedAt: began, DurationS: time.Since(began).Seconds(), Capacity: capacityResultOf(sr, co)}
	if err := writeHTMLFile(filepath.Join(out.Dir, "report.html"), sum); err != nil {
		return false, err
	}
	fmt.Fprintf(log, "capacity: %s, %s\n", filepath.Join(out.Dir, "capacity.json"), filepath.Join(out.Dir, "report.html"))
	return sr.Held > 0, nil
}

func confirmText(sr *SearchResult[capacityStep]) string {
	if sr.Confirmations == 0 {
		return ""
	}
	return fmt.Sprintf("; confirmed %d of %d", sr.ConfirmationsHeld, sr.Confirmations)
}

// stepsOf is the curve in the order run.
func stepsOf(sr *SearchResult[capacityStep]) []capacityStep {
	out := make([]capacityStep, 0, len(sr.Steps))
	for _, s := range sr.Steps {
		out = append(out, s.Step)
	}
	return out
}

func writeCurve(log io.Writer, steps []SearchStep[capacityStep]) {
	w := tabwriter.NewWriter(log, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "step\trate\tachieved\tp50 ms\tp99 ms\tp99.9 ms\tservice p99\tlate\tdropped\terrors\t"+spreadColumns+"\tresult\t")
	for _, ss := range steps {
		s := ss.Step
		res := "held"
		if !s.Held {
			res = "BROKE " + s.Why
		}
		fmt.Fprintf(w, "%s\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.2f%%\t%s\t%s\t\n", ss.Phase, s.Rate, s.ThroughputOpsPerS, s.P50Ms, s.P99Ms, s.P999Ms,
			s.ServiceP99Ms, s.LateStarts, s.Dropped, s.ErrorRatio*100, spreadOf(s.MasterCPU).columns(), res)
	}
	w.Flush()
}

// capacityResultOf is the report section: the curve sorted by rate (the
// order run is in capacity.json).
func capacityResultOf(sr *SearchResult[capacityStep], co CapacityOptions) *reports.CapacityResult {
	cr := &reports.CapacityResult{TargetP99Ms: float64(co.SloP99.Microseconds()) / 1000, MaxRateOpsPerS: sr.Held,
		LowestBrokeOpsPerS: sr.Broke, Confirmations: sr.Confirmations, ConfirmationsHeld: sr.ConfirmationsHeld}
	for _, ss := range sr.Steps {
		s := ss.Step
		cr.Steps = append(cr.Steps, reports.CapacityStep{RateOpsPerS: s.Rate, ThroughputOpsPerS: s.ThroughputOpsPerS,
			DurationS: co.StepDuration.Seconds(), Ops: s.ops, Errors: s.errors, Dropped: s.Dropped,
			LatencyMs: s.latency, Passed: s.Held, Phase: string(ss.Phase)})
	}
	sort.SliceStable(cr.Steps, func(i, j int) bool { return cr.Steps[i].RateOpsPerS < cr.Steps[j].RateOpsPerS })
	return cr
}

func capacityStepOf(rate float64, oc *Result, dir string, co CapacityOptions) capacityStep {
	rep := oc.Report
	s := capacityStep{Rate: rate, ThroughputOpsPerS: rep.ThroughputOpsPerS, P50Ms: rep.LatencyMs.P50, P99Ms: rep.LatencyMs.P99,
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
