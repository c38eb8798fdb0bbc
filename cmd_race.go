package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

type raceOptions struct {
	sale        cmdline.Sale
	concurrency int
	luaDir, out string
	cluster     lifecycle.ClusterSpec
}

func newRaceCmd() *cobra.Command {
	o := raceOptions{sale: cmdline.Sale{Users: 20000, Stock: 1, Buckets: 1}}
	cmd := &cobra.Command{
		Use:   "race",
		Short: "Race distinct users at a small stock (closed loop, all at once) and check exactly min(stock, users) win",
		Long: `race is the specification's first concurrency scene as one command: --users distinct
users, one request each, sent from --concurrency workers at once (closed loop)
against --stock units on a fresh local cluster. It passes (exit 0) when
exactly min(stock, users) reservations were ACCEPTED, every other answer was
SOLD_OUT, and the invariants hold; it writes the usual reports to --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	cmdline.SaleFlags(f, &o.sale, "distinct users, one request each", "stock buckets")
	f.IntVar(&o.concurrency, "concurrency", 512, "workers sending at once")
	f.StringVar(&o.luaDir, "lua-dir", "", "directory with reserve.lua, transition.lua, compensate.lua (default: the embedded scripts)")
	f.StringVar(&o.out, "out", "out/race", "output directory")
	cmdline.ClusterFlags(f, &o.cluster)
	return cmd
}

// run builds the race's plan (planner.Race, planner.Build), runs it and
// prints the rate the calls went at.
func (o raceOptions) run(cmd *cobra.Command) error {
	s, err := planner.Race(o.sale.Flags(cmd, o.cluster), o.sale.Users, o.concurrency)
	if err != nil {
		return err
	}
	p, err := planner.Build(s, planner.Inputs{Cluster: o.cluster, LuaDir: o.luaDir})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	oc, err := lifecycle.Execute(cmd.Context(), p, lifecycle.Output{Dir: o.out, Progress: "off", ErrOut: cmd.ErrOrStderr(), Log: out, Logger: cmdline.Logger(cmd)})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "race: %d users from %d workers in %.2fs: %.0f calls/s\n", o.sale.Users, o.concurrency,
		oc.Result.Elapsed.Seconds(), float64(oc.Result.History.Len())/oc.Result.Elapsed.Seconds())
	return lifecycle.Judge(oc)
}
