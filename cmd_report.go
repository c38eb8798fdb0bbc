package main

import (
	"io"

	"github.com/spf13/cobra"

	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
)

type reportOptions struct {
	out   string
	check bool
	quiet bool
}

func newReportCmd() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report DIR...",
		Short: "Re-render saved runs (text, summary.md, report.html, junit.xml); merge several runs into one report",
		Long: `report reads the report.json and latency.hlog that 'run' saved in each DIR and
renders them again: the text summary on stdout, summary.md (a Markdown summary
for a CI job summary), report.html (self-contained, opens offline) and
junit.xml.

With one DIR the files are written into it (report.json is left as it is),
or into --out (then report.json, latency.hgrm and latency.hlog are copied
there too, and files of an earlier run there that this one does not write,
such as a history.jsonl, are removed). A run saved without latency.hlog is rendered from latency.hgrm:
its latency distribution is then the whole run's only.

With several DIRs (one load split across load generators) the runs are merged
into one report written to --out: operations and outcomes are summed, and
every percentile (overall, per phase, per second) comes from the runs'
latency.hlog histograms added together, exactly as one histogram of all their
values. Seconds are counted from each run's own start. The invariants are
each run's own, merged by id: for generators of one split load
(run --generator I/N) use 'seckill-harness verify', which also judges
the invariants over the union of their histories against the cluster.

Exit codes: 0 rendered (whatever the verdict, unless --check), 1 with --check
when the report's verdict is FAIL, 2 on a usage or read error, 3 with --check
when it is INCONCLUSIVE (no check failed, but the stand could not sustain the
plan, or a fault missed the system under test).`,
		Example: `  seckill-harness report out/
  seckill-harness report --out merged/ gen1/ gen2/ gen3/
  seckill-harness report --check --quiet out/ && cat out/summary.md >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			return runReport(cmd.OutOrStdout(), cmd.ErrOrStderr(), dirs, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "directory to write into (default: the DIR itself; required with several DIRs)")
	f.BoolVar(&o.check, "check", false, "exit 1 when the (merged) report's verdict is FAIL, 3 when it is INCONCLUSIVE (only latency or throughput assertions failed, on a starved stand)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "do not print the text summary")
	return cmd
}

// runReport re-renders dirs (reports.Rerender) and, with --check, maps
// the report's verdict to the exit contract.
func runReport(stdout, stderr io.Writer, dirs []string, o reportOptions) error {
	rep, err := reports.Rerender(stdout, stderr, dirs, o.out, o.quiet)
	switch {
	case err != nil || !o.check:
		return err
	case rep.IsInconclusive():
		return exitcode.ErrInconclusive
	case rep.Verdict() != "PASS":
		return exitcode.ErrChecksFailed
	}
	return nil
}
