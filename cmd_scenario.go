package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
	"seckill-harness/scenarios"
)

// loadFlags are the run flags that describe the load; with a scenario they
// are refused (use --set), so a CI job never runs something other than it reads.
var loadFlags = []string{"users", "stock", "buckets", "rate", "duration", "mode", "concurrency", "shape", "max-in-flight",
	"max-ops", "timeout", "retries", "reservation-ttl", "mix-replay", "mix-same-user", "mix-foreign-request", "mix-release",
	"slope", "amplitude", "period", "peak", "spike-at", "ramp-up", "hold", "ramp-down", "name"}

// runScenario runs a scenario, or each member of a suite in turn (each on
// its own fresh cluster, reports in <out>/<member>/), and returns the
// exit error of the worst one: a harness error, else a failure, else an
// inconclusive member (exit 3), else nil. Every plan (each member's) is
// built and validated before the first run starts. onMember, when not nil,
// is called after each suite member (the catalogue's rows).
func runScenario(ctx context.Context, s *scenarios.Scenario, in planner.Inputs, out lifecycle.Output, onMember memberFunc) error {
	if !s.IsSuite() {
		p, err := planner.Build(s, in)
		if err != nil {
			return err
		}
		return execute(ctx, p, out)
	}
	if err := planner.Validate(s); err != nil {
		return err
	}
	members, err := s.Members()
	if err != nil {
		return err
	}
	plans := make([]*lifecycle.Plan, len(members))
	for i, m := range members {
		if plans[i], err = planner.Build(m, in); err != nil {
			return fmt.Errorf("suite %s, member %s: %w", s.Name, m.Name, err)
		}
	}
	return runSuite(ctx, s.Name, plans, out, onMember)
}

// memberFunc is told of each suite member that ran: its name, reports
// directory, wall time and exit error.
type memberFunc func(name, dir string, wall time.Duration, err error)

// runSuite executes the plans of a suite's members in turn and prints the table.
func runSuite(ctx context.Context, name string, plans []*lifecycle.Plan, out lifecycle.Output, onMember memberFunc) error {
	type row struct {
		name, verdict string
		dur           time.Duration
	}
	var rows []row
	var worst error
	log := out.Log
	for _, p := range plans {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(log, "\n##### %s (%d of %d in %s) #####\n", p.Name, len(rows)+1, len(plans), name)
		sub := out
		sub.Dir = filepath.Join(out.Dir, p.Name)
		t0 := time.Now()
		err := execute(ctx, p, sub)
		r := row{name: p.Name, dur: time.Since(t0), verdict: "PASS"}
		switch {
		case err == nil:
		case errors.Is(err, errChecksFailed):
			r.verdict = "FAIL"
			if worst == nil || errors.Is(worst, errInconclusive) {
				worst = err
			}
		case errors.Is(err, errInconclusive):
			r.verdict = "INCONCLUSIVE"
			if worst == nil {
				worst = err
			}
		default:
			r.verdict = "ERROR: " + err.Error()
			worst = err
		}
		rows = append(rows, r)
		if onMember != nil {
			onMember(p.Name, sub.Dir, r.dur, err)
		}
	}
	fmt.Fprintf(log, "\nsuite %s:\n", name)
	w := tabwriter.NewWriter(log, 2, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(w, "  %s\t%.1fs\t%s\t%s\n", r.name, r.dur.Seconds(), r.verdict, filepath.Join(out.Dir, r.name))
	}
	w.Flush()
	if ctx.Err() != nil {
		return fmt.Errorf("suite %s interrupted: %w", name, ctx.Err())
	}
	return worst
}

// scenarioListEntry is one built-in scenario in list --json.
type scenarioListEntry struct {
	Name      string   `json:"name"`
	Proves    string   `json:"proves"`
	LoadS     float64  `json:"load_s"` // planned load time (a suite: its members' sum)
	Suite     bool     `json:"suite"`
	Members   []string `json:"members,omitempty"`
	Pipeline  bool     `json:"pipeline"`
	MaxDrainS float64  `json:"max_drain_s,omitempty"`
}

func newListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios and what each proves",
		Long: `list prints the built-in scenarios. With --json it prints one JSON array, one
object per scenario: name, proves, load_s, suite, members, pipeline, max_drain_s.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				var out []scenarioListEntry
				for _, in := range scenarios.Builtins() {
					out = append(out, scenarioListEntry{Name: in.Name, Proves: in.Proves, LoadS: in.Duration.Seconds(), Suite: in.Suite,
						Members: in.Members, Pipeline: in.Pipeline, MaxDrainS: in.Drain.Seconds()})
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tLOAD\tPROVES")
			for _, in := range scenarios.Builtins() {
				proves := in.Proves
				if in.Suite {
					proves += " [suite: " + strings.Join(in.Members, ", ") + "]"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", in.Name, in.Duration.Round(time.Second), proves)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "\nrun one: seckill-harness run NAME   (or a YAML file; see 'seckill-harness validate --help')")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the scenarios as one JSON array")
	return cmd
}

func newValidateCmd() *cobra.Command {
	var sets []string
	cmd := &cobra.Command{
		Use:   "validate <file|name>...",
		Short: "Check scenario files (or built-ins) without running them; exit 2 names file:line and field of every problem",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var bad []string
			for _, a := range args {
				s, err := planner.Resolve(cmd.Context(), a, sets, nil)
				if err == nil {
					err = planner.Validate(s)
				}
				if err == nil && s.IsSuite() {
					_, err = s.Members()
				}
				if err == nil {
					_, err = s.Plan()
				}
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s\n", err)
					bad = append(bad, a)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "ok  %s (%s, %d phase(s), %d fault(s), %s of load)\n", a, s.Source, len(s.Phases), len(s.Faults), s.Duration().Round(time.Millisecond))
			}
			if len(bad) > 0 {
				return fmt.Errorf("%d of %d scenario(s) not valid: %s", len(bad), len(args), strings.Join(bad, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a field (key=value) before validating, as run does")
	return cmd
}

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

func newCapacityCmd() *cobra.Command {
	var f scenarioCmdFlags
	var co lifecycle.CapacityOptions
	cmd := &cobra.Command{
		Use:   "capacity <name|file>",
		Short: "Step the rate up until the SLO breaks; report the highest rate that held, with the curve",
		Long: `capacity runs the scenario's first phase open-loop at a constant rate for
--step-duration, multiplying the rate by --factor each step (dividing when
--start already breaks), until a step breaks the SLO: latency p99 (from the
intended send) above --slo-p99, a failed invariant, a dropped operation,
throughput under 95% of the rate, or more than --max-error-ratio errors and
unknowns. It then bisects between the highest rate that held and the lowest
that broke until they are within --precision, and runs the final rate
--confirm more times, saying how many held (a noisy machine can break a rate
that held once). Every step is a fresh activity on one cluster, its buckets
on the same slots each time. It prints the curve and the highest rate that
held; reports per step go to <out>/step-NN-RATE/, the curve to
<out>/capacity.json. --path-mix accept or sold-out sizes each step's stock
from its demand (twice it, or a tenth of it) instead of the scenario's.`,
		Example: "  seckill-harness capacity sold-out-90 --start 2000 --factor 1.5 --slo-p99 20ms",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.plan(cmd, args[0], planner.Overrides{})
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("start") {
				co.Start = p.Phases[0].Config.Shape.Rate
			}
			return verdict(lifecycle.Capacity(cmd.Context(), cmd.OutOrStdout(), p, co, f.output(cmd)))
		},
	}
	f.register(cmd.Flags(), "out/capacity")
	addCapacityFlags(cmd.Flags(), &co, "scenario, accept or sold-out")
	return cmd
}

// capacityFlags are the flags of capacity's search, shared with compare --capacity.
var capacityFlags = []string{"start", "factor", "max-steps", "step-duration", "slo-p99", "max-error-ratio", "precision", "confirm", "path-mix"}

func addCapacityFlags(fs *pflag.FlagSet, co *lifecycle.CapacityOptions, paths string) {
	fs.Float64Var(&co.Start, "start", 0, "first rate in ops/s (default: the scenario's first phase rate)")
	fs.Float64Var(&co.Factor, "factor", 1.5, "rate multiplier per ramp step")
	fs.IntVar(&co.MaxSteps, "max-steps", 8, "most ramp steps to try (bisection and confirmation steps come on top)")
	fs.DurationVar(&co.StepDuration, "step-duration", 5*time.Second, "load time per step")
	fs.DurationVar(&co.SloP99, "slo-p99", 20*time.Millisecond, "latency p99 (from the intended send) a step must stay under")
	fs.Float64Var(&co.MaxErrorRatio, "max-error-ratio", 0.001, "largest share of ERROR+UNKNOWN outcomes a step may have")
	fs.Float64Var(&co.Precision, "precision", 0.05, "bisect until the rate that held and the rate that broke are this close (0.05: ±5%)")
	fs.IntVar(&co.Confirm, "confirm", 1, "run the final rate this many more times and report how many held")
	fs.StringVar(&co.PathMix, "path-mix", lifecycle.PathScenario, "reserve path to load: "+paths+
		" (accept: stock twice the step's demand; sold-out: stock a tenth of it; scenario: its own stock)")
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
