package explore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
	"seckill-harness/reports/results"
)

// write writes summary.json, summary.txt and junit.xml to dir.
func (s *Summary) write(dir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := reports.WriteFileAtomic(filepath.Join(dir, "summary.json"), append(data, '\n')); err != nil {
		return err
	}
	var txt bytes.Buffer
	if err := s.WriteText(&txt); err != nil {
		return err
	}
	if err := reports.WriteFileAtomic(filepath.Join(dir, "summary.txt"), txt.Bytes()); err != nil {
		return err
	}
	return reports.WriteFileAtomicFunc(filepath.Join(dir, "junit.xml"), s.WriteJUnit)
}

// WriteText prints the summary: one line per run, the faults tried, the
// findings with their minimal reproducers, and the coverage.
func (s *Summary) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\nexplore seed %d, path %s: %d run(s) in %.1fs; stopped: %s\n", s.Seed, s.Path, len(s.Runs), s.Seconds, s.Stopped)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tVERDICT\tFAULTS\tLOAD\tSECONDS\tFAILED")
	for _, r := range s.Runs {
		what := strings.Join(r.Failed, ",")
		if r.Error != "" {
			what = r.Error
		}
		fmt.Fprintf(tw, "%03d\t%s\t%s\t%s\t%.1f\t%s\n", r.N, r.Verdict, strings.Join(r.Faults, " + "), r.Load, r.Seconds, what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	kinds := make([]string, 0, len(s.FaultsTried))
	for k := range s.FaultsTried {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var tried []string
	for _, k := range kinds {
		tried = append(tried, fmt.Sprintf("%s %d", k, s.FaultsTried[k]))
	}
	fmt.Fprintf(w, "faults tried (runs): %s\n", strings.Join(tried, ", "))
	if len(s.Findings) == 0 {
		fmt.Fprintln(w, "findings: none")
	}
	for _, f := range s.Findings {
		fmt.Fprintf(w, "FINDING %s in run %03d after %.1fs: %s\n", f.Invariant, f.Run, f.TimeToFindS, f.Detail)
		fmt.Fprintf(w, "  original: %s\n", f.Original)
		if f.Shrink != nil {
			fmt.Fprintf(w, "  minimal:  %s (shrunk in %.1fs, %d tries)\n", f.MinimalSize, f.ShrinkS, len(f.Shrink.Steps))
		} else {
			fmt.Fprintf(w, "  minimal:  not shrunk (--shrink-budget 0)\n")
		}
		fmt.Fprintf(w, "  faults:   %s\n", strings.Join(f.MinimalFaults, " + "))
		fmt.Fprintf(w, "  reproduces %s\n", f.Reproduces)
		fmt.Fprintf(w, "  scenario: %s\n  re-run:   %s\n", f.Minimal, f.Command)
	}
	if s.Coverage != nil {
		return s.Coverage.WriteText(w, s.Drawable)
	}
	return nil
}

// WriteJUnit writes one test case per run (a finding fails it, a harness
// error too; warnings go to its output) and one per finding's confirmations.
func (s *Summary) WriteJUnit(w io.Writer) error {
	name := fmt.Sprintf("explore seed %d (%s)", s.Seed, s.Path)
	var cases []reports.JUnitCase
	for _, r := range s.Runs {
		c := reports.JUnitCase{Name: fmt.Sprintf("run-%03d %s", r.N, strings.Join(r.Faults, " + ")), Classname: "explore.runs", Seconds: r.Seconds,
			Output: fmt.Sprintf("load %s; report %s", r.Load, r.Dir)}
		switch r.Verdict {
		case VerdictFinding:
			c.Failure = strings.Join(r.Failed, ", ") + " failed"
			c.FailureBody = strings.Join(r.Details, "\n")
		case VerdictError:
			c.Failure, c.FailureBody = "harness error", r.Error
		case VerdictWarning:
			c.Output += "\nwarnings: " + strings.Join(r.Warnings, "; ")
		}
		cases = append(cases, c)
	}
	for _, f := range s.Findings {
		c := reports.JUnitCase{Name: fmt.Sprintf("finding %s (run %03d) minimal reproducer", f.Invariant, f.Run), Classname: "explore.findings",
			Seconds: f.ShrinkS, Failure: fmt.Sprintf("%s fails; minimal scenario reproduces %s", f.Invariant, f.Reproduces),
			FailureBody: fmt.Sprintf("%s\nminimal: %s\nfaults: %s\nre-run: %s", f.Detail, f.MinimalSize, strings.Join(f.MinimalFaults, " + "), f.Command)}
		cases = append(cases, c)
	}
	props := map[string]string{"seed": fmt.Sprint(s.Seed), "path": s.Path, "budget": s.Budget, "runs": fmt.Sprint(len(s.Runs)),
		"findings": fmt.Sprint(len(s.Findings)), "stopped": s.Stopped}
	return reports.WriteJUnitSuite(w, name, s.StartedAt, props, cases)
}

// Record is the exploration's results-history record: its schedules run,
// findings and wall time; exit 1 with a finding.
func (s *Summary) Record(out string) results.Record {
	exit := exitcode.Pass
	if len(s.Findings) > 0 {
		exit = exitcode.CheckFailed
	}
	r := results.Summary(results.KindExplore, "explore", s.StartedAt, exit,
		map[string]float64{"runs": float64(len(s.Runs)), "findings": float64(len(s.Findings)), "wall_s": s.Seconds})
	r.Run = out
	return r
}
