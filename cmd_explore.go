package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/internal/exitcode"
	"seckill-harness/runner/explore"
	"seckill-harness/runner/history"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

func newExploreCmd() *cobra.Command {
	var o explore.Options
	var results cmdline.Results // --results-history, --results-db
	o.Bounds = explore.DefaultBounds()
	cmd := &cobra.Command{
		Use:   "explore --seed S --budget 10m --out DIR",
		Short: "Run seeded random fault schedules until a budget is spent; shrink a failure to a minimal scenario YAML",
		Long: `explore draws scenarios from --seed (the same seed, flags and --state draw the
same schedules): a load (curve, rate, duration, users, stock, buckets, a share
of duplicates and releases) within the bounds below, and one to --max-faults
faults from the registry with their parameters, overlapping or back to back,
only of kinds this cluster can run (topology, proxies, replication proxies,
process control; destructive kinds — ` + "failover, slot-migration, oom, …" + ` —
only with --allow-destructive; the pipeline kinds only with --pipeline). Each schedule
runs through the normal run lifecycle on ONE cluster started once, its
scenario and report in <out>/run-NNN/.

A run whose invariant fails is a finding: explore shrinks it within
--shrink-budget (removes faults, shortens fault windows and the load, halves
the rate, the users, the workers…, keeping a change only while the SAME
invariant still fails, twice in a row), writes <out>/run-NNN/minimal.yaml with the command
that re-runs it, and re-runs the minimal scenario --confirm times
("reproduces 3/3"). The first finding ends the exploration unless
--keep-going. It writes summary.txt, summary.json and junit.xml to --out and
prints the coverage: fault kinds, pairs of kinds and load shapes explored,
carried across invocations in --state (a JSON file a CI job caches); later
invocations prefer what is less explored.

Exit codes: 0 no finding, 1 finding(s), 2 bad input or a harness error.`,
		Example: `  seckill-harness explore --seed 7 --budget 10m --out out/explore --state explore-state.json
  seckill-harness explore --seed 1 --runs 5 --max-duration 3s --path new-request-id-on-timeout --out out/x
  seckill-harness explore --seed 3 --budget 30m --allow-destructive --keep-going --out out/nightly`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := planner.CheckPath(o.Bounds.Path); err != nil {
				return err
			}
			o.Log, o.Logger = cmd.OutOrStdout(), cmdline.Logger(cmd)
			o.Command = explorerCommand()
			o.Given = cmd.Flags().Changed
			var out lifecycle.Output
			done, err := results.Open(cmd.Context(), &out, cmd.ErrOrStderr())
			defer done()
			if err != nil {
				return err
			}
			sum, err := explore.Explore(cmd.Context(), o)
			if err != nil {
				return err
			}
			_ = history.Put(cmd.Context(), out.Results, sum.Record(o.Out), cmd.ErrOrStderr())
			if len(sum.Findings) > 0 {
				return exitcode.ErrChecksFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	cmdline.ResultsFlags(f, &results, cmdline.ResultsAppend)
	f.Int64Var(&o.Seed, "seed", 1, "seed of the schedules")
	f.DurationVar(&o.Budget, "budget", 0, "wall time for drawing and running schedules, e.g. 10m (shrinking has --shrink-budget)")
	f.IntVar(&o.Runs, "runs", 0, "most schedules to run (0: until --budget)")
	f.StringVar(&o.Out, "out", "out/explore", "directory for run-NNN/, summary.txt, summary.json and junit.xml")
	f.StringVar(&o.State, "state", "", "coverage state file (JSON) carried across invocations; created when missing")
	f.DurationVar(&o.ShrinkBudget, "shrink-budget", 5*time.Minute, "wall time to shrink a finding (0: no shrinking)")
	f.IntVar(&o.Confirm, "confirm", 3, "re-runs of the minimal scenario (0: none)")
	f.BoolVar(&o.KeepGoing, "keep-going", false, "explore on after a finding (each failing invariant is shrunk once)")
	f.StringVar(&o.Bounds.Path, "path", "", "reserve path every schedule drives: reference (default) or a known-bad variant (see 'seckill-harness selftest --list')")
	f.BoolVar(&o.Bounds.Pipeline, "pipeline", false, "run the order pipeline beside every load (MQ errors and timeouts, order rejects and their releases; a throwaway local PostgreSQL): dispatcher-crash and compensator-crash become drawable")
	f.StringSliceVar(&o.Bounds.Kinds, "kinds", nil, "draw only these fault kinds (comma-separated; default: every kind this cluster can run)")
	f.IntVar(&o.Bounds.MaxFaults, "max-faults", o.Bounds.MaxFaults, "most faults per schedule (1-3)")
	f.DurationVar(&o.Bounds.MinDuration, "min-duration", o.Bounds.MinDuration, "shortest load")
	f.DurationVar(&o.Bounds.MaxDuration, "max-duration", o.Bounds.MaxDuration, "longest load")
	f.Float64Var(&o.Bounds.MinRate, "min-rate", o.Bounds.MinRate, "lowest mean rate (ops/s)")
	f.Float64Var(&o.Bounds.MaxRate, "max-rate", o.Bounds.MaxRate, "highest mean rate (ops/s)")
	cmdline.ClusterFlags(f, &o.Cluster)
	return cmd
}

// explorerCommand is how a printed re-run command calls this binary: its
// name when it was run through PATH, else its path.
func explorerCommand() string {
	exe := os.Args[0]
	if filepath.Base(exe) == exe || filepath.Ext(exe) == ".test" {
		return "seckill-harness"
	}
	return exe
}
