package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
	"seckill-harness/reports/results"
)

// Judge maps an outcome to the exit contract (package exitcode): an
// interrupted load is a harness error (its Interrupted error), a failed
// check exitcode.ErrChecksFailed, a run whose only shortfall is
// inconclusive assertions exitcode.ErrInconclusive, a pass nil.
func Judge(oc *Result) error {
	if err := oc.Interrupted(); err != nil {
		return err
	}
	if oc.Inconclusive() {
		return exitcode.ErrInconclusive
	}
	if !oc.Report.Passed {
		return exitcode.ErrChecksFailed
	}
	return nil
}

// RunPlan executes p (Execute) and judges its outcome (Judge): nil only
// when the run completed and passed.
func RunPlan(ctx context.Context, p *Plan, out Output) error {
	oc, err := Execute(ctx, p, out)
	if err != nil {
		return err
	}
	return Judge(oc)
}

// A Suite is what one scenario argument runs: a suite's members' plans in
// turn under the suite's Name, or (Name "") the one plan of a scenario
// that is not a suite. Every plan is built and validated before the first
// runs (planner.BuildSuite).
type Suite struct {
	Name  string // the suite; "" for a single scenario
	Plans []*Plan
	// Skipped are the members that cannot run on the system under test
	// (a pipeline member on an adapter file): not run, not failed, listed
	// in the table and in <member>/junit.xml as skipped with the reason.
	Skipped []SkippedMember
}

// SkippedMember is a suite member that was not run, and why.
type SkippedMember struct{ Name, Reason string }

// MemberFunc is told of each suite member that ran: its name, reports
// directory, wall time and exit error (RunPlan's).
type MemberFunc func(name, dir string, wall time.Duration, err error)

// Run executes the suite. A single scenario runs into out.Dir and returns
// RunPlan's error; onMember is not called. A suite runs each member in
// turn (each on its own fresh cluster, reports in <out.Dir>/<member>/),
// calls onMember (when not nil) after each, prints the members' table to
// out.Log and returns the exit error of the worst member: a harness error,
// else a failure, else an inconclusive member, else nil. When ctx ends no
// further member starts and the error says the suite was interrupted.
func (s Suite) Run(ctx context.Context, out Output, onMember MemberFunc) error {
	if s.Name == "" && len(s.Plans) == 1 {
		return RunPlan(ctx, s.Plans[0], out)
	}
	var rows []suiteRow
	var worst error
	began := time.Now()
	for _, p := range s.Plans {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(out.Log, "\n##### %s (%d of %d in %s) #####\n", p.Name, len(rows)+1, len(s.Plans), s.Name)
		sub := out
		sub.Dir, sub.Suite = filepath.Join(out.Dir, p.Name), s.Name
		t0 := time.Now()
		err := RunPlan(ctx, p, sub)
		rows = append(rows, suiteRow{name: p.Name, dur: time.Since(t0), verdict: memberVerdict(err)})
		worst = worse(worst, err)
		if onMember != nil {
			onMember(p.Name, sub.Dir, rows[len(rows)-1].dur, err)
		}
	}
	for _, m := range s.Skipped {
		rows = append(rows, suiteRow{name: m.Name, verdict: "SKIPPED: " + m.Reason})
		if err := writeSkippedJUnit(filepath.Join(out.Dir, m.Name), s.Name, m); err != nil {
			worst = worse(worst, err)
		}
	}
	s.writeTable(out, rows)
	if ctx.Err() != nil {
		return fmt.Errorf("suite %s interrupted: %w", s.Name, ctx.Err())
	}
	s.record(ctx, out, began, rows, worst)
	return worst
}

// record appends the suite's own record to out.Results (each member's is
// appended by its run): its verdict, members and failed members.
func (s Suite) record(ctx context.Context, out Output, began time.Time, rows []suiteRow, worst error) {
	failed := 0
	for _, r := range rows {
		if r.verdict != "PASS" {
			failed++
		}
	}
	figs := map[string]float64{"members": float64(len(rows)), "failed_members": float64(failed), "wall_s": time.Since(began).Seconds()}
	r := results.Summary(results.KindSuite, s.Name, began, exitcode.Of(worst), figs)
	r.Run = out.Dir
	if err := results.Put(ctx, out.Results, r, out.ErrOut); err != nil {
		out.logger().Error("results history: the suite's record was not appended", "err", err)
	}
}

// suiteRow is one member in the suite's table.
type suiteRow struct {
	name, verdict string
	dur           time.Duration
}

// memberVerdict is a member's exit error as the table shows it.
func memberVerdict(err error) string {
	switch {
	case err == nil:
		return "PASS"
	case errors.Is(err, exitcode.ErrChecksFailed):
		return "FAIL"
	case errors.Is(err, exitcode.ErrInconclusive):
		return "INCONCLUSIVE"
	default:
		return "ERROR: " + err.Error()
	}
}

// worse is the worse of two exit errors: a harness error over a failure,
// a failure over an inconclusive run, anything over nil. Of two harness
// errors the later wins.
func worse(worst, err error) error {
	switch exitcode.Of(err) {
	case exitcode.Pass:
		return worst
	case exitcode.HarnessError:
		return err
	case exitcode.CheckFailed:
		if c := exitcode.Of(worst); c == exitcode.Pass || c == exitcode.Inconclusive {
			return err
		}
	case exitcode.Inconclusive:
		if worst == nil {
			return err
		}
	}
	return worst
}

// writeTable prints the members that ran: name, wall time, verdict, reports.
func (s Suite) writeTable(out Output, rows []suiteRow) {
	fmt.Fprintf(out.Log, "\nsuite %s:\n", s.Name)
	w := tabwriter.NewWriter(out.Log, 2, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(w, "  %s\t%.1fs\t%s\t%s\n", r.name, r.dur.Seconds(), r.verdict, filepath.Join(out.Dir, r.name))
	}
	w.Flush()
}

// writeSkippedJUnit writes dir/junit.xml with the member as one skipped
// case, so a CI job that collects every member's junit.xml sees it.
func writeSkippedJUnit(dir, suite string, m SkippedMember) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("suite %s, member %s: %w", suite, m.Name, err)
	}
	var buf bytes.Buffer
	c := reports.JUnitCase{Name: m.Name, Classname: suite, Skipped: m.Reason}
	if err := reports.WriteJUnitSuite(&buf, m.Name, time.Now(), map[string]string{"suite": suite}, []reports.JUnitCase{c}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "junit.xml"), buf.Bytes(), 0o644)
}
