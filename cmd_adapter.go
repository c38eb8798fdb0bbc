package main

import (
	"github.com/spf13/cobra"

	"seckill-harness/sut/adapter"
)

// newAdapterCmd is `adapter`: work with a contract adapter file (a team's
// own reserve script described for the harness; docs/ADAPTERS.md).
func newAdapterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "adapter", Short: "Work with a contract adapter file (your own reserve script under test)", Args: cobra.NoArgs}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate FILE",
		Short: "Check an adapter file without running it: exit 0 with a summary, exit 2 naming file:line of the problem",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return adapter.WriteValidation(cmd.OutOrStdout(), args[0])
		},
	})
	var out string
	initCmd := &cobra.Command{
		Use:   "init SCRIPT",
		Short: "Write a commented starting adapter file for a reserve script, its reply mapping guessed from dry calls on a throwaway local cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return adapter.WriteInit(cmd.Context(), cmd.OutOrStdout(), args[0], out)
		},
	}
	initCmd.Flags().StringVar(&out, "out", "", "write the file here (refuses to overwrite one) instead of to stdout")
	cmd.AddCommand(initCmd)
	return cmd
}
