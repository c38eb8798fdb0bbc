package main

import (
	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/internal/exitcode"
	"seckill-harness/reports/results"
	"seckill-harness/runner/explore"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

func newExploreCmd() *cobra.Command {
	var o explore.Options
	var resultsFlags cmdline.Results // --results-history, --results-db
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
			o.Command = cmdline.Executable()
			o.Given = cmd.Flags().Changed
			var out lifecycle.Output
			done, err := resultsFlags.Open(cmd.Context(), &out, cmd.ErrOrStderr())
			defer done()
			if err != nil {
				return err
			}
			sum, err := explore.Explore(cmd.Context(), o)
			if err != nil {
				return err
			}
			_ = results.Put(cmd.Context(), out.Results, sum.Record(o.Out), cmd.ErrOrStderr())
			if len(sum.Findings) > 0 {
				return exitcode.ErrChecksFailed
			}
			return nil
		},
	}
	cmdline.ExploreFlags(cmd.Flags(), &o, &resultsFlags)
	return cmd
}
