package lifecycle

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/reports/results"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
)

// Plan is what one run does: where it stands, the activity, the load
// phases, the faults, the reserve path, the pipeline and the assertions.
// Commands build it from flags or a scenario.
type Plan struct {
	Name    string      // the run's name in the report
	Cluster ClusterSpec // what to start or reach (ignored when Stand is set)
	// Stand, when set, is a cluster the caller opened and keeps (selftest
	// runs many plans on one): Execute neither opens nor closes it.
	Stand *Stand

	Stock     int64
	Buckets   uint32
	Window    time.Duration // how long the activity stays open; 0: the load plus an hour
	Activity  ActivityPlan  // the activity's name, and whether generators share it
	Generator history.Generator
	// Secret keys the reservation ids; nil: "seckill-harness-<seed>".
	Secret []byte
	Lua    LuaPlan // the path's scripts and how long one may run

	Phases     []runner.Phase
	Faults     []*faults.Planned
	FaultNames []string                    // report phase name per fault ("" = its kind)
	PathName   string                      // "" or "reference": the reference path
	Path       func(*lua.Store) sut.System // nil: the reference path
	// SystemUnderTest is report.json's system_under_test when the caller
	// knows more of the system than its name (an adapter file and its
	// scripts); nil: the run states the reference's scripts or the path's name.
	SystemUnderTest *reports.SystemUnderTest
	// Wait, when enabled, makes the path send WAIT after each fresh
	// ACCEPTED on the connection that ran the script and record whether
	// the replicas confirmed it (runner.WaitingPath around Path).
	Wait     sut.WaitPolicy
	Pipeline *pipeline.Config // the async stages after ACCEPTED; nil: none
	// LocalSoldOut puts the local sold-out flag in front of the path
	// (sut.LocalSoldOut; Instances 0: sut.DefaultSoldOutInstances);
	// TTL 0: none.
	LocalSoldOut sut.LocalSoldOutConfig
	Postgres     PostgresPlan  // where the pipeline's orders are kept
	Service      ServicePlan   // the access service under test started as a child
	Drain        time.Duration // with a pipeline: how long it may finish after the load

	Judging  Judging        // how the run is judged beyond the invariants
	Resolved map[string]any // the fully resolved scenario, for report.json

	// OnLoad, when set, is called with the run's cluster just before the
	// load starts; the function it returns is called as soon as the load
	// ends, before the heal and the checks, so a caller measures the load
	// window alone (compare reads the masters' CPU with it).
	OnLoad func(ctx context.Context, cl compose.Cluster) (ended func())
}

// Duration is the length of the load (every phase).
func (p *Plan) Duration() time.Duration {
	var d time.Duration
	for _, ph := range p.Phases {
		d += ph.Config.Duration
	}
	return d
}

// MaxConcurrency is the most workers any phase runs.
func (p *Plan) MaxConcurrency() int {
	n := 1
	for _, ph := range p.Phases {
		n = max(n, ph.Config.Concurrency)
	}
	return n
}

// AddFaults parses --fault specs and adds them to the plan.
func (p *Plan) AddFaults(specs []string) error {
	if len(specs) == 0 {
		return nil
	}
	extra, err := ParseFaults(specs, p.Duration())
	if err != nil {
		return err
	}
	p.Faults = append(p.Faults, extra...)
	return nil
}

// Output says where and how a run writes.
type Output struct {
	// Dir receives the report artifacts; "": none are written (selftest).
	Dir string
	// History is the operation history file (relative to Dir unless
	// absolute); "": not written (a shared activity defaults to history.jsonl).
	History string
	// Progress is auto, tty, plain or off ("" = off), written to ErrOut.
	Progress string
	ErrOut   io.Writer
	// Log receives the text summary and the run's results (stdout in the
	// CLI); nil: discarded.
	Log io.Writer
	// Logger receives the run's log lines with levels: the cluster
	// started, reached and stopped, the load set up, faults injected and
	// healed, teardown, the pipeline's stages, warnings (a fault that did
	// not heal, a cluster not healthy after the load). nil: discarded.
	Logger *slog.Logger
	// OnServers, when set, receives every node's newest sample (address →
	// sample) and the load client's pool once per second while the load
	// runs (live metrics); it runs on the sampler's goroutine.
	OnServers func(nodes map[string]reports.NodeSample, pool *reports.PoolSecond)
	// MetricsAddr, when set (a loopback HOST:PORT), serves the run's live
	// Prometheus metrics on http://MetricsAddr/metrics while the load runs
	// (see package metrics for the names).
	MetricsAddr string
	// OnOutcome, when set, is called with Dir and the outcome once the
	// run's report is written (run --json collects the summaries here; a
	// suite calls it once per member).
	OnOutcome func(dir string, oc *Result)
	// Results, when set, is the results history: once the report is
	// written the run's record (results.FromReport) is appended to it; a
	// failed append is logged as an error and does not change the verdict.
	Results results.Store
	// Baseline, when set, is the results history the run is judged
	// against (run --baseline): report.json's baseline and one assertion
	// per judged figure (results.Judge with the plan's Regressions).
	Baseline results.Store
	// Suite names the suite a member runs in (set by Suite.Run; it goes
	// into the member's history record).
	Suite string
	// OnMetrics, when set, is called with the metrics server's address
	// once it listens (tests asking for port 0 learn the real one).
	OnMetrics func(addr string)
}

