package reports

import (
	"fmt"
	"io"
	"path/filepath"
)

// Rerender is `seckill-harness report DIR...`: it reads the runs saved in
// dirs (LoadRun) and renders them again. With one dir and out "" (or out
// naming that dir) the views are rewritten in place (WriteViews: its
// report.json is left as it is); with one dir and another out, or with
// several dirs merged (MergeRuns; out is then required), every artifact
// is written to out (WriteArtifacts). Notes (a run read from latency.hgrm,
// what the merge could not add up) go to notes; unless quiet the text
// summary goes to w, then the paths of report.html and summary.md. It
// returns the (merged) report, whose verdict the caller judges.
func Rerender(w, notes io.Writer, dirs []string, out string, quiet bool) (*Report, error) {
	if len(dirs) > 1 && out == "" {
		return nil, fmt.Errorf("--out is required to merge %d run directories", len(dirs))
	}
	runs := make([]*Run, 0, len(dirs))
	for _, d := range dirs {
		r, err := LoadRun(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	in, out, err := rerendered(notes, dirs, runs, out)
	if err != nil {
		return nil, err
	}
	if !quiet {
		if err := WriteText(w, in.Report); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(w, "html: %s\nsummary: %s\n", filepath.Join(out, HTMLFileName), filepath.Join(out, SummaryFile))
	return in.Report, nil
}

// rerendered writes the views of runs (one, or several merged) and
// returns what it rendered and the directory it wrote.
func rerendered(notes io.Writer, dirs []string, runs []*Run, out string) (*Inputs, string, error) {
	if len(runs) > 1 {
		rep, hists, merged, err := MergeRuns(runs)
		if err != nil {
			return nil, "", err
		}
		for _, n := range merged {
			fmt.Fprintln(notes, "merge:", n)
		}
		in := &Inputs{Report: rep, Hists: hists}
		return in, out, WriteArtifacts(out, in)
	}
	in := &Inputs{Report: runs[0].Report, Hists: runs[0].Hists}
	if runs[0].HistSource == HGRMFileName {
		fmt.Fprintf(notes, "%s: no %s, the latency distribution comes from %s\n", dirs[0], HlogFileName, HGRMFileName)
	}
	if out == "" || samePath(out, dirs[0]) {
		return in, dirs[0], WriteViews(dirs[0], in)
	}
	return in, out, WriteArtifacts(out, in)
}

// samePath reports whether a and b name the same directory (as absolute paths).
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}
