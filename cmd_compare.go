package main

import (
	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/runner/compare"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

func newCompareCmd() *cobra.Command {
	var f cmdline.Scenario
	var req compare.Request
	var wait cmdline.Wait
	cmd := &cobra.Command{
		Use:   "compare <name|file> --buckets " + compare.DefaultBuckets,
		Short: "Run the same load once per bucket count and print them side by side (throughput, latency, partial sell-out)",
		Long: `compare runs a scenario once per bucket count — same seed, same load, a fresh
cluster each — and prints throughput, p50/p99/p99.9, when the first and the
last bucket sold out, the stock still unsold in other buckets when the first
bucket sold out (the specification's partial sell-out), SOLD_OUT answers given while
stock was left elsewhere, and the final unsold stock. Reports go to
<out>/buckets-N/, the table to <out>/compare.json.

--pool-sizes 4,16,64 compares the load client's pool sizes per node instead
(throughput, p99, pool waits, their time and pool timeouts per size; reports
in <out>/pool-N/); --local-soldout TTL compares the path without and with
the local sold-out flag (Redis calls after the sell-out and answers given
locally against the false sold-out window after releases; reports in
<out>/local-soldout-off/ and <out>/local-soldout-TTL/). One axis at a time.

With --capacity it runs capacity's search (see 'seckill-harness capacity
--help'; the same flags) once per bucket count and --path-mix, each on a
fresh cluster, and prints one table: the highest rate that held the SLO
(bisected to --precision) with the confirmations that held, what bound the
search ("system: hot master at N cores", or "stand: generator late M%" when
the load generator fell behind: the system's limit was not reached and the
capacity and projection are lower bounds), p99, errors and the SOLD_OUT
share at that rate, each master's CPU there (INFO cpu deltas
over the load), the buckets per master (the owner of each bucket's slot) and
the ceiling that placement implies (1 / the busiest master's share), and
the measured speed-up against the first bucket count; then, apart and
labelled, a projection with each master on its own core (measured server
CPU per op, placement, client CPU per op). Steps go to
<out>/<path>/buckets-N/step-NN-RATE/, the rows to <out>/compare.json
(capacity_rows) and <out>/report.html.

With --mitigations and/or --variant it compares variants of the scenario
instead of bucket counts: each variant is the scenario with settings of its
own (as --set takes them) — the mitigations none (as written), min-replicas
(topology.min_replicas_to_write=1, topology.min_replicas_max_lag=1s) and
wait (wait.replicas=1: WAIT after each ACCEPTED) — run on a fresh cluster
with the same seed and load, and prints one table: ACCEPTED answers, lost
acknowledged reservations, those lost although WAIT confirmed them,
NOREPLICAS refusals and the window they covered, p99, WAIT's p99, ops/s.
Reports go to <out>/<variant>/, the table to <out>/compare.json,
<out>/compare.md and <out>/report.html.`,
		Example: "  seckill-harness compare sold-out-90 --buckets " + compare.DefaultBuckets + "\n" +
			"  seckill-harness compare failover-data-loss --mitigations " + compare.DefaultMitigations + "\n" +
			"  seckill-harness compare failover-data-loss --mitigations none,wait --variant wait-2s:wait.replicas=1 --variant wait-2s:wait.timeout=2s\n" +
			"  seckill-harness compare sold-out-90 --buckets 1,16,32 --capacity --slo-p99 20ms --path-mix both\n" +
			"  seckill-harness compare pool-exhaustion --pool-sizes 4,16,64\n" +
			"  seckill-harness compare sold-out-90 --local-soldout 1s --set phases.sold-out.mix.release=0.05",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Given = cmd.Flags().Changed
			plan := func(sets []string) (*lifecycle.Plan, error) {
				return f.Plan(cmd, args[0], wait.Over(planner.Overrides{}), sets...)
			}
			return f.Run(cmd, func(out lifecycle.Output) (bool, error) { return req.Run(cmd.Context(), cmd.OutOrStdout(), plan, out) })
		},
	}
	cmdline.ScenarioFlags(cmd.Flags(), &f, "out/compare")
	cmdline.CompareFlags(cmd.Flags(), &req, &wait)
	return cmd
}
