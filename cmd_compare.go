package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"seckill-harness/internal/cmdline"
	"seckill-harness/internal/exitcode"
	"seckill-harness/runner/compare"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

// scenarioCmdFlags are the flags compare and capacity share with run.
type scenarioCmdFlags struct {
	sets     []string
	seed     int64
	out      string
	luaDir   string
	adapter  string // --adapter
	progress string
	cluster  lifecycle.ClusterSpec
	results  cmdline.Results // --results-history, --results-db
}

func (f *scenarioCmdFlags) register(fs *pflag.FlagSet, defOut string) {
	fs.StringArrayVar(&f.sets, "set", nil, "override a scenario field, key=value (repeatable), e.g. activity.stock=5000")
	fs.Int64Var(&f.seed, "seed", 0, "override the scenario's seed")
	fs.StringVar(&f.out, "out", defOut, "output directory")
	fs.StringVar(&f.luaDir, "lua-dir", "", "directory with the team's reserve.lua, transition.lua, compensate.lua")
	fs.StringVar(&f.progress, "progress", "off", "live progress on stderr: auto, tty, plain, off")
	cmdline.ClusterFlags(fs, &f.cluster)
	cmdline.AdapterFlag(fs, &f.adapter)
	cmdline.ResultsFlags(fs, &f.results, false)
}

// inputs is what the command's flags add to its plans, with the overrides ov.
func (f *scenarioCmdFlags) inputs(cmd *cobra.Command, ov planner.Overrides) (planner.Inputs, *int64) {
	var seed *int64
	if cmd.Flags().Changed("seed") {
		seed = &f.seed
	}
	ov.Adapter = f.adapter
	return planner.Inputs{Cluster: f.cluster, Given: cmd.Flags().Changed, LuaDir: f.luaDir, Overrides: ov}, seed
}

// plan is arg's plan with the command's --seed, --set and flags (planner.Load).
func (f *scenarioCmdFlags) plan(cmd *cobra.Command, arg string, ov planner.Overrides) (*lifecycle.Plan, error) {
	in, seed := f.inputs(cmd, ov)
	return planner.Load(cmd.Context(), arg, f.sets, seed, in)
}

func (f *scenarioCmdFlags) output(cmd *cobra.Command) lifecycle.Output {
	return lifecycle.Output{Dir: f.out, Progress: f.progress, ErrOut: cmd.ErrOrStderr(), Logger: cmdline.Logger(cmd)}
}

// run runs fn on the command's output with its results history open, and
// maps its result to the exit contract (verdict).
func (f *scenarioCmdFlags) run(cmd *cobra.Command, fn func(lifecycle.Output) (bool, error)) error {
	out := f.output(cmd)
	done, err := f.results.Open(cmd.Context(), &out, cmd.ErrOrStderr())
	defer done()
	if err != nil {
		return err
	}
	return verdict(fn(out))
}

// verdict maps a compare or capacity result to the exit contract.
func verdict(passed bool, err error) error {
	if err == nil && !passed {
		return exitcode.ErrChecksFailed
	}
	return err
}

