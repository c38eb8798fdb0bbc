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

	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner"
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
}

func newRunCmd() *cobra.Command {
	o := runOptions{cfg: runner.DefaultConfig()}
	var mode, shape string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a flash-sale load against a local Redis Cluster, check invariants I1–I9, write a report",
		Long: `run starts a local Redis Cluster (removed at the end), sets up one activity,
drives the reserve path open-loop (paced, latency from the intended send time)
or closed-loop, reads the state back from Redis, checks invariants I1–I9 and
writes report.json, latency.hgrm and (with --history) the operation history.

Exit codes: 0 every check passed, 1 a check failed, 2 harness or usage error.`,
		Example: `  seckill-harness run
  seckill-harness run --rate 5000 --duration 30s --stock 10000 --buckets 4 --out out/
  seckill-harness run --mode closed --concurrency 32 --duration 10s
  seckill-harness run --shape spike --rate 500 --peak 5000 --spike-at 2s --ramp-up 1s --hold 3s --ramp-down 1s
  seckill-harness run --duration 15s --fault failover:mode=kill,at=4s,for=6s
  seckill-harness run --fault disconnect-before-reply:toxic=reset_peer,at=3s,for=2s --fault latency:latency=20,at=7s,for=2s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cfg.Mode = runner.Mode(mode)
			o.cfg.Shape.Kind = shape
			o.errOut = cmd.ErrOrStderr()
			return runRun(cmd.Context(), cmd.OutOrStdout(), o)
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
	f.StringVar(&o.out, "out", "out", "directory for report.json, latency.hgrm and the history")
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
	f.StringVar(&o.progress, "progress", "auto", "live progress on stderr: auto (a rewritten line on a terminal, a plain line every 5 s otherwise), tty, plain, off")
	f.StringArrayVar(&o.faults, "fault", nil, "inject a fault: KIND:key=value,... with at= (offset) and for= (duration); repeatable; see 'seckill-harness faults'")
	return cmd
}

func runRun(ctx context.Context, out io.Writer, o runOptions) error {
	if err := o.cfg.Validate(); err != nil {
		return fmt.Errorf("invalid flags: %w", err)
	}
	if err := checkProgressMode(o.progress); err != nil {
		return err
	}
	scripts, err := loadScripts(o.luaDir)
	if err != nil {
		return err
	}
	act := lua.NewActivity(fmt.Sprintf("run%d", time.Now().UnixMilli()), "sku1", o.stock, o.buckets,
		o.cfg.Duration+time.Hour)
	if err := act.Validate(); err != nil {
		return fmt.Errorf("invalid flags: %w", err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", o.out, err)
	}

	planned, err := planFaults(o.faults, o.cfg.Duration)
	if err != nil {
		return err
	}

	st, err := startStand(ctx, out, o.cluster, o.cfg.Concurrency, len(planned) > 0)
	if err != nil {
		return err
	}
	defer st.close()
	if err := lua.Setup(ctx, st.rdb, act); err != nil {
		return err
	}
	store := lua.NewStore(st.rdb, scripts, []byte(fmt.Sprintf("seckill-harness-%d", o.cfg.Seed)))
	tgt := runner.Target{Store: store, Activity: act}
	fmt.Fprintf(out, "load: %s; stock %d over %d buckets\n", o.cfg, o.stock, o.buckets)

	tl, err := newTimeline(ctx, out, st, act, planned)
	if err != nil {
		return err
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
	if pp := progressOption(o.progress, o.errOut, func() string { return strings.Join(tl.Active(), "+") }); pp != nil {
		runOpts = append(runOpts, pp)
	}
	res, runErr := runner.Run(ctx, o.cfg, tgt, runOpts...)
	if res == nil {
		return runErr
	}
	healErr := heal()
	// The checks read Redis even after Ctrl-C: a partial run is still reported.
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	healthErr := settle(cctx, out, st, len(planned) > 0)
	chk, err := runner.Verify(cctx, tgt, runner.CheckInput{History: res.History, Samples: res.Samples, FaultsInjected: len(planned) > 0})
	if err != nil {
		return fmt.Errorf("reading the final state back: %w", err)
	}
	meta := runner.ReportMeta{Scenario: o.scenario, Versions: versions(cctx, st.rdb, scripts), Topology: st.topology(o.cluster), HGRMFile: "latency.hgrm"}
	meta.Faults, meta.Phases = faultReports(planned, res, chk, act)
	meta.Assertions = append(meta.Assertions, healthAssertions(healErr, healthErr, len(planned) > 0)...)
	if o.history != "" {
		meta.HistoryFile = o.history
	}
	rep, rec := runner.BuildReport(res, chk, meta)
	if err := writeOutputs(o, rep, rec, res); err != nil {
		return err
	}
	if err := reports.WriteText(out, rep); err != nil {
		return err
	}
	fmt.Fprintf(out, "report: %s\n", filepath.Join(o.out, "report.json"))
	if runErr != nil {
		return fmt.Errorf("run interrupted after %.1fs (partial report written): %w", res.Elapsed.Seconds(), runErr)
	}
	if !rep.Passed {
		return errChecksFailed
	}
	return nil
}

func writeOutputs(o runOptions, rep *reports.Report, rec *reports.Recorder, res *runner.Result) error {
	if err := rep.WriteJSON(filepath.Join(o.out, "report.json")); err != nil {
		return err
	}
	if err := reports.WriteJUnitFile(o.out, rep); err != nil {
		return err
	}
	hf, err := os.Create(filepath.Join(o.out, "latency.hgrm"))
	if err != nil {
		return err
	}
	if err := reports.WriteHGRM(hf, rec.Latency()); err != nil {
		hf.Close()
		return err
	}
	if err := hf.Close(); err != nil {
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
