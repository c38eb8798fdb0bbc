package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/runner/planner"
)

func newValidateCmd() *cobra.Command {
	var sets []string
	cmd := &cobra.Command{
		Use:   "validate <file|name>...",
		Short: "Check scenario files (or built-ins) without running them; exit 2 names file:line and field of every problem",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var bad []string
			for _, a := range args {
				s, err := planner.Resolve(cmd.Context(), a, sets, nil)
				if err == nil {
					err = planner.Validate(s)
				}
				if err == nil && s.IsSuite() {
					_, err = s.Members()
				}
				if err == nil {
					_, err = s.Plan()
				}
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s\n", err)
					bad = append(bad, a)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "ok  %s (%s, %d phase(s), %d fault(s), %s of load)\n", a, s.Source, len(s.Phases), len(s.Faults), s.Duration().Round(time.Millisecond))
			}
			if len(bad) > 0 {
				return fmt.Errorf("%d of %d scenario(s) not valid: %s: fix each at the file:line and field named above", len(bad), len(args), strings.Join(bad, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a field (key=value) before validating, as run does")
	return cmd
}
