package compare

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
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

// Step is one rate a capacity search tried.
type Step struct {
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
	// HotMasterCores is the busiest master's CPU in cores (the system's
	// side, with ServiceP99Ms); Generator the generator's side.
	HotMasterCores float64        `json:"hot_master_cores"`
	Generator      *GeneratorSide `json:"generator,omitempty"`
	// StandBound: the step did not hold and the generator, not the
	// system, is why (see judgeBound); BoundBy names what bound a step
	// that did not hold ("system: hot master at 0.97 cores", "stand:
	// generator late 40%").
	StandBound bool   `json:"stand_bound"`
	BoundBy    string `json:"bound_by,omitempty"`

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

// searcher runs the steps of one capacity search of plan on stand: every
// step is a fresh activity with the same id, so the buckets sit on the
// same slots at every rate.
type searcher struct {
	log   io.Writer
	plan  *lifecycle.Plan
	co    CapacityOptions
	path  string
	stand *lifecycle.Stand
	id    string
	out   lifecycle.Output
	n     int
	// placement is the buckets' placement, read after the first step.
	placement *Placement
}

// searchCapacity runs the capacity search of p (its first phase,
// open-loop, at constant rates, loading path) on one stand it opens
// (unless p.Stand is set). Step reports go to <out.Dir>/step-NN-RATE/.
func searchCapacity(ctx context.Context, log io.Writer, p *lifecycle.Plan, co CapacityOptions, path string, out lifecycle.Output) (*SearchResult[Step], *Placement, error) {
	if err := co.Validate(); err != nil {
		return nil, nil, err
	}
	s := &searcher{log: log, plan: p, co: co, path: path, stand: p.Stand, out: out}
	if s.stand == nil {
		st, err := lifecycle.OpenStand(ctx, out.Logger, p.Cluster, p.MaxConcurrency(), false)
		if err != nil {
			return nil, nil, err
		}
		defer st.Close()
		s.stand = st
	}
	s.id = p.Activity.ID
	if s.id == "" {
		s.id = "capacity"
		if !s.stand.Cluster.Owned() {
			s.id = fmt.Sprintf("capacity%d", time.Now().UnixMilli())
		}
	}
	sr, err := SearchCapacity(co.search(), func(rate float64, ph SearchPhase) (bool, Step, error) { return s.probe(ctx, rate, ph) })
	return sr, s.placement, err
}

// step runs one rate of the search and judges it against the SLO.
func (s *searcher) probe(ctx context.Context, rate float64, ph SearchPhase) (bool, Step, error) {
	s.n++
	p, co := s.plan, s.co
	q := *p
	cfg := p.Phases[0].Config
	cfg.Mode, cfg.Shape, cfg.Duration, cfg.MaxOps = runner.ModeOpen, runner.Shape{Kind: "constant", Rate: rate}, co.StepDuration, 0
	q.Stock, cfg.Users = pathSizing(s.path, p.Stock, p.Buckets, cfg.Users, scenarioDemand(p), rate*co.StepDuration.Seconds())
	q.Phases = []runner.Phase{{Name: fmt.Sprintf("%.0f ops/s", rate), Config: cfg}}
	q.Faults, q.FaultNames, q.Judging.Evaluate, q.Stand, q.Activity.ID = nil, nil, nil, s.stand, s.id
	q.Name = fmt.Sprintf("%s capacity step %d (%s, %.0f ops/s)", p.Name, s.n, ph, rate)
	cpu := &loadCPU{}
	q.OnLoad = cpu.onLoad
	sub := s.out
	sub.Dir = subDir(s.out.Dir, fmt.Sprintf("step-%02d-%.0f", s.n, rate))
	res, err := lifecycle.Execute(ctx, &q, sub)
	if err != nil {
		return false, Step{}, err
	}
	if res.RunErr != nil {
		return false, Step{}, res.Interrupted()
	}
	if s.placement == nil {
		if s.placement, err = PlacementOf(ctx, s.stand.Cluster, res.Activity); err != nil {
			return false, Step{}, err
		}
	}
	if err := clearActivity(ctx, s.stand); err != nil {
		return false, Step{}, err
	}
	st := stepOf(rate, res, sub.Dir, co)
	st.Phase, st.Stock, st.Users, st.ClientCPUSecs = ph, q.Stock, cfg.Users, cpu.clientSecs()
	if m, err := cpu.masters(); err != nil {
		st.MasterCPUErr = err.Error()
	} else {
		st.MasterCPU = m
	}
	judgeBound(&st, res.Report, co)
	verdict := "held"
	switch {
	case st.StandBound:
		verdict = "STAND-BOUND (" + st.BoundBy + "): " + st.Why
	case !st.Held:
		verdict = "broke (" + st.BoundBy + "): " + st.Why
	}
	fmt.Fprintf(s.log, "step %d (%s): %.0f ops/s -> %.0f ops/s, p99 %.2f ms, %s\n", s.n, ph, rate, st.ThroughputOpsPerS, st.P99Ms, verdict)
	if st.StandBound {
		return false, st, ErrStandBound
	}
	return st.Held, st, nil
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
func scenarioDemand(p *lifecycle.Plan) float64 {
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
func clearActivity(ctx context.Context, st *lifecycle.Stand) error {
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
