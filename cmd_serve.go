package main

import (
	"github.com/spf13/cobra"

	"seckill-harness/sut/serve"
)

// newServeCmd is `serve`: the reference access service (sut/serve,
// docs/SERVICE.md) on a loopback address until SIGINT/SIGTERM.
func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference access service (HTTP reserve/query/release in front of the cluster; docs/SERVICE.md)",
		Args:  cobra.NoArgs,
	}
	flags := serve.RegisterFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return flags.Run(cmd.Context(), cmd.ErrOrStderr()) }
	return cmd
}
