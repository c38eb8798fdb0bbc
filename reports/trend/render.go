package trend

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Formats are the output formats of Write, the values of --format.
var Formats = []string{"text", "markdown", "html"}

// Write renders results in format (one of Formats): a plain-text table,
// a Markdown table for a CI job summary, or the self-contained HTML page.
// o is stated on the output (the significance level the p-values were
// judged at).
func Write(w io.Writer, results []Result, format string, o Options) error {
	switch format {
	case "text":
		return writeText(w, results, o)
	case "markdown":
		return writeMarkdown(w, results, o)
	case "html":
		return WriteHTML(w, results, o)
	}
	return fmt.Errorf("--format %q: unknown format: use one of %s", format, strings.Join(Formats, ", "))
}

// row is one result as the tables show it.
type row struct {
	scenario, figure, nights, last, spread, spark, verdicts, changes string
}

func rowOf(r Result) row {
	u := r.Series.Unit
	return row{
		scenario: r.Series.Scenario,
		figure:   r.Series.Figure,
		nights:   fmt.Sprint(len(r.Series.Points)),
		last:     fmtValue(r.Last, u),
		spread:   fmt.Sprintf("%s / %s / %s", fmtValue(r.Min, ""), fmtValue(r.Median, ""), fmtValue(r.Max, u)),
		spark:    sparkline(r.Series.Points),
		verdicts: verdictText(r),
		changes:  changesText(r),
	}
}

func writeText(w io.Writer, results []Result, o Options) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tFIGURE\tNIGHTS\tLAST\tMIN / MEDIAN / MAX\tTREND\tVERDICTS\tCHANGE POINTS")
	for _, r := range results {
		x := rowOf(r)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.scenario, x.figure, x.nights, x.last, x.spread, x.spark, x.verdicts, x.changes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, methodNote(o))
	return err
}

func writeMarkdown(w io.Writer, results []Result, o Options) error {
	var b strings.Builder
	b.WriteString("## Nightly trends\n\n")
	b.WriteString("| scenario | figure | nights | last | min / median / max | trend | verdicts | change points |\n")
	b.WriteString("|---|---|--:|--:|--:|---|---|---|\n")
	for _, r := range results {
		x := rowOf(r)
		cells := []string{x.scenario, x.figure, x.nights, x.last, x.spread, x.spark, x.verdicts, x.changes}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\n" + methodNote(o) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// methodNote says how the change points were found, under each table.
func methodNote(o Options) string {
	return fmt.Sprintf("Change points: E-divisive means, permutation test (%d permutations, seed %d), significant at p ≤ %g, at least %d nights per segment (docs/TRENDS.md).",
		o.Permutations, o.Seed, o.Alpha, o.MinSize)
}

// changesText lists the change points: "night 19/30 2026-11-19 ↑ +24.8%
// (100 → 125 ms, p=0.005)"; "none" without; "too few nights" for a
// series that was too short to search.
func changesText(r Result) string {
	if n := len(r.Series.Points); n < r.Needed {
		return fmt.Sprintf("too few nights to judge (%d of the %d needed)", n, r.Needed)
	}
	if len(r.Changes) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range r.Changes {
		arrow := "↑"
		if c.Direction == "down" {
			arrow = "↓"
		}
		parts = append(parts, fmt.Sprintf("night %d/%d %s %s %+.1f%% (%s → %s, p=%.3g)",
			c.Index+1, len(r.Series.Points), c.At.UTC().Format("2006-01-02"), arrow, 100*c.Relative,
			fmtValue(c.Before, ""), fmtValue(c.After, r.Series.Unit), c.PValue))
	}
	return strings.Join(parts, "; ")
}

// verdictText counts the verdicts, most frequent first, and names the last
// night's: "28 pass, 2 fail (last: pass)".
func verdictText(r Result) string {
	keys := make([]string, 0, len(r.Verdicts))
	for k := range r.Verdicts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := r.Verdicts[b] - r.Verdicts[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", r.Verdicts[k], k))
	}
	last := r.Series.Points[len(r.Series.Points)-1].Verdict
	if last == "" {
		last = "unknown"
	}
	return strings.Join(parts, ", ") + " (last: " + last + ")"
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// sparkline is the series as block characters from its min to its max.
func sparkline(ps []Point) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range ps {
		lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
	}
	out := make([]rune, len(ps))
	for i, p := range ps {
		k := 0
		if hi > lo {
			k = int(math.Round((p.Value - lo) / (hi - lo) * float64(len(sparks)-1)))
		}
		out[i] = sparks[k]
	}
	return string(out)
}

// fmtValue is v with three significant digits or so, then unit.
func fmtValue(v float64, unit string) string {
	var s string
	switch a := math.Abs(v); {
	case a >= 100 || a == 0:
		s = fmt.Sprintf("%.0f", v)
	case a >= 10:
		s = fmt.Sprintf("%.1f", v)
	case a >= 1:
		s = fmt.Sprintf("%.2f", v)
	default:
		s = fmt.Sprintf("%.3g", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}
