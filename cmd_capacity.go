package main

import (
	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/runner/compare"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

func newCapacityCmd() *cobra.Command {
	var f cmdline.Scenario
	var co compare.CapacityOptions
	cmd := &cobra.Command{
		Use:   "capacity <name|file>",
		Short: "Step the rate up until the SLO breaks; report the highest rate that held, with the curve",
		Long: `capacity runs the scenario's first phase open-loop at a constant rate for
--step-duration, multiplying the rate by --factor each step (dividing when
--start already breaks), until a step breaks the SLO: latency p99 (from the
intended send) above --slo-p99, a failed invariant, a dropped operation,
throughput under 95% of the rate, or more than --max-error-ratio errors and
unknowns. It then bisects between the highest rate that held and the lowest
that broke until they are within --precision, and runs the final rate
--confirm more times, saying how many held (a noisy machine can break a rate
that held once). Every step is a fresh activity on one cluster, its buckets
on the same slots each time. It prints the curve and the highest rate that
held; reports per step go to <out>/step-NN-RATE/, the curve to
<out>/capacity.json. --path-mix accept or sold-out sizes each step's stock
from its demand (twice it, or a tenth of it) instead of the scenario's.`,
		Example: "  seckill-harness capacity sold-out-90 --start 2000 --factor 1.5 --slo-p99 20ms",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Plan(cmd, args[0], planner.Overrides{})
			if err != nil {
				return err
			}
			return f.Run(cmd, func(out lifecycle.Output) (bool, error) {
				return compare.Capacity(cmd.Context(), cmd.OutOrStdout(), p, co.For(p, cmd.Flags().Changed), out)
			})
		},
	}
	cmdline.ScenarioFlags(cmd.Flags(), &f, "out/capacity")
	cmdline.CapacityFlags(cmd.Flags(), &co, "scenario, accept or sold-out")
	return cmd
}