// logger is the run's structured log (never nil).
func (o Output) logger() *slog.Logger {
	if o.Logger == nil {
		return discardLogger
	}
	return o.Logger
}

// discardLogger drops every record (an Output without a Logger).
var discardLogger = slog.New(slog.DiscardHandler)

func (o Output) log() io.Writer {
	if o.Log == nil {
		return io.Discard
	}
	return o.Log
}

// Result is the result of one run (not history.Outcome, one operation's
// outcome): its report (also written to disk) and, when
// the load was interrupted, why.
type Result struct {
	Report   *reports.Report
	Result   *runner.Result
	Checks   *checks.CheckReport
	Activity *lua.Activity
	// RunErr is why the load stopped early (Ctrl-C, a deadline); nil when it ran out.
	RunErr error
	// HealErr and HealthErr: a fault that did not heal, a cluster not healthy after the load.
	HealErr, HealthErr error
	// NotInjected lists the planned faults that never took effect (with why).
	NotInjected []string
	// Pipeline is the async stages' evidence, when the plan ran them.
	Pipeline *pipeline.Evidence

	recorder *reports.Recorder
}

// Inconclusive reports a run whose only shortfall is inconclusive
// assertions: nothing failed, the load ran to its end, and either the
// stand could not sustain the plan where an SLO failed or a fault missed
// the system under test (the CLI's exit 3). InconclusiveChecks names
// them; a starved SLO's Inconclusive holds the rule and the evidence, a
// missed fault's detail names the miss.
func (oc *Result) Inconclusive() bool {
	return oc != nil && oc.Report != nil && oc.RunErr == nil && oc.Report.IsInconclusive()
}

// InconclusiveChecks lists the names of the inconclusive assertions (nil: none).
func (oc *Result) InconclusiveChecks() []string {
	if oc == nil || oc.Report == nil {
		return nil
	}
	return oc.Report.InconclusiveChecks()
}

// Interrupted wraps RunErr for the CLI (nil when the load ran to its end).
func (oc *Result) Interrupted() error {
	if oc.RunErr == nil {
		return nil
	}
	return fmt.Errorf("run interrupted after %.1fs (partial report written): %w", oc.Result.Elapsed.Seconds(), oc.RunErr)
}

// systemUnderTest is report.json's system_under_test of p: the plan's own
// (an adapter's), else the reference with the scripts it ran, else the
// known-bad path by name.
func systemUnderTest(p *Plan, scripts *lua.Scripts) *reports.SystemUnderTest {
	if p.SystemUnderTest != nil {
		return p.SystemUnderTest
	}
	if p.PathName != "" && p.PathName != "reference" {
		return &reports.SystemUnderTest{Name: p.PathName, Kind: "path"}
	}
	s := &reports.SystemUnderTest{Name: "reference", Kind: "reference"}
	if scripts != nil {
		for _, sc := range []*lua.Script{scripts.Reserve, scripts.Transition, scripts.Compensate} {
			role := strings.TrimSuffix(sc.Name, ".lua")
			s.Scripts = append(s.Scripts, reports.SUTScript{Role: role, Path: scripts.Origin + "/" + sc.Name, SHA1: sc.SHA1})
		}
	}
	return s
}

// LeaveShareOut sends each phase's share of kind as fresh reserves, for a
// system that has no such operation (why), and says so in sys's notes
// (report.json's system_under_test).
func LeaveShareOut(p *Plan, sys *reports.SystemUnderTest, kind history.Kind, why string) {
	for i := range p.Phases {
		for _, sh := range p.Phases[i].Config.Mix.Shares() {
			if v := *sh.Share; sh.Kind == kind && v > 0 {
				*sh.Share = 0
				sys.Notes = append(sys.Notes, fmt.Sprintf("phase %s: %s, so its %s share (%g) was sent as fresh reserves", p.Phases[i].Name, why, sh.Name, v))
			}
		}
	}
}
