package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"seckill-harness/faults"
	"seckill-harness/internal/cmdline"
)

func newFaultsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "faults",
		Short: "List the fault kinds and their parameters (for --fault KIND:key=value,...)",
		Long: `faults lists the fault kinds and their parameters. With --json it prints one
JSON array, one object per kind: kind, help, params (name, default, help,
values of an enum parameter; at and for first) and rules (destructive,
destructive_why, may_be_destructive, destructive_when, signals_process_when,
needs_proxies, needs_replication_proxies, needs_pipeline, overlap,
min_masters, min_replicas).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return cmdline.WriteJSON(cmd.OutOrStdout(), faults.Describe())
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			for _, k := range faults.Kinds() {
				fmt.Fprintf(w, "%s\t%s\n", k.Kind, k.Help)
				fmt.Fprintf(w, "  at\toffset from the start of the load (default 0s)\n")
				fmt.Fprintf(w, "  for\thow long it lasts; 0 = until the load ends (default 0s)\n")
				for _, p := range k.Params {
					def := ""
					if p.Default != "" {
						def = " (default " + p.Default + ")"
					}
					fmt.Fprintf(w, "  %s\t%s%s\n", p.Name, p.Help, def)
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the kinds as one JSON array")
	return cmd
}
