package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
)

type raceOptions struct {
	users, concurrency int
	stock              int64
	buckets            uint32
	luaDir, out        string
	cluster            lifecycle.ClusterSpec
	logger             *slog.Logger
}

func newRaceCmd() *cobra.Command {
	o := raceOptions{}
	cmd := &cobra.Command{
		Use:   "race",
		Short: "Race distinct users at a small stock (closed loop, all at once) and check exactly min(stock, users) win",
		Long: `race is the specification's first concurrency scene as one command: --users distinct
users, one request each, sent from --concurrency workers at once (closed loop)
against --stock units on a fresh local cluster. It passes (exit 0) when
exactly min(stock, users) reservations were ACCEPTED, every other answer was
SOLD_OUT, and the invariants hold; it writes the usual reports to --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.logger = cmdLogger(cmd)
			return runRace(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.users, "users", 20000, "distinct users, one request each")
	f.Int64Var(&o.stock, "stock", 1, "total stock")
	f.Uint32Var(&o.buckets, "buckets", 1, "stock buckets")
	f.IntVar(&o.concurrency, "concurrency", 512, "workers sending at once")
	f.StringVar(&o.luaDir, "lua-dir", "", "directory with reserve.lua, transition.lua, compensate.lua (default: the embedded scripts)")
	f.StringVar(&o.out, "out", "out/race", "output directory")
	addClusterFlags(f, &o.cluster)
	return cmd
}

func runRace(ctx context.Context, out, errOut io.Writer, o raceOptions) error {
	if o.users <= 0 || o.concurrency <= 0 {
		return fmt.Errorf("--users and --concurrency must be positive")
	}
	cfg := runner.DefaultConfig()
	cfg.Mode, cfg.Concurrency, cfg.Users, cfg.MaxOps = runner.ModeClosed, o.concurrency, o.users, o.users
	cfg.Duration, cfg.Mix, cfg.SampleEvery = 5*time.Minute, runner.Mix{}, 0
	want := min(o.stock, int64(o.users))
	p := &lifecycle.Plan{Name: "race", Cluster: o.cluster, Stock: o.stock, Buckets: o.buckets, LuaDir: o.luaDir,
		Phases: []runner.Phase{{Name: "race", Config: cfg}},
		Evaluate: func(r *reports.Report) []reports.Assertion {
			return []reports.Assertion{
				exactly(fmt.Sprintf("exactly %d ACCEPTED", want), r.Totals.Outcomes["ACCEPTED"], want),
				exactly(fmt.Sprintf("exactly %d SOLD_OUT", int64(o.users)-want), r.Totals.Outcomes["SOLD_OUT"], int64(o.users)-want),
			}
		}}
	oc, err := lifecycle.Execute(ctx, p, lifecycle.Output{Dir: o.out, Progress: "off", ErrOut: errOut, Log: out, Logger: o.logger})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "race: %d users from %d workers in %.2fs: %.0f calls/s\n", o.users, o.concurrency,
		oc.Result.Elapsed.Seconds(), float64(oc.Result.History.Len())/oc.Result.Elapsed.Seconds())
	return exitOf(oc)
}

func exactly(name string, observed, want int64) reports.Assertion {
	w := float64(want)
	a := reports.Assertion{Name: name, Status: reports.StatusPass, Observed: float64(observed), Threshold: &w}
	if observed != want {
		a.Status = reports.StatusFail
	}
	return a
}
