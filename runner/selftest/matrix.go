package selftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"seckill-harness/checks"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/sut/badpaths"
)

// Env is what the matrix runs on: a stand on a cluster the caller owns (the
// matrix writes activities into it and does not tear them down), whose
// client dials through the stand's Proxies when a load injects a fault.
// Every run's plan is built by planner.Build on this stand.
type Env struct {
	Stand  *lifecycle.Stand
	Secret []byte    // keys the reservation ids
	Log    io.Writer // one progress line per run; nil: silent
}

// MatrixOptions choose what the matrix runs.
type MatrixOptions struct {
	Runs  int      // runs per (path, load); <= 0 means 3
	Only  []string // bad paths to run (empty: all); the reference runs under their loads
	Seed  int64    // run r uses Seed+r
	Quick bool     // shorter loads (tests)
	// Paths are the bad paths to choose from, in the matrix's order; nil:
	// the registry (badpaths.All). A test adds a path of its own here.
	Paths []badpaths.Info
}

// RunResult is one run of one path under one load.
type RunResult struct {
	Run         int               `json:"run"`
	Seed        int64             `json:"seed"`
	Activity    string            `json:"activity"`
	Ops         int               `json:"ops"`
	Outcomes    map[string]int    `json:"outcomes"`
	LostReplies int               `json:"lost_replies"`       // operations with a send whose reply was lost
	Failed      []string          `json:"failed"`             // invariants that failed
	Details     map[string]string `json:"details,omitempty"`  // detail of each failed invariant
	Evidence    map[string]any    `json:"evidence,omitempty"` // evidence of each failed invariant
	Caught      bool              `json:"caught"`             // bad path: an expected invariant failed
	Passed      bool              `json:"passed"`             // no invariant failed
	Pipeline    map[string]any    `json:"pipeline,omitempty"` // with a pipeline load: its counters (pipeline.Evidence.Summary)
	Seconds     float64           `json:"seconds"`
}

// Row is one path under one load.
type Row struct {
	Path        string      `json:"path"`
	Reference   bool        `json:"reference"`
	Load        string      `json:"load,omitempty"`
	Expect      []string    `json:"expect,omitempty"`
	Description string      `json:"description,omitempty"`
	Why         string      `json:"why,omitempty"`
	Pending     string      `json:"pending,omitempty"`
	Runs        []RunResult `json:"runs,omitempty"`
	// Good counts the runs that went as they must: for a bad path, caught by
	// an expected invariant; for the reference, passed.
	Good   int            `json:"good"`
	Failed map[string]int `json:"failed_counts,omitempty"` // invariant -> runs it failed in
	OK     bool           `json:"ok"`
}

// Matrix is the whole self-test.
type Matrix struct {
	RunsPerCell int             `json:"runs_per_cell"`
	Seed        int64           `json:"seed"`
	Rows        []Row           `json:"rows"`
	Loads       []badpaths.Load `json:"loads"`
	OK          bool            `json:"ok"`
	Seconds     float64         `json:"seconds"`
}

// RunMatrix runs every selected bad path `Runs` times under the load that
// exposes it, and the reference path `Runs` times under each of those loads;
// each run on a fresh activity, checked with runner.Verify. The Matrix says
// whether every runnable bad path was caught in every run by one of its
// expected invariants and the reference passed every run (Matrix.OK). An
// error means the self-test itself could not run (bad option, a fault that
// did not inject, state that could not be read back).
func RunMatrix(ctx context.Context, env Env, opts MatrixOptions) (*Matrix, error) {
	t0 := time.Now()
	if opts.Runs <= 0 {
		opts.Runs = 3
	}
	if opts.Paths == nil {
		opts.Paths = badpaths.All()
	}
	if err := badpaths.Validate(); err != nil {
		return nil, err
	}
	selected, err := selectPaths(opts.Paths, opts.Only)
	if err != nil {
		return nil, err
	}
	m := &Matrix{RunsPerCell: opts.Runs, Seed: opts.Seed}
	loads, byLoad, err := groupByLoad(ctx, env, opts, selected, m)
	if err != nil {
		return nil, err
	}
	var bad, ref []Row
	for _, ln := range badpaths.LoadNames() {
		l, used := loads[ln]
		if !used {
			continue
		}
		m.Loads = append(m.Loads, l)
		for _, info := range byLoad[ln] {
			row, err := runBadPathRow(ctx, env, opts, info, l)
			if err != nil {
				return nil, err
			}
			bad = append(bad, row)
		}
		for _, r := range referencesOf(byLoad[ln]) {
			row, err := runReferenceRow(ctx, env, opts, r, l)
			if err != nil {
				return nil, err
			}
			ref = append(ref, row)
		}
	}
	m.finish(opts.Paths, bad, ref)
	m.Seconds = time.Since(t0).Seconds()
	return m, nil
}

