package cmdline

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
	"seckill-harness/scenarios"
	"seckill-harness/sut/pipeline"
)

// Run are run's flags: the ad-hoc load, the cluster, the system under
// test, where the run writes, the results history and the split load.
// RunFlags registers them; Execute runs what they say.
type Run struct {
	cluster  lifecycle.ClusterSpec
	cfg      runner.Config
	sale     Sale   // --users (into cfg.Users), --stock, --buckets
	mode     string // --mode, into cfg.Mode
	shape    string // --shape, into cfg.Shape.Kind
	luaDir   string
	adapter  string // --adapter
	strict   bool   // --strict-preflight
	service  ServiceFlags
	scenario string
	faults   []string
	sets     []string
	path     string

	report runReportFlags   // --out, --history, --progress, --metrics-addr
	pipe   runPipelineFlags // --pipeline, --pg, --pg-keep, --drain
	split  runSplitFlags    // --generator, --activity, --activity-wait

	// Summary collects the runs' summaries with --json (AddRunJSON); nil without it.
	Summary *Summary
	results Results // --results-history, --results-db, --baseline

	wait         Wait
	localSoldOut time.Duration // --local-soldout TTL
	child        ServiceChild
}

// runReportFlags are where a run writes and what it shows as it goes.
type runReportFlags struct {
	out      string // --out
	history  string // --history
	progress string // --progress
	metrics  string // --metrics-addr
}

// runPipelineFlags are the pipeline beside the load and its order store.
type runPipelineFlags struct {
	on    bool          // --pipeline
	pg    string        // --pg
	keep  bool          // --pg-keep
	drain time.Duration // --drain
}

// runSplitFlags are a load split over several harness processes.
type runSplitFlags struct {
	generator string        // --generator I/N
	activity  string        // --activity
	wait      time.Duration // --activity-wait
}

