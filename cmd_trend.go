package main

import (
	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
)

// newTrendCmd is `trend`: the nightly series with their change points (the
// logic is reports/trend's; docs/TRENDS.md).
func newTrendCmd() *cobra.Command {
	var t *cmdline.Trend
	cmd := &cobra.Command{
		Use:   "trend",
		Short: "Judge each scenario's figures over the last nights: change points, verdicts, a table or an HTML page",
		Long: `trend reads nightly series (--series: a JSON array of series, docs/TRENDS.md),
finds the nights where a figure's level changed (E-divisive means with a
permutation test) and prints a text or Markdown table, or writes a
self-contained HTML page (--format html --out DIR writes DIR/trend.html;
-o FILE writes one named file).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return t.Run(cmd) },
	}
	t = cmdline.TrendFlags(cmd)
	return cmd
}
