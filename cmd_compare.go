package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

// scenarioCmdFlags are the flags compare and capacity share with run.
type scenarioCmdFlags struct {
	sets     []string
	seed     int64
	out      string
	luaDir   string
	progress string
	cluster  lifecycle.ClusterSpec
}

func (f *scenarioCmdFlags) register(fs *pflag.FlagSet, defOut string) {
	fs.StringArrayVar(&f.sets, "set", nil, "override a scenario field, key=value (repeatable), e.g. activity.stock=5000")
	fs.Int64Var(&f.seed, "seed", 0, "override the scenario's seed")
	fs.StringVar(&f.out, "out", defOut, "output directory")
	fs.StringVar(&f.luaDir, "lua-dir", "", "directory with the team's reserve.lua, transition.lua, compensate.lua")
	fs.StringVar(&f.progress, "progress", "off", "live progress on stderr: auto, tty, plain, off")
	addClusterFlags(fs, &f.cluster)
}

// inputs is what the command's flags add to its plans, with the overrides ov.
func (f *scenarioCmdFlags) inputs(cmd *cobra.Command, ov planner.Overrides) (planner.Inputs, *int64) {
	var seed *int64
	if cmd.Flags().Changed("seed") {
		seed = &f.seed
	}
	return planner.Inputs{Cluster: f.cluster, Given: cmd.Flags().Changed, LuaDir: f.luaDir, Overrides: ov}, seed
}

// plan is arg's plan with the command's --seed, --set and flags (planner.Load).
func (f *scenarioCmdFlags) plan(cmd *cobra.Command, arg string, ov planner.Overrides) (*lifecycle.Plan, error) {
	in, seed := f.inputs(cmd, ov)
	return planner.Load(cmd.Context(), arg, f.sets, seed, in)
}

func (f *scenarioCmdFlags) output(cmd *cobra.Command) lifecycle.Output {
	return lifecycle.Output{Dir: f.out, Progress: f.progress, ErrOut: cmd.ErrOrStderr(), Logger: cmdLogger(cmd)}
}

// verdict maps a compare or capacity result to the exit contract.
func verdict(passed bool, err error) error {
	if err == nil && !passed {
		return errChecksFailed
	}
	return err
}

func newCompareCmd() *cobra.Command {
	var f scenarioCmdFlags
	var buckets, poolSizes string
	var localSoldOut time.Duration
	var capacity bool
	var co lifecycle.CapacityOptions
	var mitigations string
	var variants []string
	var wait waitFlags
	cmd := &cobra.Command{
		Use:   "compare <name|file> --buckets " + lifecycle.DefaultCompareBuckets,
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
		Example: "  seckill-harness compare sold-out-90 --buckets " + lifecycle.DefaultCompareBuckets + "\n" +
			"  seckill-harness compare failover-data-loss --mitigations " + lifecycle.DefaultMitigations + "\n" +
			"  seckill-harness compare failover-data-loss --mitigations none,wait --variant wait-2s:wait.replicas=1 --variant wait-2s:wait.timeout=2s\n" +
			"  seckill-harness compare sold-out-90 --buckets 1,16,32 --capacity --slo-p99 20ms --path-mix both\n" +
			"  seckill-harness compare pool-exhaustion --pool-sizes 4,16,64\n" +
			"  seckill-harness compare sold-out-90 --local-soldout 1s --set phases.sold-out.mix.release=0.05",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("mitigations") || len(variants) > 0 {
				return compareVariants(cmd, &f, &wait, args[0], mitigations, variants)
			}
			counts, err := lifecycle.ParseBuckets(buckets)
			if err != nil {
				return err
			}
			if !capacity {
				for _, name := range capacityFlags {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--%s applies to compare --capacity: add --capacity, or drop --%s", name, name)
					}
				}
			}
			p, err := f.plan(cmd, args[0], wait.over(planner.Overrides{}))
			if err != nil {
				return err
			}
			if axis, err := otherCompareAxis(cmd, poolSizes, localSoldOut, capacity); axis != nil || err != nil {
				if err != nil {
					return err
				}
				return verdict(lifecycle.CompareOver(cmd.Context(), cmd.OutOrStdout(), p, *axis, f.output(cmd)))
			}
			if !capacity {
				return verdict(lifecycle.Compare(cmd.Context(), cmd.OutOrStdout(), p, counts, f.output(cmd)))
			}
			if !cmd.Flags().Changed("start") {
				co.Start = p.Phases[0].Config.Shape.Rate
			}
			return verdict(lifecycle.CompareCapacity(cmd.Context(), cmd.OutOrStdout(), p, counts, co, f.output(cmd)))
		},
	}
	f.register(cmd.Flags(), "out/compare")
	cmd.Flags().StringVar(&buckets, "buckets", lifecycle.DefaultCompareBuckets, "bucket counts to compare")
	cmd.Flags().StringVar(&poolSizes, "pool-sizes", "", "compare client pool sizes (connections per node) instead of bucket counts, e.g. 4,16,64: throughput, p99, pool waits and timeouts per size")
	cmd.Flags().DurationVar(&localSoldOut, "local-soldout", 0, "compare the path without and with a local sold-out flag of this TTL instead of bucket counts: Redis calls after the sell-out against the undersell window")
	cmd.Flags().StringVar(&mitigations, "mitigations", "", "compare by variant instead of bucket count: the named mitigations of lost acknowledgements ("+lifecycle.DefaultMitigations+"), each run on a fresh cluster, one table (lost acks, lost WAIT-confirmed, NOREPLICAS, refused window, p99, ops/s)")
	cmd.Flags().StringArrayVar(&variants, "variant", nil, "compare by variant: NAME:key=value adds a scenario setting (as --set) to variant NAME (repeatable; NAME: alone is the scenario as written); with --mitigations, after them")
	wait.register(cmd.Flags())
	cmd.Flags().BoolVar(&capacity, "capacity", false, "find each bucket count's capacity (capacity's search and SLO flags) instead of running one fixed load")
	addCapacityFlags(cmd.Flags(), &co, "scenario, accept, sold-out or both")
	return cmd
}