// groupByLoad puts a row for each pending path of selected on m and
// groups the runnable ones by the load that exposes them. Before any run
// starts, it builds the plan of each (path, load) and of the reference
// under each load, so that a load the planner refuses, or one this stand
// cannot run, is an error at once.
func groupByLoad(ctx context.Context, env Env, opts MatrixOptions, selected []badpaths.Info, m *Matrix) (map[string]badpaths.Load, map[string][]badpaths.Info, error) {
	loads := map[string]badpaths.Load{}
	byLoad := map[string][]badpaths.Info{}
	for _, info := range selected {
		if !info.Runnable() {
			m.Rows = append(m.Rows, Row{Path: info.Name, Expect: info.Expect, Description: info.Description, Why: info.Why, Pending: info.Pending})
			continue
		}
		l, ok := badpaths.GetLoad(info.Load, opts.Quick)
		if !ok {
			return nil, nil, fmt.Errorf("selftest: %s names unknown load %q", info.Name, info.Load)
		}
		if l.Fault != "" && env.Stand.Proxies == nil {
			return nil, nil, fmt.Errorf("selftest: %s needs the %s load, which injects %s: the cluster needs proxies", info.Name, l.Name, l.Fault)
		}
		if info.PipelineDefect != "" && l.Pipeline == nil {
			return nil, nil, fmt.Errorf("selftest: %s is a pipeline defect but its load %s runs no pipeline", info.Name, l.Name)
		}
		for _, who := range []badpaths.Info{info, referenceOf(info)} {
			if _, err := plan(ctx, env, who, l, opts.Seed); err != nil {
				return nil, nil, fmt.Errorf("%s under %s: %w", who.Name, l.Name, err)
			}
		}
		loads[l.Name] = l
		byLoad[l.Name] = append(byLoad[l.Name], info)
	}
	return loads, byLoad, nil
}

// runBadPathRow runs the bad path info opts.Runs times under load l (run r
// with seed opts.Seed+r) and returns its row: a run is good when one of
// the path's expected invariants failed (caught).
func runBadPathRow(ctx context.Context, env Env, opts MatrixOptions, info badpaths.Info, l badpaths.Load) (Row, error) {
	row := Row{Path: info.Name, Load: l.Name, Expect: info.Expect, Description: info.Description, Why: info.Why}
	for r := 0; r < opts.Runs; r++ {
		res, err := runOne(ctx, env, info, l, opts.Seed+int64(r), r+1)
		if err != nil {
			return Row{}, fmt.Errorf("%s under %s, run %d: %w", info.Name, l.Name, r+1, err)
		}
		res.Caught = intersects(res.Failed, info.Expect)
		row.add(res, res.Caught)
		logRun(env.Log, info.Name, l.Name, opts.Runs, res, res.Caught, "caught", "NOT CAUGHT")
	}
	return row, nil
}

// referenceOf is the control of bad path info: its Reference (the
// reference service for a service row), else the reference path.
func referenceOf(info badpaths.Info) badpaths.Info {
	if info.Reference != nil {
		return *info.Reference
	}
	return reference
}

