package trend

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
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
	Out     string // file to write, -o ("" or "-": the command's output)
	OutDir  string // directory to write OutFiles[Format] into, --out ("": Out decides)
	Options Options
}

// OutFiles are the fixed names `trend --out DIR` writes, per format: the
// contract a CI job's upload step relies on.
var OutFiles = map[string]string{"text": "trend.txt", "markdown": "trend.md", "html": "trend.html"}

// Run reads the series, judges them and writes the output. Every error is
// a usage or input error (exit 2) naming the problem and the fix; nothing
// is written when there is one.
func (c Command) Run(stdout io.Writer) error {
	if c.Source == nil {
		return errors.New("trend needs series: pass --results-history DIR (or --results-db URL), the results history nightly runs append to, or --series FILE (a JSON array of series)")
	}
	if !slices.Contains(Formats, c.Format) {
		return fmt.Errorf("--format %q: unknown format: use one of %s", c.Format, strings.Join(Formats, ", "))
	}
	if err := c.Options.check(); err != nil {
		return err
	}
	if c.OutDir != "" && c.Out != "" {
		return fmt.Errorf("--out %s and -o %s: give one: --out DIR writes DIR/%s, -o FILE that one file", c.OutDir, c.Out, OutFiles[c.Format])
	}
	c.Options = c.Options.withResolution()
	all, err := c.Source()
	if err != nil {
		return err
	}
	results, err := Analyze(all, c.Filter, c.Options)
	if err != nil {
		return err
	}
	if c.OutDir != "" {
		return c.writeDir(stdout, results)
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

// writeDir writes the results as OutDir/OutFiles[Format], creating OutDir
// when missing; a directory it created is removed again when the write
// fails, so a refused --out leaves nothing behind.
func (c Command) writeDir(stdout io.Writer, results []Result) error {
	_, statErr := os.Stat(c.OutDir)
	created := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w: give a writable directory", c.OutDir, err)
	}
	path := filepath.Join(c.OutDir, OutFiles[c.Format])
	if err := reports.WriteFileAtomicFunc(path, func(w io.Writer) error { return Write(w, results, c.Format, c.Options) }); err != nil {
		if created {
			os.Remove(c.OutDir)
		}
		return fmt.Errorf("--out %s: %w: give a writable directory", c.OutDir, err)
	}
	fmt.Fprintf(stdout, "trend: %d series written to %s\n", len(results), path)
	return nil
}

// check refuses options the test cannot work with.
func (o Options) check() error {
	switch {
	case !(o.Alpha >= 0.001 && o.Alpha < 1):
		return fmt.Errorf("--alpha %g: the significance level is at least 0.001 and below 1 (e.g. 0.05)", o.Alpha)
	case o.MinSize < 2:
		return fmt.Errorf("--min-nights %d: a segment needs at least 2 nights", o.MinSize)
	}
	return nil
}

// withResolution raises Permutations so that at least 10 permutations'
// worth of p-value lie at or below Alpha (199 for 0.05, 999 for 0.01): a
// test with fewer could hardly ever reach its level.
func (o Options) withResolution() Options {
	if need := int(math.Ceil(10/o.Alpha)) - 1; o.Permutations < need {
		o.Permutations = need
	}
	return o
}