// otherCompareAxis is the compare axis --pool-sizes or --local-soldout
// asks for (nil: compare bucket counts); one axis at a time, without
// --capacity and --buckets.
func otherCompareAxis(cmd *cobra.Command, poolSizes string, localSoldOut time.Duration, capacity bool) (*lifecycle.CompareAxis, error) {
	var given []string
	for _, name := range []string{"pool-sizes", "local-soldout"} {
		if cmd.Flags().Changed(name) {
			given = append(given, "--"+name)
		}
	}
	switch {
	case len(given) == 0:
		return nil, nil
	case len(given) > 1 || capacity || cmd.Flags().Changed("buckets"):
		if cmd.Flags().Changed("buckets") {
			given = append(given, "--buckets")
		}
		if capacity {
			given = append(given, "--capacity")
		}
		return nil, fmt.Errorf("%s: compare varies one thing at a time: keep one of them", strings.Join(given, ", "))
	case cmd.Flags().Changed("pool-sizes"):
		sizes, err := lifecycle.ParsePoolSizes(poolSizes)
		if err != nil {
			return nil, err
		}
		ax := lifecycle.PoolSizeAxis(sizes)
		return &ax, nil
	}
	if localSoldOut <= 0 {
		return nil, fmt.Errorf("--local-soldout %s: want a positive TTL like 1s", localSoldOut)
	}
	ax := lifecycle.LocalSoldOutAxis(localSoldOut)
	return &ax, nil
}

// compareVariants is compare --mitigations/--variant: one plan per variant
// (the scenario with the command's --set values, then the variant's), run
// and tabled by lifecycle.CompareVariants.
func compareVariants(cmd *cobra.Command, f *scenarioCmdFlags, wait *waitFlags, arg, mitigations string, variants []string) error {
	for _, name := range append([]string{"buckets", "capacity", "pool-sizes", "local-soldout"}, capacityFlags...) {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s belongs to the compare by bucket count: drop it, or drop --mitigations/--variant", name)
		}
	}
	if cmd.Flags().Changed("mitigations") && strings.TrimSpace(mitigations) == "" {
		mitigations = lifecycle.DefaultMitigations
	}
	specs, err := lifecycle.ParseVariants(mitigations, variants)
	if err != nil {
		return err
	}
	in, seed := f.inputs(cmd, wait.over(planner.Overrides{}))
	runs, err := planner.Variants(cmd.Context(), arg, f.sets, seed, in, specs)
	if err != nil {
		return err
	}
	return verdict(lifecycle.CompareVariants(cmd.Context(), cmd.OutOrStdout(), runs[0].Plan.Name, runs, f.output(cmd)))
}
