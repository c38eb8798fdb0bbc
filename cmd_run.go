package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/runner/pipeline"
)

type runOptions struct {
	cluster  clusterFlags
	cfg      runner.Config
	stock    int64
	buckets  uint32
	out      string
	history  string
	luaDir   string
	scenario string
	faults   []string
	progress string
	errOut   io.Writer
	sets     []string
	path     string
	pipeline bool
	drain    time.Duration

	generator    string // --generator I/N
	activity     string
	activityWait time.Duration
}

func newRunCmd() *cobra.Command {
	o := runOptions{cfg: runner.DefaultConfig()}
	var mode, shape string
	cmd := &cobra.Command{
		Use:   "run [scenario|file.yaml]",
		Short: "Run a scenario (built-in name or YAML file) or an ad-hoc load from flags; check I1–I9; write the reports",
		Long: `run starts a local Redis Cluster (removed at the end), sets up one activity,
drives the reserve path open-loop (paced, latency from the intended send time)
or closed-loop, injects the scenario's faults, reads the state back from Redis,
checks invariants I1–I9 and the scenario's assertions, and writes report.json,
report.html, summary.md, junit.xml, latency.hgrm, latency.hlog and (with --history)
the operation history to --out.

With a scenario (see 'seckill-harness list'), change it with --set key=value;
the load flags (--rate, --users, …) are for ad-hoc runs without one. A suite
(nightly) runs each member in turn into <out>/<member>/.

Exit codes: 0 every check passed, 1 a check or assertion failed, 2 harness or usage error.`,
		Example: `  seckill-harness run                     # ad hoc: 20,000 users, stock 1,000, 2,000 req/s for 10 s
  seckill-harness run smoke
  seckill-harness run failover-kill --set faults.0.at=3s --out out/kill
  seckill-harness run nightly-ci --out out/nightly
  seckill-harness run my-scenario.yaml --seed 7
  seckill-harness run --rate 5000 --duration 30s --stock 10000 --buckets 4
  seckill-harness run --duration 15s --fault failover:mode=kill,at=4s,for=6s
  seckill-harness run --fault disconnect-before-reply:toxic=reset_peer,at=3s,for=2s --fault latency:latency=20,at=7s,for=2s`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.cfg.Mode = runner.Mode(mode)
			o.cfg.Shape.Kind = shape
			o.errOut = cmd.ErrOrStderr()
			if err := o.parseGenerator(); err != nil {
				return err
			}
			if len(args) == 0 {
				if len(o.sets) > 0 {
					return fmt.Errorf("--set changes a scenario: name one (seckill-harness run NAME --set …), or use the load flags")
				}
				return runRun(cmd.Context(), cmd.OutOrStdout(), o)
			}
			var given []string
			for _, f := range loadFlags {
				if cmd.Flags().Changed(f) {
					given = append(given, "--"+f)
				}
			}
			if len(given) > 0 {
				return fmt.Errorf("%s describe an ad-hoc load and cannot be combined with scenario %q: use --set (e.g. --set phases.0.rate=500, --set activity.stock=100)", strings.Join(given, ", "), args[0])
			}
			var seed *int64
			if cmd.Flags().Changed("seed") {
				seed = &o.cfg.Seed
			}
			if err := checkProgressMode(o.progress); err != nil {
				return err
			}
			s, err := resolveScenario(args[0], o.sets, seed)
			if err != nil {
				return err
			}
			if len(s.Suite) > 0 && o.activity != "" {
				return fmt.Errorf("%s is a suite: --activity and --generator take one scenario (a member), not a suite", s.Name)
			}
			return runScenario(cmd.Context(), cmd.OutOrStdout(), s, o.cluster, cmd.Flags().Changed, o.exec(), o.faults, o.path)
		},
	}
	f := cmd.Flags()
	c := &o.cfg
	f.IntVar(&c.Users, "users", 20000, "distinct users")
	f.Int64Var(&o.stock, "stock", 1000, "total stock")
	f.Uint32Var(&o.buckets, "buckets", 2, "stock buckets (the stock is split over them)")
	f.Float64Var(&c.Shape.Rate, "rate", 2000, "ops/s: constant rate, linear start, sine mean, spike base")
	f.DurationVar(&c.Duration, "duration", 10*time.Second, "length of the load")
	f.StringVar(&mode, "mode", "open", "open (paced, coordinated-omission free) or closed (workers as fast as they can)")
	f.IntVar(&c.Concurrency, "concurrency", 64, "workers: requests on the wire at once")
	f.StringVar(&shape, "shape", "constant", "arrival curve: constant, linear, sine, spike")
	f.Int64Var(&c.Seed, "seed", 42, "seed of the workload (users, requests, mix)")
	f.StringVar(&o.out, "out", "out", "directory for report.json, report.html, summary.md, junit.xml, latency.hgrm, latency.hlog and the history")
	f.StringVar(&o.history, "history", "", "write the operation history as JSONL to this file (relative to --out unless absolute)")
	f.StringVar(&o.luaDir, "lua-dir", "", "directory with reserve.lua, transition.lua, compensate.lua (default: the embedded scripts)")
	f.IntVar(&c.MaxInFlight, "max-in-flight", c.MaxInFlight, "open loop: operations scheduled but not finished; over it an operation is dropped (and counted)")
	f.IntVar(&c.MaxOps, "max-ops", 0, "stop after this many operations (0: no cap)")
	f.DurationVar(&c.CallTimeout, "timeout", c.CallTimeout, "per-send timeout; a timed-out send is UNKNOWN")
	f.IntVar(&c.RetrySends, "retries", c.RetrySends, "re-sends with the same ids after UNKNOWN/TRYAGAIN/CLUSTERDOWN")
	f.DurationVar(&c.TTL, "reservation-ttl", c.TTL, "reservation TTL passed to reserve.lua")
	f.Float64Var(&c.Mix.Replay, "mix-replay", c.Mix.Replay, "share of replays of an earlier request (same ids)")
	f.Float64Var(&c.Mix.SameUser, "mix-same-user", c.Mix.SameUser, "share of earlier users sending a new request_id")
	f.Float64Var(&c.Mix.ForeignRequest, "mix-foreign-request", c.Mix.ForeignRequest, "share of request_ids reused by another user")
	f.Float64Var(&c.Mix.Release, "mix-release", c.Mix.Release, "share of releases (fence + compensate) of an earlier reservation")
	f.Float64Var(&c.Shape.Slope, "slope", 0, "linear: ops/s added every second")
	f.Float64Var(&c.Shape.Amplitude, "amplitude", 0, "sine: amplitude in ops/s")
	f.DurationVar(&c.Shape.Period, "period", 0, "sine: period")
	f.Float64Var(&c.Shape.Peak, "peak", 0, "spike: peak ops/s")
	f.DurationVar(&c.Shape.SpikeAt, "spike-at", 0, "spike: when the ramp starts")
	f.DurationVar(&c.Shape.RampUp, "ramp-up", 0, "spike: ramp to the peak")
	f.DurationVar(&c.Shape.Hold, "hold", 0, "spike: time at the peak")
	f.DurationVar(&c.Shape.RampDown, "ramp-down", 0, "spike: fall back to the base rate")
	addClusterFlags(f, &o.cluster)
	f.StringVar(&o.scenario, "name", "adhoc", "name of the run in the report")
	f.StringArrayVar(&o.sets, "set", nil, "with a scenario: override a field, key=value (repeatable), e.g. activity.stock=5000, phases.0.rate=800, seed=7")
	f.BoolVar(&o.pipeline, "pipeline", false, "run the rest of the reserve path beside the load: send_pending dispatcher, simulated MQ, orders, releases, expiry (default settings; scenarios set them in pipeline:)")
	f.DurationVar(&o.drain, "drain", 10*time.Second, "with --pipeline: how long the stages may take after the load to bring every reservation to ORDER_CREATED or RELEASED")
	f.StringVar(&o.path, "path", "", "reserve path to drive: reference (default) or a known-bad variant (negative control; see 'seckill-harness selftest')")
	f.StringVar(&o.progress, "progress", "auto", "live progress on stderr: auto (a rewritten line on a terminal, a plain line every 5 s otherwise), tty, plain, off")
	f.StringArrayVar(&o.faults, "fault", nil, "inject a fault: KIND:key=value,... with at= (offset) and for= (duration); repeatable; see 'seckill-harness faults'")
	f.StringVar(&o.generator, "generator", "", "I/N: be load generator I of N harness processes against one --cluster redis://… and one --activity; generator I uses the users and request ids ≡ I mod N (--users is the total; --rate, --concurrency, --max-ops are this generator's). Writes --history (default history.jsonl) and generator.json for 'seckill-harness verify'")
	f.StringVar(&o.activity, "activity", "", "activity id to run on (required with --generator I/N, N > 1; the same on every generator): generator 0 sets it up, the others join it; nobody tears it down (see 'seckill-harness verify')")
	f.DurationVar(&o.activityWait, "activity-wait", 2*time.Minute, "generators 1..N-1: how long to wait for generator 0 to set the --activity up")
	return cmd
}

