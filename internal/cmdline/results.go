package cmdline

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"seckill-harness/reports/results"
	"seckill-harness/reports/trend"
	"seckill-harness/runner/lifecycle"
)

// Results are the results-history flags (reports/results): where a
// command appends its record (--results-history DIR, --results-db URL)
// and, for run, the history it is judged against (--baseline HISTORY).
type Results struct {
	Dir, DB  string
	Baseline string
}

// ResultsUse is what a command does with the results history: append its
// record (ResultsAppend), append it and be judged against a history
// (ResultsBaseline, run), or read the series from it (ResultsRead, trend).
type ResultsUse int

// The uses of the results history, for ResultsFlags.
const (
	ResultsAppend ResultsUse = iota
	ResultsBaseline
	ResultsRead
)

// ResultsFlags registers --results-history and --results-db on f into r,
// their help saying what use makes of them, and with ResultsBaseline
// --baseline too (run).
func ResultsFlags(f *pflag.FlagSet, r *Results, use ResultsUse) {
	if use == ResultsRead {
		f.StringVar(&r.Dir, "results-history", "", "read the series from this results history directory (what 'run --results-history DIR' appends to)")
		f.StringVar(&r.DB, "results-db", "", "read the series from the results history in PostgreSQL (postgres://user@host:port/db)")
		return
	}
	f.StringVar(&r.Dir, "results-history", "", "append this command's record (scenario, its content hash, the system under test, harness, machine, verdict, figures, per-second samples) to the results history in this directory: one JSON-lines file per scenario, the newest 400 records each (see docs/TRENDS.md: Nightly results)")
	f.StringVar(&r.DB, "results-db", "", "append the record to PostgreSQL instead: postgres://user@host:port/db (password from PGPASSWORD or ~/.pgpass); table "+results.Table+", created if missing")
	if use == ResultsBaseline {
		f.StringVar(&r.Baseline, "baseline", "", "judge the run against the results history HISTORY (a --results-history directory or a postgres:// URL): the same scenario and content hash on machines with the same cores, the newest 14 runs; a regression beyond the scenario's regressions: (default p99 20%, throughput 10%) with Mann-Whitney p < 0.01 on the per-second samples fails the run (exit 1); fewer than 5 such runs: says so, does not fail")
	}
}

// Open opens the stores the flags name into out (Results, Baseline),
// with warnings (a skipped corrupt entry) printed to warn. The returned
// func closes them. An unusable store is an error naming the flag (exit 2).
func (r *Results) Open(ctx context.Context, out *lifecycle.Output, warn io.Writer) (closeAll func(), err error) {
	var opened []results.Store
	closeAll = func() {
		for _, s := range opened {
			_ = s.Close()
		}
	}
	w := func(msg string) { fmt.Fprintf(warn, "warning: results history: %s\n", msg) }
	if r.Dir != "" || r.DB != "" {
		st, err := results.Open(ctx, results.Options{Dir: r.Dir, DBURL: r.DB, Warn: w})
		if err != nil {
			return closeAll, err
		}
		opened, out.Results = append(opened, st), st
	}
	if r.Baseline != "" {
		o := results.Options{Dir: r.Baseline, Warn: w}
		if strings.HasPrefix(r.Baseline, "postgres://") || strings.HasPrefix(r.Baseline, "postgresql://") {
			o = results.Options{DBURL: r.Baseline, Warn: w}
		}
		st, err := results.Open(ctx, o)
		if err != nil {
			return closeAll, fmt.Errorf("--baseline: %w", err)
		}
		opened, out.Baseline = append(opened, st), st
	}
	return closeAll, nil
}

// TrendSource is trend's source over the results history the flags name
// (--results-history DIR or --results-db URL; nil when neither is given).
// It only reads: a directory that does not exist is an error naming the
// flag, not an empty history created on the way.
func (r *Results) TrendSource(ctx context.Context, warn io.Writer) (trend.Source, func(), error) {
	if r.Dir == "" && r.DB == "" {
		return nil, func() {}, nil
	}
	if r.DB == "" {
		if st, err := os.Stat(r.Dir); err != nil || !st.IsDir() {
			return nil, func() {}, fmt.Errorf("--results-history %s: no results history there: give the directory a nightly job appends to with 'run --results-history DIR'", r.Dir)
		}
	}
	w := func(msg string) { fmt.Fprintf(warn, "warning: results history: %s\n", msg) }
	st, err := results.Open(ctx, results.Options{Dir: r.Dir, DBURL: r.DB, Warn: w})
	if err != nil {
		return nil, func() {}, err
	}
	return results.Source(ctx, st), func() { _ = st.Close() }, nil
}
