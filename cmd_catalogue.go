package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"seckill-harness/reports"
	"seckill-harness/runner/catalogue"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

type catalogueOptions struct {
	repeat              int
	stress, json        bool
	out, junit, logPath string
	only                []string
}

func newCatalogueCmd() *cobra.Command {
	var o catalogueOptions
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
		RunE: func(cmd *cobra.Command, _ []string) error { return runCatalogue(cmd, o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.repeat, "repeat", 1, "run the catalogue N times; the table says per built-in how many runs held (e.g. 3/3)")
	f.BoolVar(&o.stress, "stress", false, "run it while a busy loop per core spins (child processes the harness ends by PID, on every way out)")
	f.StringVar(&o.out, "out", "out/catalogue", "directory for the runs' reports (rep-N/<built-in>/), catalogue.log and junit.xml")
	f.StringVar(&o.junit, "junit", "", "JUnit XML file, one test case per built-in and run (default <out>/junit.xml)")
	f.BoolVar(&o.json, "json", false, "print one JSON object on stdout (rows, every run, verdict, exit code); the table goes to stderr")
	f.StringSliceVar(&o.only, "only", nil, "run only these built-ins (comma-separated; a suite brings its members)")
	return cmd
}

// runCatalogue checks the flags, runs the catalogue and prints it.
func runCatalogue(cmd *cobra.Command, o catalogueOptions) error {
	if o.repeat < 1 {
		return fmt.Errorf("--repeat %d: want 1 or more", o.repeat)
	}
	entries, err := catalogue.Builtins()
	if err != nil {
		return err
	}
	sched, err := catalogue.Plan(entries, o.only)
	if err != nil {
		return err
	}
	if o.junit == "" {
		o.junit = filepath.Join(o.out, "junit.xml")
	}
	logf, err := catalogue.OpenOutput(o.out, o.junit)
	if err != nil {
		return err
	}
	defer logf.Close()
	ctx := cmd.Context()
	if o.stress {
		loops, err := catalogue.StartBusyLoops(ctx, runtime.NumCPU())
		if err != nil {
			return err
		}
		defer loops.Stop()
		fmt.Fprintf(cmd.ErrOrStderr(), "catalogue: busy loops running, PIDs %v\n", loops.PIDs())
	}
	started := time.Now()
	reps, runErr := catalogue.Execute(ctx, sched, catalogue.Options{Repeat: o.repeat, Dir: o.out,
		Runner: catalogueRunner(cmd, logf), Progress: cmd.ErrOrStderr()})
	rows := catalogue.Aggregate(reps)
	return reportCatalogue(cmd, o, sched.Header(o.repeat, o.stress), started, reps, rows, runErr)
}

// catalogueRunner runs a built-in through runScenario, with the flags
// `run NAME` has when none is given, its logs into log.
func catalogueRunner(cmd *cobra.Command, log io.Writer) catalogue.Runner {
	return func(ctx context.Context, name, dir string, done func(catalogue.Run)) error {
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		var in planner.Inputs
		addClusterFlags(fs, &in.Cluster)
		in.Given = fs.Changed
		s, err := planner.Resolve(ctx, name, nil, nil)
		if err != nil {
			return err
		}
		level, _ := logLevelOf(cmd)
		got := map[string]*reports.Report{}
		out := lifecycle.Output{Dir: dir, Progress: "off", ErrOut: log, Log: log,
			Logger:    slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: level})),
			OnOutcome: func(d string, oc *lifecycle.Result) { got[d] = oc.Report }}
		onMember := func(m, d string, wall time.Duration, err error) {
			done(catalogue.Run{Name: m, Dir: d, Wall: wall, Report: got[d], Err: harnessError(err)})
		}
		fmt.Fprintf(log, "\n===== catalogue: run %s into %s =====\n", name, dir)
		t0 := time.Now()
		err = harnessError(runScenario(ctx, s, in, out, onMember))
		if !s.IsSuite() {
			done(catalogue.Run{Name: name, Dir: dir, Wall: time.Since(t0), Report: got[dir], Err: err})
		}
		return err
	}
}

// harnessError drops errChecksFailed and errInconclusive: failed and
// inconclusive checks are in the report, which Classify reads.
func harnessError(err error) error {
	if errors.Is(err, errChecksFailed) || errors.Is(err, errInconclusive) {
		return nil
	}
	return err
}

// reportCatalogue prints the table (or the JSON object), writes the JUnit
// file and maps the rows to the exit contract.
func reportCatalogue(cmd *cobra.Command, o catalogueOptions, header string, started time.Time, reps [][]catalogue.Result, rows []catalogue.Row, runErr error) error {
	allHeld, anyError := catalogue.Gate(rows)
	var verdict error
	switch {
	case runErr != nil:
		verdict = fmt.Errorf("catalogue interrupted: %w", runErr)
	case anyError:
		verdict = fmt.Errorf("catalogue: a run could not be judged (outcome error in the table; its log is in %s)", filepath.Join(o.out, "catalogue.log"))
	case !allHeld:
		verdict = errChecksFailed
	}
	props := map[string]string{"repeat": fmt.Sprint(o.repeat), "stress": fmt.Sprint(o.stress), "header": header}
	if err := catalogue.WriteJUnitFile(o.junit, started, props, reps); err != nil {
		return err
	}
	if !o.json {
		return errors.Join(catalogue.WriteTable(cmd.OutOrStdout(), header, rows), verdict)
	}
	_ = catalogue.WriteTable(cmd.ErrOrStderr(), header, rows)
	code := map[bool]int{true: exitPass, false: exitCheckFailed}[allHeld]
	if runErr != nil || anyError {
		code = exitHarnessError
	}
	obj := catalogue.Summary{Header: header, Held: allHeld, ExitCode: code, ExitMeaning: exitMeanings[code],
		Repeat: o.repeat, Stress: o.stress, Out: o.out, JUnit: o.junit, Rows: rows, Runs: reps}
	return errors.Join(writeJSON(cmd.OutOrStdout(), obj), verdict)
}