// parseGenerator reads --generator into the load config and checks the
// flags that go with it.
func (o *runOptions) parseGenerator() error {
	if o.generator != "" {
		g, err := runner.ParseGenerator(o.generator)
		if err != nil {
			return fmt.Errorf("--generator: %w", err)
		}
		o.cfg.Generator = g
	}
	if o.cfg.Generator.Split() && o.activity == "" {
		return fmt.Errorf("--generator %s needs --activity NAME: every generator must drive the same activity (pick a new name per split load)", o.cfg.Generator)
	}
	if o.activity != "" {
		if err := lua.ValidateID("activity_id", o.activity); err != nil {
			return fmt.Errorf("--activity: %w", err)
		}
	}
	return nil
}

func runRun(ctx context.Context, out io.Writer, o runOptions) error {
	if err := o.cfg.Validate(); err != nil {
		return fmt.Errorf("invalid flags: %w", err)
	}
	planned, err := planFaults(o.faults, o.cfg.Duration)
	if err != nil {
		return err
	}
	p := &plan{name: o.scenario, cluster: o.cluster, stock: o.stock, buckets: o.buckets,
		phases: []runner.Phase{{Name: "load", Config: o.cfg}}, faults: planned}
	if err := setPath(p, o.path); err != nil {
		return err
	}
	if o.pipeline {
		cfg := pipeline.DefaultConfig()
		cfg.Seed = o.cfg.Seed
		p.pipeline, p.drain = &cfg, o.drain
	}
	oc, err := executePlan(ctx, out, p, o.exec())
	if err != nil {
		return err
	}
	return oc.exitErr()
}

