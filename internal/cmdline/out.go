package cmdline

import (
	"fmt"

	"github.com/spf13/cobra"
)

// AddOutCheck refuses, on every command whose --out has a default
// directory (run, race, catalogue, explore, ...), an --out given as "":
// the run would go through its whole load and write nothing. Commands
// where --out defaults to "" ("none", "the DIR itself") keep it.
func AddOutCheck(root *cobra.Command) {
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		return CheckOut(cmd)
	}
}

// CheckOut is AddOutCheck's check on one command.
func CheckOut(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("out")
	if f == nil || !f.Changed || f.Value.String() != "" || f.DefValue == "" {
		return nil
	}
	return fmt.Errorf(`--out "": an empty output directory would run the whole load and write nothing: give a directory (default %s)`, f.DefValue)
}