// referencesOf are the distinct controls of paths, in their order: the
// reference rows of one load.
func referencesOf(paths []badpaths.Info) []badpaths.Info {
	var out []badpaths.Info
	seen := map[string]bool{}
	for _, p := range paths {
		if r := referenceOf(p); !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	return out
}

// runReferenceRow runs the control ref (the reference path, or another
// Reference of the registry) opts.Runs times under load l (run r with seed
// opts.Seed+r) and returns its row: a run is good when it passed.
func runReferenceRow(ctx context.Context, env Env, opts MatrixOptions, ref badpaths.Info, l badpaths.Load) (Row, error) {
	row := Row{Path: ref.Name, Reference: true, Load: l.Name, Description: ref.Description}
	for r := 0; r < opts.Runs; r++ {
		res, err := runOne(ctx, env, ref, l, opts.Seed+int64(r), r+1)
		if err != nil {
			return Row{}, fmt.Errorf("%s under %s, run %d: %w", ref.Name, l.Name, r+1, err)
		}
		row.add(res, res.Passed)
		logRun(env.Log, ref.Name, l.Name, opts.Runs, res, res.Passed, "passed", "FAILED")
	}
	return row, nil
}

// finish orders the rows (the bad paths, pending ones included, in
// the order of paths, then the reference rows) and sets each row's OK
// (pending, or every run good) and the matrix's (every row OK).
func (m *Matrix) finish(paths []badpaths.Info, bad, ref []Row) {
	order := map[string]int{}
	for i, p := range paths {
		order[p.Name] = i
	}
	m.Rows = append(m.Rows, bad...)
	sort.SliceStable(m.Rows, func(i, j int) bool { return order[m.Rows[i].Path] < order[m.Rows[j].Path] })
	m.Rows = append(m.Rows, ref...)
	m.OK = true
	for i := range m.Rows {
		r := &m.Rows[i]
		r.OK = r.Pending != "" || r.Good == len(r.Runs)
		if !r.OK {
			m.OK = false
		}
	}
}

func (r *Row) add(res RunResult, good bool) {
	r.Runs = append(r.Runs, res)
	if good {
		r.Good++
	}
	for _, id := range res.Failed {
		if r.Failed == nil {
			r.Failed = map[string]int{}
		}
		r.Failed[id]++
	}
}

// selectPaths returns the paths named in only (all of them when only is
// empty), in the order of paths.
func selectPaths(paths []badpaths.Info, only []string) ([]badpaths.Info, error) {
	if len(only) == 0 {
		return paths, nil
	}
	var names []string
	known := map[string]bool{}
	for _, p := range paths {
		names = append(names, p.Name)
		known[p.Name] = true
	}
	want := map[string]bool{}
	for _, n := range only {
		if !known[n] {
			return nil, fmt.Errorf("unknown bad path %q; valid: %s", n, strings.Join(names, ", "))
		}
		want[n] = true
	}
	var out []badpaths.Info
	for _, p := range paths {
		if want[p.Name] {
			out = append(out, p)
		}
	}
	return out, nil
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func logRun(w io.Writer, path, load string, runs int, res RunResult, good bool, yes, no string) {
	if w == nil {
		return
	}
	verdict := yes
	if !good {
		verdict = no
	}
	failed := "none"
	if len(res.Failed) > 0 {
		failed = strings.Join(res.Failed, ",")
	}
	extra := ""
	if res.LostReplies > 0 {
		extra = fmt.Sprintf(", %d lost replies", res.LostReplies)
	}
	fmt.Fprintf(w, "  %-31s %-18s run %d/%d: %-10s failed: %-8s (%d ops%s, %.1fs)\n",
		path, load, res.Run, runs, verdict, failed, res.Ops, extra, res.Seconds)
}

// runOne runs path info (reference: the reference) under load l on a
// fresh activity through the run lifecycle, on the matrix's stand,
// writing no files; its plan is built by the planner (plan). When l runs
// the pipeline, it runs beside the load with the path's defects on (none:
// the correct pipeline), is drained after it, and the pipeline checks are
// judged with the core ones (which then count the pipeline's releases). A
// fault that did not happen or did not heal is an error: the self-test
// itself could not run. So is a fault that took effect only after the
// load ended (errMissedLoad), but such a run is made again, on a fresh
// activity, up to missedAttempts times.
func runOne(ctx context.Context, env Env, info badpaths.Info, l badpaths.Load, seed int64, run int) (RunResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := runOnce(ctx, env, info, l, seed, run)
		if !errors.Is(err, errMissedLoad) || attempt == missedAttempts || ctx.Err() != nil {
			return res, err
		}
		if env.Log != nil {
			fmt.Fprintf(env.Log, "  %s under %s, run %d: %v: made again (attempt %d of %d)\n", info.Name, l.Name, run, err, attempt+1, missedAttempts)
		}
	}
}

// runOnce is one attempt of runOne.
func runOnce(ctx context.Context, env Env, info badpaths.Info, l badpaths.Load, seed int64, run int) (RunResult, error) {
	t0 := time.Now()
	p, err := plan(ctx, env, info, l, seed)
	if err != nil {
		return RunResult{}, err
	}
	oc, err := lifecycle.Execute(ctx, p, lifecycle.Output{})
	if err != nil {
		return RunResult{}, err
	}
	if err := oc.Interrupted(); err != nil {
		return RunResult{}, err
	}
	if oc.HealErr != nil || oc.HealthErr != nil {
		return RunResult{}, fmt.Errorf("heal %s: %w", l.Fault, errors.Join(oc.HealErr, oc.HealthErr))
	}
	if len(oc.NotInjected) > 0 {
		return RunResult{}, fmt.Errorf("fault did not happen: %s", strings.Join(oc.NotInjected, "; "))
	}
	if err := faultAfterLoad(p.Faults, p.Duration()); err != nil {
		return RunResult{}, err
	}
	res, chk := oc.Result, oc.Checks
	out := RunResult{Run: run, Seed: seed, Activity: oc.Activity.ID, Ops: res.History.Len(), Outcomes: map[string]int{},
		Failed: chk.Failed(), Passed: chk.Passed()}
	if oc.Pipeline != nil {
		out.Pipeline = oc.Pipeline.Summary()
	}
	for _, o := range res.History.All() {
		out.Outcomes[o.Kind.String()+":"+o.OutcomeName()]++
		if o.HadUnknown() {
			out.LostReplies++
		}
	}
	for _, c := range chk.Checks {
		if c.Status == checks.StatusFail {
			if out.Details == nil {
				out.Details, out.Evidence = map[string]string{}, map[string]any{}
			}
			out.Details[c.ID], out.Evidence[c.ID] = c.Detail, c.Evidence
		}
	}
	if out.Failed == nil {
		out.Failed = []string{}
	}
	out.Seconds = time.Since(t0).Seconds()
	return out, nil
}

// WriteText prints the matrix: one line per path and load, the loads, and the verdict.
func (m *Matrix) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PATH\tLOAD\tEXPECTED\tRESULT\tINVARIANTS THAT FAILED (runs)\n")
	for _, r := range m.Rows {
		exp := strings.Join(r.Expect, " or ")
		if r.Reference {
			exp = "none fails"
		}
		load := r.Load
		if load == "" {
			load = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Path, load, exp, r.resultText(), r.failedText())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nloads:")
	for _, l := range m.Loads {
		fmt.Fprintf(w, "  %-18s %s\n", l.Name, l.Description)
	}
	if notes := m.failureNotes(); len(notes) > 0 {
		fmt.Fprintln(w, "\nfailures:")
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
	runnable, pending := 0, 0
	for _, r := range m.Rows {
		switch {
		case r.Pending != "":
			pending++
		case !r.Reference:
			runnable++
		}
	}
	verdict := "PASS: every runnable bad path was caught in every run by an expected invariant, and the reference passed every run"
	if !m.OK {
		verdict = "FAIL: a bad path went uncaught or the reference failed (see above)"
	}
	_, err := fmt.Fprintf(w, "\n%s (%d bad paths run, %d pending, %d runs each, %.1fs)\n", verdict, runnable, pending, m.RunsPerCell, m.Seconds)
	return err
}

// resultText is the row's RESULT cell: "pending", or the good runs out of
// all ("passed" for the reference, "caught" for a bad path), with " FAIL"
// when the row is not OK.
func (r Row) resultText() string {
	var result string
	switch {
	case r.Pending != "":
		result = "pending"
	case r.Reference:
		result = fmt.Sprintf("passed %d/%d", r.Good, len(r.Runs))
	default:
		result = fmt.Sprintf("caught %d/%d", r.Good, len(r.Runs))
	}
	if r.Pending == "" && !r.OK {
		result += " FAIL"
	}
	return result
}

// failedText is the row's last cell: why it is pending, or each invariant
// that failed with the runs it failed in (by id), or "-".
func (r Row) failedText() string {
	failed := "-"
	if r.Pending != "" {
		failed = r.Pending
	} else if len(r.Failed) > 0 {
		var ids []string
		for id := range r.Failed {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%s %d/%d", id, r.Failed[id], len(r.Runs)))
		}
		failed = strings.Join(parts, ", ")
	}
	return failed
}

// failureNotes says what went wrong, run by run, where something did: each
// invariant a reference run failed, each run a bad path went uncaught.
func (m *Matrix) failureNotes() []string {
	var notes []string
	for _, r := range m.Rows {
		if r.Pending != "" || r.OK {
			continue
		}
		for _, run := range r.Runs {
			if (r.Reference && run.Passed) || (!r.Reference && run.Caught) {
				continue
			}
			if r.Reference {
				for _, id := range run.Failed {
					notes = append(notes, fmt.Sprintf("%s under %s, run %d (activity %s): %s failed: %s", r.Path, r.Load, run.Run, run.Activity, id, run.Details[id]))
				}
			} else {
				notes = append(notes, fmt.Sprintf("%s under %s, run %d (activity %s): not caught by %s; failed: %v; outcomes %v",
					r.Path, r.Load, run.Run, run.Activity, strings.Join(r.Expect, "/"), run.Failed, run.Outcomes))
			}
		}
	}
	return notes
}

// Failed lists the rows that are not OK (for messages).
func (m *Matrix) Failed() error {
	var errs []error
	for _, r := range m.Rows {
		if !r.OK {
			errs = append(errs, fmt.Errorf("%s under %s: %d/%d good runs", r.Path, r.Load, r.Good, len(r.Runs)))
		}
	}
	return errors.Join(errs...)
}
