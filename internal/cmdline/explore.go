package cmdline

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"seckill-harness/runner/explore"
)

// ExploreFlags registers explore's flags on f: the results history into
// results, the rest into o (its budget, output, shrinking, the bounds of
// what it draws and the cluster). o.Bounds' values are the defaults of
// the bound flags.
func ExploreFlags(f *pflag.FlagSet, o *explore.Options, results *Results) {
	ResultsFlags(f, results, ResultsAppend)
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
	ClusterFlags(f, &o.Cluster)
}

// Executable is how a printed re-run command (explore's minimal.yaml)
// calls this binary: its name when it was run through PATH (or from a
// test binary), else the path it was run by.
func Executable() string {
	exe := os.Args[0]
	if filepath.Base(exe) == exe || filepath.Ext(exe) == ".test" {
		return "seckill-harness"
	}
	return exe
}