func newCompareCmd() *cobra.Command {
	var f scenarioCmdFlags
	var req compare.Request
	var wait waitFlags
	cmd := &cobra.Command{
		Use:   "compare <name|file> --buckets " + compare.DefaultBuckets,
		Short: "Run the same load once per bucket count and print them side by side (throughput, latency, partial sell-out)",
		Long: `compare runs a scenario once per bucket count — same seed, same load, a fresh
cluster each — and prints throughput, p50/p99/p99.9, when the first and the
last bucket sold out, the stock still unsold in other buckets when the first
bucket sold out (the specification's partial sell-out), SOLD_OUT answers given while
stock was left elsewhere, and the final unsold stock. Reports go to
<out>/buckets-N/, the table to <out>/compare.json.

--pool-sizes 4,16,64 compares the load client's pool sizes per node instead
(throughput, p99, pool waits, their time and pool timeouts per size; reports
in <out>/pool-N/); --local-soldout TTL compares the path without and with
the local sold-out flag (Redis calls after the sell-out and answers given
locally against the false sold-out window after releases; reports in
<out>/local-soldout-off/ and <out>/local-soldout-TTL/). One axis at a time.

With --capacity it runs capacity's search (see 'seckill-harness capacity
--help'; the same flags) once per bucket count and --path-mix, each on a
fresh cluster, and prints one table: the highest rate that held the SLO
(bisected to --precision) with the confirmations that held, p99, errors and
the SOLD_OUT share at that rate, each master's CPU there (INFO cpu deltas
over the load), the buckets per master (the owner of each bucket's slot) and
the ceiling that placement implies (1 / the busiest master's share), and
the measured speed-up against the first bucket count; then, apart and
labelled, a projection with each master on its own core (measured server
CPU per op, placement, client CPU per op). Steps go to
<out>/<path>/buckets-N/step-NN-RATE/, the rows to <out>/compare.json
(capacity_rows) and <out>/report.html.

With --mitigations and/or --variant it compares variants of the scenario
instead of bucket counts: each variant is the scenario with settings of its
own (as --set takes them) — the mitigations none (as written), min-replicas
(topology.min_replicas_to_write=1, topology.min_replicas_max_lag=1s) and
wait (wait.replicas=1: WAIT after each ACCEPTED) — run on a fresh cluster
with the same seed and load, and prints one table: ACCEPTED answers, lost
acknowledged reservations, those lost although WAIT confirmed them,
NOREPLICAS refusals and the window they covered, p99, WAIT's p99, ops/s.
Reports go to <out>/<variant>/, the table to <out>/compare.json,
<out>/compare.md and <out>/report.html.`,
		Example: "  seckill-harness compare sold-out-90 --buckets " + compare.DefaultBuckets + "\n" +
			"  seckill-harness compare failover-data-loss --mitigations " + compare.DefaultMitigations + "\n" +
			"  seckill-harness compare failover-data-loss --mitigations none,wait --variant wait-2s:wait.replicas=1 --variant wait-2s:wait.timeout=2s\n" +
			"  seckill-harness compare sold-out-90 --buckets 1,16,32 --capacity --slo-p99 20ms --path-mix both\n" +
			"  seckill-harness compare pool-exhaustion --pool-sizes 4,16,64\n" +
			"  seckill-harness compare sold-out-90 --local-soldout 1s --set phases.sold-out.mix.release=0.05",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Given = cmd.Flags().Changed
			plan := func(sets []string) (*lifecycle.Plan, error) {
				in, seed := f.inputs(cmd, wait.over(planner.Overrides{}))
				return planner.Load(cmd.Context(), args[0], append(append([]string(nil), f.sets...), sets...), seed, in)
			}
			return f.run(cmd, func(out lifecycle.Output) (bool, error) { return req.Run(cmd.Context(), cmd.OutOrStdout(), plan, out) })
		},
	}
	f.register(cmd.Flags(), "out/compare")
	fs := cmd.Flags()
	fs.StringVar(&req.Buckets, "buckets", compare.DefaultBuckets, "bucket counts to compare")
	fs.StringVar(&req.PoolSizes, "pool-sizes", "", "compare client pool sizes (connections per node) instead of bucket counts, e.g. 4,16,64: throughput, p99, pool waits and timeouts per size")
	fs.DurationVar(&req.LocalSoldOut, "local-soldout", 0, "compare the path without and with a local sold-out flag of this TTL instead of bucket counts: Redis calls after the sell-out against the undersell window")
	fs.StringVar(&req.Mitigations, "mitigations", "", "compare by variant instead of bucket count: the named mitigations of lost acknowledgements ("+compare.DefaultMitigations+"), each run on a fresh cluster, one table (lost acks, lost WAIT-confirmed, NOREPLICAS, refused window, p99, ops/s)")
	fs.StringArrayVar(&req.Variants, "variant", nil, "compare by variant: NAME:key=value adds a scenario setting (as --set) to variant NAME (repeatable; NAME: alone is the scenario as written); with --mitigations, after them")
	wait.register(fs)
	fs.BoolVar(&req.Capacity, "capacity", false, "find each bucket count's capacity (capacity's search and SLO flags) instead of running one fixed load")
	addCapacityFlags(fs, &req.Search, "scenario, accept, sold-out or both")
	return cmd
}
