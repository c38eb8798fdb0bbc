package catalogue

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"seckill-harness/reports"
)

// Run is one scenario run as a Runner reports it.
type Run struct {
	Name string // the scenario (a suite member by its own name)
	Dir  string // where its reports are
	Wall time.Duration
	// Report is the run's report; nil when none was written.
	Report *reports.Report
	// Err is a harness error; nil when the run was judged, pass or fail.
	Err error
}

// Runner runs the built-in name the way `seckill-harness run NAME` does,
// with its reports under dir, and calls done once for every scenario run
// that ends (a suite: once per member, in order). Its error is the run's
// harness error, if any (failed checks are not errors: they are in the
// reports given to done).
type Runner func(ctx context.Context, name, dir string, done func(Run)) error

// Result is one row of one repetition.
type Result struct {
	Name     string  `json:"scenario"`
	Via      string  `json:"via,omitempty"` // the suite whose run gave the row
	Outcome  Outcome `json:"outcome"`
	Expected Outcome `json:"expected"`
	Held     bool    `json:"held"`
	WallS    float64 `json:"wall_s"`
	Check    string  `json:"check,omitempty"`  // the first failing check
	Detail   string  `json:"detail,omitempty"` // the first line of its detail
	Dir      string  `json:"dir,omitempty"`
}

// Options configure Execute.
type Options struct {
	Repeat int    // repetitions (at least 1)
	Dir    string // repetition i writes under Dir/rep-<i>/<built-in>
	Runner Runner
	// Progress gets one line per row as it is known; nil: none.
	Progress io.Writer
}

// Execute runs the schedule o.Repeat times and returns each repetition's
// rows in s.Entries order. When ctx ends it stops; the repetitions so far
// are returned (the cut one with "not run" rows) with ctx's error.
func Execute(ctx context.Context, s Schedule, o Options) ([][]Result, error) {
	if o.Repeat < 1 {
		o.Repeat = 1
	}
	var all [][]Result
	for i := 1; i <= o.Repeat; i++ {
		all = append(all, runOnce(ctx, s, o, i))
		if ctx.Err() != nil {
			return all, ctx.Err()
		}
	}
	return all, nil
}

// runOnce runs one repetition.
func runOnce(ctx context.Context, s Schedule, o Options, rep int) []Result {
	entries := map[string]Entry{}
	for _, e := range s.Entries {
		entries[e.Name] = e
	}
	got := map[string]Result{}
	put := func(r Result) {
		e := entries[r.Name]
		r.Expected = e.Expected()
		r.Held = Held(r.Outcome, r.Expected)
		got[r.Name] = r
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "catalogue: run %d: %s %s (expected %s) in %.1fs\n", rep, r.Name, r.Outcome, r.Expected, r.WallS)
		}
	}
	for _, name := range s.Runs {
		if ctx.Err() != nil {
			break
		}
		dir := filepath.Join(o.Dir, fmt.Sprintf("rep-%d", rep), name)
		t0 := time.Now()
		err := o.Runner(ctx, name, dir, func(r Run) {
			v := Classify(r.Report, r.Err)
			put(Result{Name: r.Name, Via: s.Via[r.Name], Outcome: v.Outcome, WallS: r.Wall.Seconds(), Check: v.Check, Detail: v.Detail, Dir: r.Dir})
		})
		wall := time.Since(t0)
		e := entries[name]
		if e.IsSuite() {
			for _, m := range e.Members {
				if _, ok := got[m]; !ok {
					put(notRun(ctx, m, s.Via[m], err))
				}
			}
			put(rollUp(e, got, wall, dir))
		} else if _, ok := got[name]; !ok {
			r := notRun(ctx, name, "", err)
			r.WallS = wall.Seconds()
			put(r)
		}
	}
	for _, su := range sortedKeys(s.Composed) {
		if _, ok := got[s.Composed[su]]; ok {
			put(rollUp(entries[su], got, 0, ""))
		}
	}
	out := make([]Result, 0, len(s.Entries))
	for _, e := range s.Entries {
		r, ok := got[e.Name]
		if !ok {
			r = notRun(ctx, e.Name, s.Via[e.Name], nil)
			r.Expected = e.Expected()
		}
		out = append(out, r)
	}
	return out
}

// notRun is the error row of a built-in that never reported: err is why
// (the runner's error, else ctx's).
func notRun(ctx context.Context, name, via string, err error) Result {
	why := "the runner reported no run"
	switch {
	case err != nil:
		why = firstLine(err.Error())
	case ctx.Err() != nil:
		why = "interrupted: " + ctx.Err().Error()
	}
	return Result{Name: name, Via: via, Outcome: Error, Check: "not run", Detail: why}
}

// rollUp is a suite's row from its members' rows: error or fail when a
// member did not hold (the first such member names the check), else
// inconclusive when a member was, else pass. wall 0: the members' sum.
func rollUp(su Entry, got map[string]Result, wall time.Duration, dir string) Result {
	r := Result{Name: su.Name, Outcome: Pass, WallS: wall.Seconds(), Dir: dir}
	var sum float64
	for _, m := range su.Members {
		mr := got[m]
		sum += mr.WallS
		switch {
		case !mr.Held && r.Check == "":
			r.Outcome, r.Check, r.Detail = Fail, m+": "+mr.Check, mr.Detail
			if mr.Outcome == Error {
				r.Outcome = Error
			}
		case mr.Outcome == Inconclusive && r.Outcome == Pass:
			r.Outcome = Inconclusive
		}
	}
	if wall == 0 {
		r.WallS = sum
	}
	return r
}
