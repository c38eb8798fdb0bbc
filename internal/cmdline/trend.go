package cmdline

import (
	"fmt"

	"github.com/spf13/cobra"

	"seckill-harness/reports/trend"
)

// Trend are trend's flags: the source of the series (--series FILE, or
// the results history read with --results-history/--results-db), the
// filter, the format, the change-point options and the output file.
type Trend struct {
	c       trend.Command
	series  string
	results Results
}

// TrendFlags registers trend's flags on cmd (and --format's completion)
// and returns where they are read into.
func TrendFlags(cmd *cobra.Command) *Trend {
	t := &Trend{c: trend.Command{Options: trend.DefaultOptions}}
	c := &t.c
	f := cmd.Flags()
	f.StringVar(&t.series, "series", "", "JSON file of series ([]{scenario, figure, unit, points: [{at, value, verdict, run}]})")
	ResultsFlags(f, &t.results, ResultsRead)
	f.IntVar(&c.Filter.Last, "last", 30, "the last N nights of each series (0: all)")
	f.StringVar(&c.Filter.Scenario, "scenario", "", "only this scenario")
	f.StringVar(&c.Filter.Figure, "figure", "", "only this figure")
	f.StringVar(&c.Format, "format", "text", "text, markdown or html")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(trend.Formats, cobra.ShellCompDirectiveNoFileComp))
	f.Float64Var(&c.Options.Alpha, "alpha", c.Options.Alpha, "significance level of a change point (permutation test p-value)")
	f.IntVar(&c.Options.MinSize, "min-nights", c.Options.MinSize, "fewest nights on either side of a change point")
	f.StringVar(&c.OutDir, "out", "", "directory to write into, as trend.txt, trend.md or trend.html by --format (created if missing; default: standard output)")
	f.StringVarP(&c.Out, "output", "o", "", "the single-file form of --out: write to this file (default: standard output)")
	return t
}

// Run judges the series of the one source the flags name (both --series
// and the results history: an error) and prints the table on cmd's
// stdout or writes --out DIR / -o FILE (trend.Command.Run).
func (t *Trend) Run(cmd *cobra.Command) error {
	src, closeSrc, err := t.results.TrendSource(cmd.Context(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer closeSrc()
	switch {
	case t.series != "" && src != nil:
		return fmt.Errorf("--series and --results-history/--results-db: give one source of series")
	case t.series != "":
		t.c.Source = trend.FileSource(t.series)
	default:
		t.c.Source = src
	}
	return t.c.Run(cmd.OutOrStdout())
}
