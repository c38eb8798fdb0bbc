package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/runner/trend"
)

// newTrendCmd is `trend`: the nightly series with their change points (the
// logic is runner/trend's; docs/TRENDS.md).
func newTrendCmd() *cobra.Command {
	c := trend.Command{Options: trend.DefaultOptions}
	var series string
	var results cmdline.Results
	cmd := &cobra.Command{
		Use:   "trend",
		Short: "Judge each scenario's figures over the last nights: change points, verdicts, a table or an HTML page",
		Long: `trend reads nightly series (--series: a JSON array of series, docs/TRENDS.md),
finds the nights where a figure's level changed (E-divisive means with a
permutation test) and prints a text or Markdown table, or writes a
self-contained HTML page (--format html -o trend.html).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, closeSrc, err := results.TrendSource(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeSrc()
			switch {
			case series != "" && src != nil:
				return fmt.Errorf("--series and --results-history/--results-db: give one source of series")
			case series != "":
				c.Source = trend.FileSource(series)
			default:
				c.Source = src
			}
			return c.Run(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&series, "series", "", "JSON file of series ([]{scenario, figure, unit, points: [{at, value, verdict, run}]})")
	f.StringVar(&results.Dir, "results-history", "", "read the series from this results history directory (what 'run --results-history DIR' appends to)")
	f.StringVar(&results.DB, "results-db", "", "read the series from the results history in PostgreSQL (postgres://user@host:port/db)")
	f.IntVar(&c.Filter.Last, "last", 30, "the last N nights of each series (0: all)")
	f.StringVar(&c.Filter.Scenario, "scenario", "", "only this scenario")
	f.StringVar(&c.Filter.Figure, "figure", "", "only this figure")
	f.StringVar(&c.Format, "format", "text", "text, markdown or html")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(trend.Formats, cobra.ShellCompDirectiveNoFileComp))
	f.Float64Var(&c.Options.Alpha, "alpha", c.Options.Alpha, "significance level of a change point (permutation test p-value)")
	f.IntVar(&c.Options.MinSize, "min-nights", c.Options.MinSize, "fewest nights on either side of a change point")
	f.StringVarP(&c.Out, "output", "o", "", "write to this file (default: standard output)")
	return cmd
}
