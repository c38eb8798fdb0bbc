// Package compare runs one plan once per value of an axis — bucket counts,
// client pool sizes, the local sold-out flag off and on, variants of the
// scenario — and shows the results side by side; at each value it
// measures one fixed load or, with --capacity, searches for the highest
// rate that holds the SLO. The capacity command is the same search with
// no axis. One loop (measureAll) runs every compare; one row type (Row)
// holds what it measured; one table writer (table) prints it as text and
// Markdown.
package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"seckill-harness/reports"
	"seckill-harness/reports/results"
	"seckill-harness/runner/lifecycle"
)

// measure is what a compare measures at one axis value, on q (a copy of
// the plan with the value applied), writing its reports under out.Dir.
type measure interface {
	at(ctx context.Context, log io.Writer, q *lifecycle.Plan, v Value, out lifecycle.Output) (Row, error)
}

// measureAll is the one loop of every compare: per value of the axis, a
// copy of p with the value applied, named after it, measured by m with its
// reports in <out.Dir>/<value dir>.
func measureAll(ctx context.Context, log io.Writer, p *lifecycle.Plan, axis Axis, m measure, out lifecycle.Output) ([]Row, error) {
	var rows []Row
	for _, v := range axis.Values {
		q := *p
		if v.Apply != nil {
			v.Apply(&q)
		}
		if v.Label != "" {
			q.Name = fmt.Sprintf("%s (%s)", p.Name, v.Label)
		}
		sub := out
		sub.Dir = subDir(out.Dir, v.Dir)
		sub.Results, sub.Baseline = nil, nil // a variant is not the scenario: the compare's record stands for it
		if v.Heading != "" {
			fmt.Fprintf(log, "\n=== %s ===\n", v.Heading)
		}
		r, err := m.at(ctx, log, &q, v, sub)
		if err != nil {
			if v.Label == "" {
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w", v.Label, err)
		}
		rows = append(rows, r)
	}
	relate(rows)
	return rows, nil
}

// checkStock refuses an axis value that splits the stock into more
// buckets than it has units.
func checkStock(p *lifecycle.Plan, axis Axis) error {
	for _, v := range axis.Values {
		q := *p
		if v.Apply != nil {
			v.Apply(&q)
		}
		if q.Stock > 0 && int64(q.Buckets) > q.Stock {
			return fmt.Errorf("--buckets: %d buckets for stock %d: every bucket needs at least one unit", q.Buckets, q.Stock)
		}
	}
	return nil
}

// subDir is dir's sub-directory sub; "" when dir is "" (no artifacts).
func subDir(dir, sub string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, sub)
}

// runAt is the measure of a plain compare: one fixed load at each value.
type runAt struct{ view view }

func (m runAt) at(ctx context.Context, log io.Writer, q *lifecycle.Plan, v Value, out lifecycle.Output) (Row, error) {
	cpu := &loadCPU{}
	q.OnLoad = cpu.onLoad
	res, err := lifecycle.Execute(ctx, q, out)
	if err != nil {
		return Row{}, err
	}
	if res.RunErr != nil {
		return Row{}, res.Interrupted()
	}
	r := runRow(v, q, res, out.Dir, cpu)
	fmt.Fprintf(log, "%s: %s, verdict %s\n", q.Name, m.view.line(r), res.Report.Verdict())
	return r, nil
}

// Compare runs p once per value of the axis (each on a fresh cluster, same
// seed, same load), prints the rows side by side, and writes
// <out>/compare.json, <out>/compare.md and <out>/report.html (nothing when
// out.Dir is ""); each value's reports go to <out>/<value dir>/. passed is
// false when a run failed.
func Compare(ctx context.Context, log io.Writer, p *lifecycle.Plan, axis Axis, out lifecycle.Output) (passed bool, err error) {
	return compareBy(ctx, log, p, axis, runAt{axis.view}, out)
}

// compareBy is Compare with the measure m at each value.
func compareBy(ctx context.Context, log io.Writer, p *lifecycle.Plan, axis Axis, m measure, out lifecycle.Output) (passed bool, err error) {
	if err := checkStock(p, axis); err != nil {
		return false, err
	}
	began := time.Now()
	rows, err := measureAll(ctx, log, p, axis, m, out)
	if err != nil {
		return false, err
	}
	heading := fmt.Sprintf("compare %s: %s", p.Name, axis.Title)
	if axis.view.stock {
		heading = fmt.Sprintf("compare %s: stock %d, %s", p.Name, p.Stock, axis.Title)
	}
	doc := map[string]any{"scenario": p.Name, "dimension": axis.Name, "rows": rows}
	if axis.view.stock {
		doc["stock"] = p.Stock
	}
	w := written{heading: heading, tables: []table[Row]{axis.view.table}, notes: axis.view.notes, doc: doc,
		md: fmt.Sprintf("# compare %s by %s\n\n%s; each on a fresh cluster.", p.Name, axis.words(), capitalize(axis.Title)),
		sum: &reports.Report{Scenario: p.Name + " — compare by " + axis.words(), Seed: p.Phases[0].Config.Seed,
			StartedAt: began, Compare: &reports.CompareResult{Dimension: axis.Name}}}
	return w.write(ctx, log, rows, out)
}