func (o runOptions) exec() execOptions {
	return execOptions{out: o.out, history: o.history, luaDir: o.luaDir, progress: o.progress, errOut: o.errOut,
		gen: o.cfg.Generator, activity: o.activity, activityWait: o.activityWait}
}

// plan is one run, resolved from a scenario or from flags.
type plan struct {
	name       string
	cluster    clusterFlags
	stock      int64
	buckets    uint32
	window     time.Duration // how long the activity stays open; 0: the load plus an hour
	phases     []runner.Phase
	faults     []*faults.Planned
	faultNames []string                                  // report phase names per fault (default: its kind)
	pathName   string                                    // "" or "reference": the reference path
	path       func(*lua.Store) runner.Path              // nil: the reference path
	evaluate   func(*reports.Report) []reports.Assertion // the scenario's assertions; nil: none
	waived     func(id string) bool                      // invariants reported but not required
	resolved   map[string]any                            // the fully resolved scenario, for report.json
	pipeline   *pipeline.Config                          // the async stages after ACCEPTED; nil: none
	drain      time.Duration                             // with a pipeline: how long to let it finish after the load
}

func (p *plan) duration() time.Duration {
	var d time.Duration
	for _, ph := range p.phases {
		d += ph.Config.Duration
	}
	return d
}

