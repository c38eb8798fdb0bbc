package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"seckill-harness/internal/cmdline"
	"seckill-harness/runner/catalogue"
	"seckill-harness/runner/lifecycle"
)

func newCatalogueCmd() *cobra.Command {
	var o catalogue.Settings
	var results cmdline.Results // --results-history, --results-db
	cmd := &cobra.Command{
		Use:   "catalogue",
		Short: "Run every built-in scenario and suite on the reference path; each must meet its own expectation",
		Long: `catalogue runs the built-ins ('seckill-harness list') on the reference path and
holds each to its own expectation: pass, or expected-fail when it declares
assertions.expect_fail. A suite runs as 'run SUITE' does and gives its members'
rows; a suite all of whose members a larger suite's run covers (nightly-ci in
nightly) is not run again; only the scenarios no suite covers run on their own.
It prints one table (the run logs go to <out>/catalogue.log, the reports to
<out>/rep-N/<built-in>/) and writes JUnit XML.

Outcomes: pass, expected-fail, inconclusive, fail, error. Exit codes: 0 every
outcome as expected, 1 an unexpected outcome, 2 a usage error, a run that could
not be judged (error), or an interrupted catalogue.`,
		Example: `  seckill-harness catalogue                       # ~15 minutes
  seckill-harness catalogue --repeat 3 --stress   # three times, a busy loop per core
  seckill-harness catalogue --only smoke,sold-out-90,nightly-ci --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The runs get the flags `run NAME` has when none is given.
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			cmdline.ClusterFlags(fs, &o.Inputs.Cluster)
			o.Inputs.Given = fs.Changed
			o.Level, _ = cmdline.LevelOf(cmd)
			var out lifecycle.Output
			done, err := results.Open(cmd.Context(), &out, cmd.ErrOrStderr())
			defer done()
			if err != nil {
				return err
			}
			o.Results = out.Results
			return catalogue.RunGate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	cmdline.ResultsFlags(f, &results, cmdline.ResultsAppend)
	f.IntVar(&o.Repeat, "repeat", 1, "run the catalogue N times; the table says per built-in how many runs held (e.g. 3/3)")
	f.BoolVar(&o.Stress, "stress", false, "run it while a busy loop per core spins (child processes the harness ends by PID, on every way out)")
	f.StringVar(&o.Out, "out", "out/catalogue", "directory for the runs' reports (rep-N/<built-in>/), catalogue.log and junit.xml")
	f.StringVar(&o.JUnit, "junit", "", "JUnit XML file, one test case per built-in and run (default <out>/junit.xml)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object on stdout (rows, every run, verdict, exit code); the table goes to stderr")
	f.StringSliceVar(&o.Only, "only", nil, "run only these built-ins (comma-separated; a suite brings its members)")
	return cmd
}
