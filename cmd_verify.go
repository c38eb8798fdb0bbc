package main

import (
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/internal/exitcode"
	"seckill-harness/runner/lifecycle"
)

func newVerifyCmd() *cobra.Command {
	var o lifecycle.VerifyOptions
	cmd := &cobra.Command{
		Use:   "verify DIR...",
		Short: "Merge the runs of a load split over generators (--generator I/N) and judge the invariants over all of them against the live activity",
		Long: `verify is the merge step of a load split over several harness processes
(run --generator I/N --activity NAME, one --out DIR each). It reads every
generator's history (the --history JSONL, written by default with
--generator) and generator.json, unions the histories (op ids re-numbered,
times put on one clock from each run's started_at), reads the activity's
final state from the cluster, and checks the invariants over the union — the checks a
single generator cannot judge (I2 reservation accounting, I9 undersell) are
judged here, and every other check again over all generators together. A
check a generator failed during its own run (e.g. a transient I1 sample)
fails the merge too.

It then writes one report to --out: one verdict, and one latency distribution
from the runs' latency.hlog added together (as 'report' merges them), plus
the merged history.jsonl.

Refused (exit 2) unless the DIRs are exactly generators 0..N-1 of one
activity, each the run that claimed its index in the activity's registry
and finished, and unless the history each generator.json names lies inside
its DIR (or under --files-root DIR). The activity stays on the cluster unless --teardown; its keys
expire at retention_until_ms anyway.

Exit codes: 0 every check passed, 1 a check failed, 2 harness or usage error.`,
		Example: `  # on machine A and machine B, against the same cluster and activity:
  seckill-harness run --cluster redis://10.0.0.5:7000 --activity sale42 --generator 0/2 --rate 5000 --out gen0
  seckill-harness run --cluster redis://10.0.0.5:7000 --activity sale42 --generator 1/2 --rate 5000 --out gen1
  # anywhere, with both directories:
  seckill-harness verify --cluster redis://10.0.0.5:7000 --out merged --teardown gen0 gen1`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			o.Logger = cmdline.Logger(cmd)
			rep, err := lifecycle.Verify(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), dirs, o)
			if err != nil {
				return err
			}
			if !rep.Passed {
				return exitcode.ErrChecksFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	cmdline.ClusterFlags(f, &o.Cluster)
	f.StringVar(&o.Activity, "activity", "", "the generators' activity (default: from their generator.json; given, it must match)")
	f.StringVar(&o.Out, "out", "", "directory for the merged report.json, report.html, summary.md, junit.xml, latency.* and history.jsonl (required)")
	f.StringVar(&o.LuaDir, "lua-dir", "", "the scripts the generators ran, if not the embedded ones")
	f.DurationVar(&o.ClockSkew, "clock-skew", 100*time.Millisecond, "how far apart the generators' clocks may be: I9 ignores a SOLD_OUT this close after a bucket's last release")
	f.BoolVar(&o.Teardown, "teardown", false, "after verifying, remove the activity's keys (and its generator registry) from the cluster")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "do not print the text summary")
	return cmd
}
