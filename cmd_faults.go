package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"seckill-harness/faults"
)

func newFaultsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "faults",
		Short: "List the fault kinds and their parameters (for --fault KIND:key=value,...)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
}
