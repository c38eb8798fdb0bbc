package catalogue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"time"

	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
	"seckill-harness/reports/results"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

// Settings are what `seckill-harness catalogue` was asked for.
type Settings struct {
	Repeat int      // repetitions (1 or more)
	Stress bool     // a busy loop per core while it runs
	JSON   bool     // one Summary object on stdout, the table on stderr
	Out    string   // rep-N/<built-in>/, catalogue.log, junit.xml
	JUnit  string   // the JUnit file ("": <Out>/junit.xml)
	Only   []string // these built-ins only (a suite brings its members)
	// Inputs are the run flags' defaults, as `run NAME` has them when none is given.
	Inputs planner.Inputs
	Level  slog.Level // the runs' log records at this level and above go to catalogue.log
	// Results, when set, is the results history every run (and suite)
	// appends its record to (--results-history, --results-db).
	Results results.Store
}

// RunGate runs the catalogue as the command does: it checks the settings
// and the output paths before anything runs (a usage error names the
// flag), runs every selected built-in Repeat times through ScenarioRunner
// (with busy loops when Stress), writes the JUnit file, and prints the
// table to stdout (with JSON: the Summary to stdout, the table to
// stderr). It returns nil when every outcome was as expected,
// exitcode.ErrChecksFailed when one was not, and a harness error when a
// run could not be judged or the catalogue was interrupted.
func RunGate(ctx context.Context, stdout, stderr io.Writer, st Settings) error {
	if st.Repeat < 1 {
		return fmt.Errorf("--repeat %d: want 1 or more", st.Repeat)
	}
	entries, err := Builtins()
	if err != nil {
		return err
	}
	sched, err := Plan(entries, st.Only)
	if err != nil {
		return err
	}
	if st.JUnit == "" {
		st.JUnit = filepath.Join(st.Out, "junit.xml")
	}
	logf, err := OpenOutput(st.Out, st.JUnit)
	if err != nil {
		return err
	}
	defer logf.Close()
	if st.Stress {
		loops, err := StartBusyLoops(ctx, runtime.NumCPU())
		if err != nil {
			return err
		}
		defer loops.Stop()
		fmt.Fprintf(stderr, "catalogue: busy loops running, PIDs %v\n", loops.PIDs())
	}
	started := time.Now()
	reps, runErr := Execute(ctx, sched, Options{Repeat: st.Repeat, Dir: st.Out,
		Runner: ScenarioRunner(st.Inputs, logf, st.Level, st.Results), Progress: stderr})
	return st.report(stdout, stderr, sched.Header(st.Repeat, st.Stress), started, reps, runErr)
}

// ScenarioRunner runs a built-in as `seckill-harness run NAME` does
// (planner.BuildSuite with in, then lifecycle.Suite.Run), with progress
// off and its output and its log records at level and above into log;
// with results (nil: none) each run appends its record there.
func ScenarioRunner(in planner.Inputs, log io.Writer, level slog.Level, results results.Store) Runner {
	return func(ctx context.Context, name, dir string, done func(Run)) error {
		s, err := planner.Resolve(ctx, name, nil, nil)
		if err != nil {
			return err
		}
		got := map[string]*reports.Report{}
		out := lifecycle.Output{Dir: dir, Progress: "off", ErrOut: log, Log: log,
			Logger:    slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: level})),
			OnOutcome: func(d string, oc *lifecycle.Result) { got[d] = oc.Report }, Results: results}
		onMember := func(m, d string, wall time.Duration, err error) {
			done(Run{Name: m, Dir: d, Wall: wall, Report: got[d], Err: exitcode.Judged(err)})
		}
		fmt.Fprintf(log, "\n===== catalogue: run %s into %s =====\n", name, dir)
		t0 := time.Now()
		su, err := planner.BuildSuite(s, in)
		if err == nil {
			err = su.Run(ctx, out, onMember)
		}
		err = exitcode.Judged(err)
		if !s.IsSuite() {
			done(Run{Name: name, Dir: dir, Wall: time.Since(t0), Report: got[dir], Err: err})
		}
		return err
	}
}

// report prints the table (or the JSON object), writes the JUnit file and
// maps the rows to the exit contract.
func (st Settings) report(stdout, stderr io.Writer, header string, started time.Time, reps [][]Result, runErr error) error {
	rows := Aggregate(reps)
	allHeld, anyError := Gate(rows)
	var verdict error
	switch {
	case runErr != nil:
		verdict = fmt.Errorf("catalogue interrupted: %w", runErr)
	case anyError:
		verdict = fmt.Errorf("catalogue: a run could not be judged (outcome error in the table; its log is in %s)", filepath.Join(st.Out, "catalogue.log"))
	case !allHeld:
		verdict = exitcode.ErrChecksFailed
	}
	props := map[string]string{"repeat": fmt.Sprint(st.Repeat), "stress": fmt.Sprint(st.Stress), "header": header}
	if err := WriteJUnitFile(st.JUnit, started, props, reps); err != nil {
		return err
	}
	if !st.JSON {
		return errors.Join(WriteTable(stdout, header, rows), verdict)
	}
	_ = WriteTable(stderr, header, rows)
	code := exitcode.Of(verdict)
	obj := Summary{Header: header, Held: allHeld, ExitCode: code, ExitMeaning: exitcode.Meaning(code),
		Repeat: st.Repeat, Stress: st.Stress, Out: st.Out, JUnit: st.JUnit, Rows: rows, Runs: reps}
	enc := json.NewEncoder(stdout) // one Write, as MarshalIndent and a newline
	enc.SetIndent("", "  ")
	return errors.Join(enc.Encode(obj), verdict)
}