// RunFlags registers run's flags on f, in the order --help has always
// listed them, and returns where they are read into.
func RunFlags(f *pflag.FlagSet) *Run {
	o := &Run{cfg: runner.DefaultConfig(), sale: Sale{Users: 20000, Stock: 1000, Buckets: 2}}
	c := &o.cfg
	SaleFlags(f, &o.sale, "distinct users", "stock buckets (the stock is split over them)")
	f.Float64Var(&c.Shape.Rate, "rate", 2000, "ops/s: constant rate, linear start, sine mean, spike base")
	f.DurationVar(&c.Duration, "duration", 10*time.Second, "length of the load")
	f.StringVar(&o.mode, "mode", "open", "open (paced, coordinated-omission free) or closed (workers as fast as they can)")
	f.IntVar(&c.Concurrency, "concurrency", 64, "workers: requests on the wire at once")
	f.StringVar(&o.shape, "shape", "constant", "arrival curve: constant, linear, sine, spike")
	f.Int64Var(&c.Seed, "seed", 42, "seed of the workload (users, requests, mix)")
	f.StringVar(&o.report.out, "out", "out", "directory for report.json, report.html, summary.md, junit.xml, latency.hgrm, latency.hlog and the history")
	f.StringVar(&o.report.history, "history", "", "write the operation history as JSONL to this file (relative to --out unless absolute)")
	f.StringVar(&o.luaDir, "lua-dir", "", "directory with reserve.lua, transition.lua, compensate.lua (default: the embedded scripts)")
	f.IntVar(&c.MaxInFlight, "max-in-flight", c.MaxInFlight, "open loop: operations scheduled but not finished; over it an operation is dropped (and counted)")
	f.IntVar(&c.MaxOps, "max-ops", 0, "stop after this many operations (0: no cap)")
	f.DurationVar(&c.CallTimeout, "timeout", c.CallTimeout, "per-send timeout; a timed-out send is UNKNOWN")
	f.IntVar(&c.RetrySends, "retries", c.RetrySends, "re-sends with the same ids after UNKNOWN/TRYAGAIN/CLUSTERDOWN")
	f.DurationVar(&c.TTL, "reservation-ttl", c.TTL, "reservation TTL passed to reserve.lua")
	for _, sh := range c.Mix.Shares() {
		f.Float64Var(sh.Share, sh.FlagName(), *sh.Share, sh.Help)
	}
	f.Float64Var(&c.Shape.Slope, "slope", 0, "linear: ops/s added every second")
	f.Float64Var(&c.Shape.Amplitude, "amplitude", 0, "sine: amplitude in ops/s")
	f.DurationVar(&c.Shape.Period, "period", 0, "sine: period")
	f.Float64Var(&c.Shape.Peak, "peak", 0, "spike: peak ops/s")
	f.DurationVar(&c.Shape.SpikeAt, "spike-at", 0, "spike: when the ramp starts")
	f.DurationVar(&c.Shape.RampUp, "ramp-up", 0, "spike: ramp to the peak")
	f.DurationVar(&c.Shape.Hold, "hold", 0, "spike: time at the peak")
	f.DurationVar(&c.Shape.RampDown, "ramp-down", 0, "spike: fall back to the base rate")
	ClusterFlags(f, &o.cluster)
	WaitFlags(f, &o.wait)
	f.StringVar(&o.scenario, "name", "adhoc", "name of the run in the report")
	f.StringArrayVar(&o.sets, "set", nil, "with a scenario: override a field, key=value (repeatable), e.g. activity.stock=5000, phases.0.rate=800, seed=7")
	f.BoolVar(&o.pipe.on, "pipeline", false, "run the rest of the reserve path beside the load: send_pending dispatcher, simulated MQ, orders, releases, expiry (default settings; scenarios set them in pipeline:)")
	f.StringVar(&o.pipe.pg, "pg", "", "PostgreSQL for the pipeline's orders: postgres://user@host:port/db (password from PGPASSWORD or ~/.pgpass, never printed); the run creates its own schema and drops it. Default: a throwaway local PostgreSQL the run starts and removes")
	f.BoolVar(&o.pipe.keep, "pg-keep", false, "with --pg: leave the run's schema (orders, inbox, ledger, stock) in the database for a look with psql; the log names it")
	f.DurationVar(&o.pipe.drain, "drain", 10*time.Second, "with --pipeline: how long the stages may go, after the load, without bringing one more reservation to ORDER_CREATED or RELEASED (the drain ends then, or at 30x this in all)")
	f.DurationVar(&o.localSoldOut, "local-soldout", 0, "TTL of a local sold-out flag in front of the path: SOLD_OUT sets it per bucket, Redis Pub/Sub tells the other service instances, requests are answered LOCAL_SOLD_OUT until it expires (0: none; overrides a scenario's local_soldout)")
	AdapterFlag(f, &o.adapter)
	StrictPreflightFlag(f, &o.strict)
	ResultsFlags(f, &o.results, ResultsBaseline)
	ServiceChildFlags(f, &o.child)
	ServiceFlag(f, &o.service)
	f.StringVar(&o.path, "path", "", "reserve path to drive: reference (default) or a known-bad variant (negative control; see 'seckill-harness selftest')")
	f.StringVar(&o.report.metrics, "metrics-addr", "", "serve live Prometheus metrics on http://127.0.0.1:PORT/metrics while the run goes on (loopback only; e.g. 127.0.0.1:9464)")
	f.StringVar(&o.report.progress, "progress", "auto", "live progress on stderr: auto (a rewritten line on a terminal, a plain line every 5 s otherwise), tty, plain, off")
	f.StringArrayVar(&o.faults, "fault", nil, "inject a fault: KIND:key=value,... with at= (offset) and for= (duration); repeatable; see 'seckill-harness faults'")
	f.StringVar(&o.split.generator, "generator", "", "I/N: be load generator I of N harness processes against one --cluster redis://… and one --activity; generator I uses the users and request ids ≡ I mod N (--users is the total; --rate, --concurrency, --max-ops are this generator's). Writes --history (default history.jsonl) and generator.json for 'seckill-harness verify'")
	f.StringVar(&o.split.activity, "activity", "", "activity id to run on (required with --generator I/N, N > 1; the same on every generator): generator 0 sets it up, the others join it; nobody tears it down (see 'seckill-harness verify')")
	f.DurationVar(&o.split.wait, "activity-wait", 2*time.Minute, "generators 1..N-1: how long to wait for generator 0 to set the --activity up")
	return o
}

