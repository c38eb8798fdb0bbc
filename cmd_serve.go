package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"seckill-harness/runner/serve"
)

// newServeCmd is `serve`: the reference access service (runner/serve,
// docs/SERVICE.md) on a loopback address until SIGINT/SIGTERM.
func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference access service (HTTP reserve/query/release in front of the cluster; docs/SERVICE.md)",
		Args:  cobra.NoArgs,
	}
	flags := serve.RegisterFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := flags.Config()
		if err != nil {
			return err
		}
		s, err := serve.New(cfg)
		if err != nil {
			return err
		}
		return serve.Run(cmd.Context(), s, func(addr string) {
			fmt.Fprintf(cmd.ErrOrStderr(), "serve: listening on http://%s (cluster %s; defects: %s)\n",
				addr, strings.Join(cfg.RedisAddrs, ","), cfg.Defects)
		})
	}
	return cmd
}
