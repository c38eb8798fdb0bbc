package main

import (
	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
)

func newRunCmd() *cobra.Command {
	var o *cmdline.Run
	cmd := &cobra.Command{
		Use:   "run [scenario|file.yaml]",
		Short: "Run a scenario (built-in name or YAML file) or an ad-hoc load from flags; check the invariants; write the reports",
		Long: `run starts a local Redis Cluster (removed at the end), sets up one activity,
drives the reserve path open-loop (paced, latency from the intended send time)
or closed-loop, injects the scenario's faults, reads the state back from Redis,
checks the invariants and the scenario's assertions, and writes report.json,
report.html, summary.md, junit.xml, latency.hgrm, latency.hlog and (with --history)
the operation history to --out.

With a scenario (see 'seckill-harness list'), change it with --set key=value;
the load flags (--rate, --users, …) are for ad-hoc runs without one. A suite
(nightly) runs each member in turn into <out>/<member>/.

Exit codes: 0 every check passed, 1 a check or assertion failed, 2 harness or usage error,
3 inconclusive: no check failed, but the stand could not sustain the plan (a
latency or throughput assertion failed in seconds where the machine starved the
load generator; invariants are never inconclusive), or a fault missed the
system under test (aimed at the sale, its target served none of the system's
Redis traffic before the injection; the verdict names where the sale is and
where the fault acted). A suite exits 1 when
any member failed, else 3 when any member was inconclusive.`,
		Example: `  seckill-harness run                     # ad hoc: 20,000 users, stock 1,000, 2,000 req/s for 10 s
  seckill-harness run smoke
  seckill-harness run failover-kill --set faults.0.at=3s --out out/kill
  seckill-harness run nightly-ci --out out/nightly
  seckill-harness run my-scenario.yaml --seed 7
  seckill-harness run --rate 5000 --duration 30s --stock 10000 --buckets 4
  seckill-harness run --duration 15s --fault failover:mode=kill,at=4s,for=6s
  seckill-harness run --fault disconnect-before-reply:toxic=reset_peer,at=3s,for=2s --fault latency:latency=20,at=7s,for=2s`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.Execute(cmd, args) },
	}
	o = cmdline.RunFlags(cmd.Flags())
	cmdline.AddRunJSON(cmd, &o.Summary)
	return cmd
}