// CompareCapacity runs a capacity search (see Capacity) for each path of
// co.PathMix and each value of the axis, each on a fresh cluster, and
// prints one table: the highest rate that held, p99 and errors at that
// rate, each master's CPU there, the placement of the buckets and the
// ceiling it implies, the speed-up against the path's first value; then,
// apart and labelled, a projection with each master on its own core. The
// rows go to out.Dir/compare.json, compare.md and report.html, each
// search's steps to out.Dir/<path>/<value dir>/step-NN-RATE/.
func CompareCapacity(ctx context.Context, log io.Writer, p *lifecycle.Plan, axis Axis, co CapacityOptions, out lifecycle.Output) (passed bool, err error) {
	if err := co.Validate(); err != nil {
		return false, err
	}
	paths, err := PathMixes(co.PathMix, true)
	if err != nil {
		return false, err
	}
	if paths[0] == PathScenario {
		if err := checkStock(p, axis); err != nil {
			return false, err
		}
	}
	began := time.Now()
	rows, err := measureAll(ctx, log, p, axis.byPath(paths), searchAt{co}, out)
	if err != nil {
		return false, err
	}
	slo := float64(co.SloP99.Microseconds()) / 1000
	note := fmt.Sprintf("Measured on this machine: %d CPU(s) shared by every redis-server, the harness and anything else running; "+
		"measured speed-ups are bounded by that, the projection is not a measurement.", runtime.NumCPU()) + standBoundNote(rows)
	w := written{tables: []table[Row]{measuredTable, projectionTable}, note: note,
		heading: fmt.Sprintf("compare --capacity %s: highest rate holding p99 <= %s (from the intended send), no drops, no failed invariant, errors <= %.1f%%; bisected to ±%.0f%%",
			p.Name, co.SloP99, co.MaxErrorRatio*100, co.Precision*100),
		doc: map[string]any{"scenario": p.Name, "mode": "capacity", "slo_p99_ms": slo, "max_error_ratio": co.MaxErrorRatio,
			"precision": co.Precision, "note": note, "capacity_rows": rows},
		md: fmt.Sprintf("# compare --capacity %s by %s\n\nThe highest rate per value that held the SLO; each on a fresh cluster.", p.Name, axis.words()),
		sum: &reports.Report{Scenario: p.Name + " — capacity by " + axis.words(), Seed: p.Phases[0].Config.Seed, StartedAt: began,
			Compare: &reports.CompareResult{Dimension: axis.Name + " (capacity)", SloP99Ms: slo, Note: note}}}
	return w.write(ctx, log, rows, out)
}

// words is the axis's name as words ("pool size").
func (a Axis) words() string {
	if a.Name == "buckets" {
		return "bucket count"
	}
	return strings.ReplaceAll(a.Name, "_", " ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// written is a compare's output: the heading and tables printed, and the
// same rows in compare.json (doc), compare.md and report.html (sum).
type written struct {
	heading string
	tables  []table[Row]
	notes   bool   // list each value's settings under the tables
	note    string // a closing remark under the tables
	doc     map[string]any
	md      string
	sum     *reports.Report
}

// write prints the tables and, unless dir is "", writes the files; passed
// is every row's verdict.
func (w written) write(ctx context.Context, log io.Writer, rows []Row, out lifecycle.Output) (passed bool, err error) {
	dir := out.Dir
	passed = true
	for _, r := range rows {
		passed = passed && r.passed()
		w.sum.Compare.Variants = append(w.sum.Compare.Variants, r.summary())
	}
	fmt.Fprintf(log, "\n%s\n", w.heading)
	for _, t := range w.tables {
		t.text(log, rows)
	}
	w.closing(log, rows, "  %s: %s\n")
	if dir == "" {
		return passed, nil
	}
	var md strings.Builder
	md.WriteString(w.md + "\n\n")
	for _, t := range w.tables {
		t.markdown(&md, rows)
		md.WriteString("\n")
	}
	w.closing(&md, rows, "- **%s**: %s\n")
	w.sum.Passed, w.sum.DurationS = passed, time.Since(w.sum.StartedAt).Seconds()
	files := []string{filepath.Join(dir, "compare.json"), filepath.Join(dir, "compare.md"), filepath.Join(dir, "report.html")}
	if err := writeJSONFile(files[0], w.doc); err != nil {
		return false, err
	}
	if err := reports.WriteFileAtomic(files[1], []byte(md.String())); err != nil {
		return false, err
	}
	if err := writeHTMLFile(files[2], w.sum); err != nil {
		return false, err
	}
	fmt.Fprintf(log, "compare: %s\n", strings.Join(files, ", "))
	_ = results.AppendReport(ctx, out.Results, w.sum, results.KindCompare, dir, out.ErrOut)
	return passed, nil
}

// closing writes what follows the tables: each value's settings (format
// takes the value and its settings), then the note.
func (w written) closing(out io.Writer, rows []Row, format string) {
	if w.notes {
		for _, r := range rows {
			fmt.Fprintf(out, format, r.Variant, settingsText(r.Settings))
		}
	}
	if w.note != "" {
		fmt.Fprintln(out, w.note)
	}
}

// writeHTMLFile renders a summary report (compare, capacity) to path,
// atomically.
func writeHTMLFile(path string, rep *reports.Report) error {
	return reports.WriteFileAtomicFunc(path, func(w io.Writer) error { return reports.WriteHTML(w, rep, nil) })
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return reports.WriteFileAtomic(path, append(b, '\n'))
}
