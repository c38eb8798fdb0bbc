package cmdline

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"seckill-harness/internal/exitcode"
	"seckill-harness/runner/compare"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

// Scenario are the flags compare and capacity share with run: --set,
// --seed, --out, --lua-dir, --progress, the cluster's, --adapter and the
// results history's.
type Scenario struct {
	sets     []string
	seed     int64
	out      string
	luaDir   string
	adapter  string // --adapter
	progress string
	cluster  lifecycle.ClusterSpec
	results  Results // --results-history, --results-db
}

// ScenarioFlags registers the Scenario flags on fs into f; defOut is
// --out's default.
func ScenarioFlags(fs *pflag.FlagSet, f *Scenario, defOut string) {
	fs.StringArrayVar(&f.sets, "set", nil, "override a scenario field, key=value (repeatable), e.g. activity.stock=5000")
	fs.Int64Var(&f.seed, "seed", 0, "override the scenario's seed")
	fs.StringVar(&f.out, "out", defOut, "output directory")
	fs.StringVar(&f.luaDir, "lua-dir", "", "directory with the team's reserve.lua, transition.lua, compensate.lua")
	fs.StringVar(&f.progress, "progress", "off", "live progress on stderr: auto, tty, plain, off")
	ClusterFlags(fs, &f.cluster)
	AdapterFlag(fs, &f.adapter)
	ResultsFlags(fs, &f.results, ResultsAppend)
}

// Plan is arg's plan (planner.Load) with the command's --seed, its --set
// followed by sets, its other flags and the overrides ov.
func (f *Scenario) Plan(cmd *cobra.Command, arg string, ov planner.Overrides, sets ...string) (*lifecycle.Plan, error) {
	var seed *int64
	if cmd.Flags().Changed("seed") {
		seed = &f.seed
	}
	ov.Adapter = f.adapter
	in := planner.Inputs{Cluster: f.cluster, Given: cmd.Flags().Changed, LuaDir: f.luaDir, Overrides: ov}
	return planner.Load(cmd.Context(), arg, append(append([]string(nil), f.sets...), sets...), seed, in)
}

// Run runs fn on the command's output (--out, --progress, its stderr and
// logger) with the results history open, and maps its result to the exit
// contract: an error as it is, a completed comparison that did not pass
// as exitcode.ErrChecksFailed (exit 1).
func (f *Scenario) Run(cmd *cobra.Command, fn func(lifecycle.Output) (bool, error)) error {
	out := lifecycle.Output{Dir: f.out, Progress: f.progress, ErrOut: cmd.ErrOrStderr(), Logger: Logger(cmd)}
	done, err := f.results.Open(cmd.Context(), &out, cmd.ErrOrStderr())
	defer done()
	if err != nil {
		return err
	}
	passed, err := fn(out)
	if err == nil && !passed {
		return exitcode.ErrChecksFailed
	}
	return err
}

// CapacityFlags registers capacity's search and SLO flags (capacity, and
// compare --capacity) on fs into co; paths names the --path-mix values
// the command takes.
func CapacityFlags(fs *pflag.FlagSet, co *compare.CapacityOptions, paths string) {
	fs.Float64Var(&co.Start, "start", 0, "first rate in ops/s (default: the scenario's first phase rate)")
	fs.Float64Var(&co.Factor, "factor", 1.5, "rate multiplier per ramp step")
	fs.IntVar(&co.MaxSteps, "max-steps", 8, "most ramp steps to try (bisection and confirmation steps come on top)")
	fs.DurationVar(&co.StepDuration, "step-duration", 5*time.Second, "load time per step")
	fs.DurationVar(&co.SloP99, "slo-p99", 20*time.Millisecond, "latency p99 (from the intended send) a step must stay under")
	fs.Float64Var(&co.MaxErrorRatio, "max-error-ratio", 0.001, "largest share of ERROR+UNKNOWN outcomes a step may have")
	fs.Float64Var(&co.Precision, "precision", 0.05, "bisect until the rate that held and the rate that broke are this close (0.05: ±5%)")
	fs.IntVar(&co.Confirm, "confirm", 1, "run the final rate this many more times and report how many held")
	fs.StringVar(&co.PathMix, "path-mix", compare.PathScenario, "reserve path to load: "+paths+
		" (accept: stock twice the step's demand; sold-out: stock a tenth of it; scenario: its own stock)")
}

// CompareFlags registers compare's own flags on fs (after the Scenario
// flags): the axis to compare (--buckets, --pool-sizes, --local-soldout,
// --mitigations, --variant) into req, the Wait flags into wait, and
// --capacity with the CapacityFlags into req.Search.
func CompareFlags(fs *pflag.FlagSet, req *compare.Request, wait *Wait) {
	fs.StringVar(&req.Buckets, "buckets", compare.DefaultBuckets, "bucket counts to compare")
	fs.StringVar(&req.PoolSizes, "pool-sizes", "", "compare client pool sizes (connections per node) instead of bucket counts, e.g. 4,16,64: throughput, p99, pool waits and timeouts per size")
	fs.DurationVar(&req.LocalSoldOut, "local-soldout", 0, "compare the path without and with a local sold-out flag of this TTL instead of bucket counts: Redis calls after the sell-out against the undersell window")
	fs.StringVar(&req.Mitigations, "mitigations", "", "compare by variant instead of bucket count: the named mitigations of lost acknowledgements ("+compare.DefaultMitigations+"), each run on a fresh cluster, one table (lost acks, lost WAIT-confirmed, NOREPLICAS, refused window, p99, ops/s)")
	fs.StringArrayVar(&req.Variants, "variant", nil, "compare by variant: NAME:key=value adds a scenario setting (as --set) to variant NAME (repeatable; NAME: alone is the scenario as written); with --mitigations, after them")
	WaitFlags(fs, wait)
	fs.BoolVar(&req.Capacity, "capacity", false, "find each bucket count's capacity (capacity's search and SLO flags) instead of running one fixed load")
	CapacityFlags(fs, &req.Search, "scenario, accept, sold-out or both")
}
