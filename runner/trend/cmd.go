package trend

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"seckill-harness/reports"
)

// Command is what `seckill-harness trend` was asked: where the series come
// from, which to show, how, and where.
type Command struct {
	// Source yields the series (FileSource for --series; the results
	// history adds its own). Nil: no source was given.
	Source  Source
	Filter  Filter
	Format  string // one of Formats
	Out     string // file to write ("" or "-": the command's output)
	Options Options
}

// Run reads the series, judges them and writes the output. Every error is
// a usage or input error (exit 2) naming the problem and the fix; nothing
// is written when there is one.
func (c Command) Run(stdout io.Writer) error {
	if c.Source == nil {
		return errors.New("trend needs series: pass --series FILE (a JSON array of series)")
	}
	if !slices.Contains(Formats, c.Format) {
		return fmt.Errorf("--format %q: unknown format: use one of %s", c.Format, strings.Join(Formats, ", "))
	}
	all, err := c.Source()
	if err != nil {
		return err
	}
	results, err := Analyze(all, c.Filter, c.Options)
	if err != nil {
		return err
	}
	if c.Out == "" || c.Out == "-" {
		return Write(stdout, results, c.Format, c.Options)
	}
	if err := reports.WriteFileAtomicFunc(c.Out, func(w io.Writer) error { return Write(w, results, c.Format, c.Options) }); err != nil {
		return fmt.Errorf("-o %s: %w: give a writable file path", c.Out, err)
	}
	fmt.Fprintf(stdout, "trend: %d series written to %s\n", len(results), c.Out)
	return nil
}
