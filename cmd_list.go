package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/scenarios"
)

// scenarioListEntry is one built-in scenario in list --json.
type scenarioListEntry struct {
	Name      string   `json:"name"`
	Proves    string   `json:"proves"`
	LoadS     float64  `json:"load_s"` // planned load time (a suite: its members' sum)
	Suite     bool     `json:"suite"`
	Members   []string `json:"members,omitempty"`
	Pipeline  bool     `json:"pipeline"`
	MaxDrainS float64  `json:"max_drain_s,omitempty"`
}

func newListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios and what each proves",
		Long: `list prints the built-in scenarios. With --json it prints one JSON array, one
object per scenario: name, proves, load_s, suite, members, pipeline, max_drain_s.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				var out []scenarioListEntry
				for _, in := range scenarios.Builtins() {
					out = append(out, scenarioListEntry{Name: in.Name, Proves: in.Proves, LoadS: in.Duration.Seconds(), Suite: in.Suite,
						Members: in.Members, Pipeline: in.Pipeline, MaxDrainS: in.Drain.Seconds()})
				}
				return cmdline.WriteJSON(cmd.OutOrStdout(), out)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tLOAD\tPROVES")
			for _, in := range scenarios.Builtins() {
				proves := in.Proves
				if in.Suite {
					proves += " [suite: " + strings.Join(in.Members, ", ") + "]"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", in.Name, in.Duration.Round(time.Second), proves)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "\nrun one: seckill-harness run NAME   (or a YAML file; see 'seckill-harness validate --help')")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the scenarios as one JSON array")
	return cmd
}
