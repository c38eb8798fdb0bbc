package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"seckill-harness/runner/adapter"
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
			summary, findings, err := adapter.Validate(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), summary)
			for _, x := range findings {
				fmt.Fprintln(cmd.OutOrStdout(), "finding:", x)
			}
			return nil
		},
	})
	var out string
	initCmd := &cobra.Command{
		Use:   "init SCRIPT",
		Short: "Write a commented starting adapter file for a reserve script, its reply mapping guessed from dry calls on a throwaway local cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := adapter.Init(cmd.Context(), args[0], out)
			if err == nil && out != "" {
				text = fmt.Sprintf("wrote %s: confirm each GUESS and UNKNOWN in it, then: seckill-harness adapter validate %[1]s\n", out)
			}
			fmt.Fprint(cmd.OutOrStdout(), text)
			return err
		},
	}
	initCmd.Flags().StringVar(&out, "out", "", "write the file here (refuses to overwrite one) instead of to stdout")
	cmd.AddCommand(initCmd)
	return cmd
}