// Execute runs what the flags and args say (the scenario args[0], or the
// ad-hoc load of the flags): it checks the flags, builds the suite
// (planner.BuildSuite), opens the results history and runs it. Its error
// follows the exit contract (internal/exitcode).
func (o *Run) Execute(cmd *cobra.Command, args []string) error {
	s, err := o.Scenario(cmd, args)
	if err != nil {
		return err
	}
	su, err := planner.BuildSuite(s, o.inputs(cmd))
	if err != nil {
		return err
	}
	out := o.output(cmd)
	done, err := o.results.Open(cmd.Context(), &out, cmd.ErrOrStderr())
	defer done()
	if err != nil {
		return err
	}
	return su.Run(cmd.Context(), out, nil)
}

// Scenario is what run runs, as Execute builds it: the flags' load read
// into the load config, --generator and --progress checked, then the
// scenario (scenarioOf).
func (o *Run) Scenario(cmd *cobra.Command, args []string) (*scenarios.Scenario, error) {
	o.cfg.Users, o.cfg.Mode, o.cfg.Shape.Kind = o.sale.Users, runner.Mode(o.mode), o.shape
	if err := o.parseGenerator(); err != nil {
		return nil, err
	}
	if err := lifecycle.CheckProgressMode(o.report.progress); err != nil {
		return nil, err
	}
	return o.scenarioOf(cmd, args)
}

// parseGenerator reads --generator into the load config and checks the
// flags that go with it.
func (o *Run) parseGenerator() error {
	if o.split.generator != "" {
		g, err := history.ParseGenerator(o.split.generator)
		if err != nil {
			return fmt.Errorf("--generator: %w", err)
		}
		o.cfg.Generator = g
	}
	if o.cfg.Generator.Split() && o.split.activity == "" {
		return fmt.Errorf("--generator %s needs --activity NAME: every generator must drive the same activity (pick a new name per split load)", o.cfg.Generator)
	}
	if o.split.activity != "" {
		if err := lua.ValidateID("activity_id", o.split.activity); err != nil {
			return fmt.Errorf("--activity: %w", err)
		}
	}
	return nil
}

// scenarioOf is what run runs (planner.ForRun): the named scenario with
// --seed and --set, or (no argument) the ad-hoc load of the flags as a
// scenario of its own, so it is validated as the same load written in a
// file would be.
func (o *Run) scenarioOf(cmd *cobra.Command, args []string) (*scenarios.Scenario, error) {
	f := o.sale.Flags(cmd, o.cluster)
	f.Name, f.Load = o.scenario, o.cfg
	if o.pipe.on {
		cfg := pipeline.DefaultConfig()
		cfg.Seed = o.cfg.Seed
		f.Pipeline, f.Drain = &cfg, o.pipe.drain
	}
	var seed *int64
	if cmd.Flags().Changed("seed") {
		seed = &o.cfg.Seed
	}
	s, err := planner.ForRun(cmd.Context(), args, f, o.sets, seed)
	if err == nil && s.IsSuite() && o.split.activity != "" {
		err = fmt.Errorf("%s is a suite: --activity and --generator take one scenario (a member), not a suite", s.Name)
	}
	return s, err
}

// inputs is what the run flags add to every plan (a suite's members included).
func (o *Run) inputs(cmd *cobra.Command) planner.Inputs {
	return planner.Inputs{Cluster: o.cluster, Given: cmd.Flags().Changed, LuaDir: o.luaDir,
		Overrides: o.wait.Over(planner.Overrides{Faults: o.faults, Path: o.path, Adapter: o.adapter, StrictPreflight: o.strict, LocalSoldOut: o.localSoldOut,
			Service: o.service.URL, ServiceMapping: o.service.Mapping, ServiceCmd: o.child.Cmd, ServiceReady: o.child.Ready}),
		Generator: o.cfg.Generator, ActivityID: o.split.activity, ActivityWait: o.split.wait, PostgresURL: o.pipe.pg, PostgresKeep: o.pipe.keep}
}

// output is where a run writes, from the run flags.
func (o *Run) output(cmd *cobra.Command) lifecycle.Output {
	out := lifecycle.Output{Dir: o.report.out, History: o.report.history, Progress: o.report.progress, ErrOut: cmd.ErrOrStderr(), Log: cmd.OutOrStdout(), Logger: Logger(cmd), MetricsAddr: o.report.metrics}
	if o.Summary != nil {
		out.Log, out.OnOutcome = cmd.ErrOrStderr(), o.Summary.OnOutcome
	}
	return out
}
