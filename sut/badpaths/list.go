package badpaths

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteList prints the bad paths: name, load, the invariants that catch
// it, and what it does wrong.
func WriteList(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tLOAD\tCAUGHT BY\tWHAT IT DOES WRONG\n")
	for _, i := range All() {
		load := i.Load
		if i.Pending != "" {
			load = "pending"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", i.Name, load, strings.Join(i.Expect, " or "), i.Description)
	}
	return tw.Flush()
}