func (p *plan) maxConcurrency() int {
	n := 1
	for _, ph := range p.phases {
		n = max(n, ph.Config.Concurrency)
	}
	return n
}

// execOptions say where and how a run writes.
type execOptions struct {
	out, history, luaDir, progress string
	errOut                         io.Writer
	// A named (shared) activity: set up or joined, never torn down; with a
	// split generator the run is one part of a load judged by 'verify'.
	gen          runner.Generator
	activity     string
	activityWait time.Duration
}

// outcome is a finished run: its report (also written to disk) and, when the
// load was interrupted, why.
type outcome struct {
	rep    *reports.Report
	res    *runner.Result
	chk    *runner.CheckReport
	act    *lua.Activity
	runErr error
}

// exitErr maps an outcome to the CLI's exit contract.
func (oc *outcome) exitErr() error {
	if oc.runErr != nil {
		return fmt.Errorf("run interrupted after %.1fs (partial report written): %w", oc.res.Elapsed.Seconds(), oc.runErr)
	}
	if !oc.rep.Passed {
		return errChecksFailed
	}
	return nil
}

// executePlan starts a local cluster, runs the plan's phases with its fault
// timeline, heals everything, checks I1–I9 and the plan's assertions, and
// writes the report files. A Go error is a harness error (exit 2); a failed
// check is in the outcome.
func executePlan(ctx context.Context, out io.Writer, p *plan, xo execOptions) (*outcome, error) {
	if err := checkProgressMode(xo.progress); err != nil {
		return nil, err
	}
	scripts, err := loadScripts(xo.luaDir)
	if err != nil {
		return nil, err
	}
	if xo.gen.Split() {
		switch {
		case xo.activity == "":
			return nil, fmt.Errorf("--generator %s needs --activity NAME", xo.gen)
		case !sharedCluster(p.cluster.spec):
			return nil, fmt.Errorf("--generator %s needs a cluster every generator reaches: --cluster redis://host:port[,host:port…] (a %s cluster would be this process's own)", xo.gen, p.cluster.spec)
		case p.pipeline != nil:
			return nil, fmt.Errorf("--generator %s: the pipeline (dispatcher, MQ, orders) cannot be split across generators yet: run it without --pipeline", xo.gen)
		}
	}
	for i := range p.phases {
		p.phases[i].Config.Generator = xo.gen
	}
	if xo.activity != "" && xo.history == "" {
		xo.history = "history.jsonl" // 'verify' reads it back
	}
	first := p.phases[0].Config
	if err := first.Validate(); err != nil {
		return nil, fmt.Errorf("invalid load: %w", err)
	}
	window := p.window
	if window <= 0 {
		window = p.duration() + time.Hour
	}
	actID := fmt.Sprintf("run%d", time.Now().UnixMilli())
	if xo.activity != "" {
		actID = xo.activity
	}
	act := lua.NewActivity(actID, "sku1", p.stock, p.buckets, window)
	if err := act.Validate(); err != nil {
		return nil, fmt.Errorf("invalid activity: %w", err)
	}
	if err := os.MkdirAll(xo.out, 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: %w", xo.out, err)
	}

	st, err := startStand(ctx, out, p.cluster, p.maxConcurrency(), len(p.faults) > 0)
	if err != nil {
		return nil, err
	}
	defer st.close()
	// A cluster the harness did not create gets no destructive fault unless
	// asked for, and no process-level fault at all: refused before any key is written.
	if err := faults.CheckAllowed(p.faults, st.cluster, p.cluster.allowDestructive); err != nil {
		return nil, err
	}
	var gi *genInfo
	if xo.activity != "" {
		if act, gi, err = joinActivity(ctx, out, st.rdb, act, xo, first); err != nil {
			return nil, err
		}
		if !st.cluster.Owned() {
			fmt.Fprintf(out, "activity %s is kept for 'seckill-harness verify' (which removes it with --teardown); its keys expire at %s anyway\n",
				act.ID, time.UnixMilli(act.RetentionUntilMs).UTC().Format(time.RFC3339))
		}
	} else if err := lua.Setup(ctx, st.rdb, act); err != nil {
		return nil, err
	}
	if !st.cluster.Owned() && xo.activity == "" {
		// Somebody else's cluster: remove exactly the keys this run created.
		defer func() {
			tctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			n, err := lua.Teardown(tctx, st.rdb, act)
			if err != nil {
				fmt.Fprintf(out, "teardown of activity %s: %v (its keys expire at %s anyway)\n", act.ID, err, time.UnixMilli(act.RetentionUntilMs).UTC().Format(time.RFC3339))
				return
			}
			fmt.Fprintf(out, "teardown: removed the %d keys of activity %s\n", n, act.ID)
		}()
	}
	store := lua.NewStore(st.rdb, scripts, []byte(fmt.Sprintf("seckill-harness-%d", first.Seed)))
	tgt := runner.Target{Store: store, Activity: act}
	if p.path != nil {
		tgt.Path = p.path(store)
	}
	for _, ph := range p.phases {
		fmt.Fprintf(out, "load %s: %s; stock %d over %d buckets\n", ph.Name, ph.Config, p.stock, p.buckets)
	}

	tl, err := newTimeline(ctx, out, st, act, p.faults)
	if err != nil {
		return nil, err
	}
	// The rest of the reserve path (dispatcher, MQ, orders, releases,
	// expiry) runs beside the load when the plan has one.
	var pl *pipeline.Pipeline
	if p.pipeline != nil {
		pl = pipeline.New(*p.pipeline, store, act)
		if err := pl.Start(ctx); err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		defer pl.Stop()
		tl.Env.Pipeline = pl
	}
	tctx, stopTimeline := context.WithCancel(ctx)
	defer stopTimeline()
	// Heal on every way out: normal end, error, Ctrl-C (the load's ctx is
	// cancelled; healing runs on a fresh one).
	healed := false
	heal := func() error {
		if healed {
			return nil
		}
		healed = true
		stopTimeline()
		hctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return tl.HealAll(hctx)
	}
	defer heal()

	runOpts := []runner.Option{runner.WithOnStart(func(began time.Time) { tl.Start(tctx, began) })}
	if pp := progressOption(xo.progress, xo.errOut, func() string { return strings.Join(tl.Active(), "+") }); pp != nil {
		runOpts = append(runOpts, pp)
	}
	res, runErr := runner.RunPhases(ctx, p.phases, tgt, runOpts...)
	if res == nil {
		return nil, runErr
	}
	healErr := heal()
	// The checks read Redis even after Ctrl-C: a partial run is still reported.
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	faulted := len(p.faults) > 0
	healthErr := settle(cctx, out, st, faulted)
	history := res.History
	var ev *runner.PipelineEvidence
	if pl != nil {
		if p.drain > 0 && ctx.Err() == nil {
			fmt.Fprintf(out, "pipeline: draining for up to %s\n", p.drain)
			// A drain that times out is a finding (P2 lists the stuck), not a harness error.
			if err := pl.Drain(ctx, p.drain); err != nil && !errors.Is(err, pipeline.ErrDrainTimeout) {
				fmt.Fprintf(out, "pipeline: drain: %v\n", err)
			}
		}
		pl.Stop()
		ev = pl.Evidence()
		history = runner.WithPipelineReleases(res.History, ev, res.Began)
	}
	chk, err := runner.Verify(cctx, tgt, runner.CheckInput{History: history, Samples: res.Samples, FaultsInjected: faulted, Generator: xo.gen})
	if err != nil {
		return nil, fmt.Errorf("reading the final state back: %w", err)
	}
	if ev != nil {
		pchecks, err := runner.VerifyPipeline(cctx, tgt, res.History, ev)
		if err != nil {
			return nil, fmt.Errorf("checking the pipeline: %w", err)
		}
		chk.Checks = append(chk.Checks, pchecks...)
	}
	meta := runner.ReportMeta{Scenario: p.name, Versions: versions(cctx, st.rdb, scripts), Topology: st.topology(cctx, p.cluster), HGRMFile: "latency.hgrm"}
	var faultPhases []reports.PhaseSpan
	meta.Faults, faultPhases = faultReports(p.faults, p.faultNames, res, chk, act)
	meta.Phases = append(loadPhaseSpans(res), faultPhases...)
	meta.Assertions = append(meta.Assertions, healthAssertions(healErr, healthErr, faulted)...)
	if xo.history != "" {
		meta.HistoryFile = xo.history
	}
	rep, rec := runner.BuildReport(res, chk, meta)
	rep.ResolvedScenario = p.resolved
	if ev != nil {
		rep.Pipeline = ev.Summary()
	}
	rep.Path = "reference"
	if p.pathName != "" {
		rep.Path = p.pathName
	}
	for i := range rep.Invariants {
		if p.waived != nil && p.waived(rep.Invariants[i].ID) {
			rep.Invariants[i].Waived = true
		}
	}
	if p.evaluate != nil {
		rep.Assertions = append(rep.Assertions, p.evaluate(rep)...)
	}
	rep.Passed = len(rep.FailedChecks()) == 0
	if err := writeOutputs(xo, rep, rec, res); err != nil {
		return nil, err
	}
	if gi != nil {
		gi.History, gi.Cluster = xo.history, st.cluster.Provider()
		if ext, ok := st.cluster.(*compose.ExternalCluster); ok {
			gi.Cluster = ext.Redacted()
		}
		if err := writeGenInfo(xo.out, gi); err != nil {
			return nil, err
		}
		// Done only once everything verify reads is on disk.
		if err := markDone(cctx, st.rdb, act, gi); err != nil {
			return nil, fmt.Errorf("activity %s: mark generator %s done: %w", act.ID, xo.gen, err)
		}
	}
	if err := reports.WriteText(out, rep); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "report: %s\n", filepath.Join(xo.out, "report.json"))
	if xo.gen.Split() {
		fmt.Fprintf(out, "generator %s of activity %s: I2 and I9 are judged on the merge: seckill-harness verify --cluster … --out DIR <every generator's --out>\n", xo.gen, act.ID)
	}
	return &outcome{rep: rep, res: res, chk: chk, act: act, runErr: runErr}, nil
}

// loadPhaseSpans names the load phases as report phases (only when there
// are several: one phase is the whole run).
func loadPhaseSpans(res *runner.Result) []reports.PhaseSpan {
	if len(res.Phases) < 2 {
		return nil
	}
	var out []reports.PhaseSpan
	for _, p := range res.Phases {
		out = append(out, reports.PhaseSpan{Name: p.Name, Start: p.Start, End: p.End})
	}
	return out
}

func writeOutputs(o execOptions, rep *reports.Report, rec *reports.Recorder, res *runner.Result) error {
	// report.json, latency.hgrm, latency.hlog, summary.md, report.html.
	if err := reports.WriteRunFiles(o.out, rep, rec); err != nil {
		return err
	}
	if err := reports.WriteJUnitFile(o.out, rep); err != nil {
		return err
	}
	if o.history != "" {
		path := o.history
		if !filepath.IsAbs(path) {
			path = filepath.Join(o.out, path)
		}
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--history: %w", err)
		}
		werr := res.History.WriteJSONL(f)
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("--history: %w", err)
		}
	}
	return nil
}
