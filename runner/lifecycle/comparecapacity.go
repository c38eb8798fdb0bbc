package lifecycle

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"seckill-harness/reports"
)

// capacityRow is one (path, bucket count) of a compare --capacity.
type capacityRow struct {
	Path    string `json:"path"`
	Buckets uint32 `json:"buckets"`
	// Measured at the capacity rate (see reports.VariantCapacity).
	CapacityOpsPerS   float64     `json:"capacity_ops_per_s"`
	BrokeOpsPerS      float64     `json:"broke_ops_per_s"`
	Converged         bool        `json:"converged"`
	Confirmations     int         `json:"confirmations"`
	ConfirmationsHeld int         `json:"confirmations_held"`
	P99Ms             float64     `json:"p99_ms"`
	Errors            int64       `json:"errors"`
	ErrorRatio        float64     `json:"error_ratio"`
	SoldOutShare      float64     `json:"sold_out_share"`
	MasterCPU         []MasterCPU `json:"master_cpu"`
	Speedup           float64     `json:"speedup"`
	// Placement of the buckets and the ceiling it implies.
	Placement      *Placement `json:"placement"`
	CeilingSpeedup float64    `json:"ceiling_speedup"`
	// Projection: computed, never measured.
	Projection *reports.CapacityProjection `json:"projection,omitempty"`
	ReportDir  string                      `json:"report_dir"`
	Steps      int                         `json:"steps"`

	final capacityStep
}

// CompareCapacity runs a capacity search (see Capacity) for each path of
// co.PathMix and each bucket count, each on a fresh cluster, and prints one
// table: the highest rate that held, p99 and errors at that rate, each
// master's CPU there, the placement of the buckets and the ceiling it
// implies, the speed-up against the first bucket count; then, apart and
// labelled, a projection with each master on its own core. The rows go to
// out.Dir/compare.json and out.Dir/report.html, each search's steps to
// out.Dir/<path>/buckets-N/step-NN-RATE/.
func CompareCapacity(ctx context.Context, log io.Writer, p *Plan, counts []uint32, co CapacityOptions, out Output) (passed bool, err error) {
	if err := co.Validate(); err != nil {
		return false, err
	}
	paths, err := PathMixes(co.PathMix, true)
	if err != nil {
		return false, err
	}
	for _, n := range counts {
		if p.Stock > 0 && int64(n) > p.Stock && paths[0] == PathScenario {
			return false, fmt.Errorf("--buckets: %d buckets for stock %d: every bucket needs at least one unit", n, p.Stock)
		}
	}
	began := time.Now()
	var rows []capacityRow
	for _, path := range paths {
		first := len(rows)
		for _, n := range counts {
			q := *p
			q.Buckets = n
			q.Name = fmt.Sprintf("%s (%d buckets, %s path)", p.Name, n, path)
			sub := out
			sub.Dir = filepath.Join(out.Dir, path, fmt.Sprintf("buckets-%d", n))
			fmt.Fprintf(log, "\n=== %s path, %d bucket(s) ===\n", path, n)
			f, err := searchCapacity(ctx, log, &q, co, path, sub)
			if err != nil {
				return false, fmt.Errorf("%s path, %d buckets: %w", path, n, err)
			}
			rows = append(rows, capacityRowOf(f))
		}
		relate(rows[first:])
	}
	note := fmt.Sprintf("Measured on this machine: %d CPU(s) shared by every redis-server, the harness and anything else running; "+
		"measured speed-ups are bounded by that, the projection is not a measurement.", runtime.NumCPU())
	writeCapacityTable(log, p, co, rows, note)
	if err := writeJSONFile(filepath.Join(out.Dir, "compare.json"), map[string]any{"scenario": p.Name, "mode": "capacity",
		"slo_p99_ms": float64(co.SloP99.Microseconds()) / 1000, "max_error_ratio": co.MaxErrorRatio, "precision": co.Precision,
		"note": note, "capacity_rows": rows}); err != nil {
		return false, err
	}
	cr := &reports.CompareResult{Dimension: "buckets (capacity)", SloP99Ms: float64(co.SloP99.Microseconds()) / 1000, Note: note}
	all := true
	for _, r := range rows {
		cr.Variants = append(cr.Variants, variantOf(r))
		all = all && r.CapacityOpsPerS > 0
	}
	sum := &reports.Report{Scenario: p.Name + " — capacity by bucket count", Seed: p.Phases[0].Config.Seed, Passed: all,
		StartedAt: began, DurationS: time.Since(began).Seconds(), Compare: cr}
	if err := writeHTMLFile(filepath.Join(out.Dir, "report.html"), sum); err != nil {
		return false, err
	}
	fmt.Fprintf(log, "compare: %s, %s\n", filepath.Join(out.Dir, "compare.json"), filepath.Join(out.Dir, "report.html"))
	return all, nil
}

// capacityRowOf reads a finished search: its final step's figures and the
// projection they give.
func capacityRowOf(f *capacityFinding) capacityRow {
	sr := f.Search
	r := capacityRow{Path: f.Path, Buckets: f.Buckets, CapacityOpsPerS: sr.Held, BrokeOpsPerS: sr.Broke, Converged: sr.Converged,
		Confirmations: sr.Confirmations, ConfirmationsHeld: sr.ConfirmationsHeld, Placement: f.Placement, Steps: len(sr.Steps)}
	final, ok := sr.Final()
	if !ok {
		return r
	}
	s := final.Step
	r.final = s
	r.P99Ms, r.Errors, r.ErrorRatio, r.SoldOutShare, r.MasterCPU, r.ReportDir = s.P99Ms, s.errors, s.ErrorRatio, s.SoldOutShare, s.MasterCPU, s.ReportDir
	r.Projection = project(s, f.Placement)
	return r
}

// project computes, from one measured step, the capacity with every master
// on its own core: server CPU per op = the masters' CPU over the load /
// the operations; one master with a core of its own serves 1 / that; the
// placement's ceiling multiplies it. nil when the CPU was not read.
func project(s capacityStep, pl *Placement) *reports.CapacityProjection {
	var server float64
	for _, m := range s.MasterCPU {
		server += m.CPUSecs
	}
	if server <= 0 || s.ops <= 0 || pl == nil || pl.Ceiling <= 0 {
		return nil
	}
	pr := &reports.CapacityProjection{ServerCPUPerOpUs: 1e6 * server / float64(s.ops), ClientCPUPerOpUs: 1e6 * s.ClientCPUSecs / float64(s.ops)}
	pr.PerMasterOpsPerS = 1e6 / pr.ServerCPUPerOpUs
	pr.OpsPerS = pr.PerMasterOpsPerS * pl.Ceiling
	pr.ClientCores = pr.OpsPerS * pr.ClientCPUPerOpUs / 1e6
	return pr
}

// relate sets the speed-ups of rows (one path) against the first row.
func relate(rows []capacityRow) {
	if len(rows) == 0 {
		return
	}
	base := rows[0]
	for i := range rows {
		r := &rows[i]
		if base.CapacityOpsPerS > 0 {
			r.Speedup = r.CapacityOpsPerS / base.CapacityOpsPerS
		}
		if base.Placement != nil && r.Placement != nil && base.Placement.Ceiling > 0 {
			r.CeilingSpeedup = r.Placement.Ceiling / base.Placement.Ceiling
		}
		if base.Projection != nil && r.Projection != nil && base.Projection.OpsPerS > 0 {
			r.Projection.Speedup = r.Projection.OpsPerS / base.Projection.OpsPerS
		}
	}
}

// masterCoresText is each master's CPU in cores, in address order, e.g.
// "0.91 0.04 0.05".
func masterCoresText(ms []MasterCPU) string {
	if len(ms) == 0 {
		return "-"
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%.2f", m.Cores)
	}
	return strings.Join(parts, " ")
}

// perMasterText is the buckets per master in address order (the order of
// the CPU column), e.g. "2 1 1".
func perMasterText(pl *Placement) string {
	if pl == nil {
		return "-"
	}
	addrs := make([]string, 0, len(pl.PerMaster))
	for a := range pl.PerMaster {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	parts := make([]string, len(addrs))
	for i, a := range addrs {
		parts[i] = fmt.Sprint(pl.PerMaster[a])
	}
	return strings.Join(parts, " ")
}

func writeCapacityTable(out io.Writer, p *Plan, co CapacityOptions, rows []capacityRow, note string) {
	fmt.Fprintf(out, "\ncompare --capacity %s: highest rate holding p99 <= %s (from the intended send), no drops, no failed invariant, errors <= %.1f%%; bisected to ±%.0f%%\n",
		p.Name, co.SloP99, co.MaxErrorRatio*100, co.Precision*100)
	fmt.Fprintln(out, "MEASURED (masters in address order)")
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "path\tbuckets\tcapacity ops/s\tbroke at\tconfirmed\tp99 ms\terrors\tSOLD_OUT\tmaster CPU (cores)\t"+spreadColumns+"\tbuckets/master\tceiling\tspeed-up\tceiling speed-up\t")
	for _, r := range rows {
		capText, broke := "none held", "-"
		if r.CapacityOpsPerS > 0 {
			capText = fmt.Sprintf("%.0f", r.CapacityOpsPerS)
		}
		if r.BrokeOpsPerS > 0 {
			broke = fmt.Sprintf("%.0f", r.BrokeOpsPerS)
		} else if r.CapacityOpsPerS > 0 {
			broke = "not reached"
		}
		ceiling := "-"
		if r.Placement != nil {
			ceiling = fmt.Sprintf("%.2fx", r.Placement.Ceiling)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d/%d\t%.2f\t%d\t%.0f%%\t%s\t%s\t%s\t%s\t%.2fx\t%.2fx\t\n", r.Path, r.Buckets, capText, broke,
			r.ConfirmationsHeld, r.Confirmations, r.P99Ms, r.Errors, 100*r.SoldOutShare, masterCoresText(r.MasterCPU), spreadOf(r.MasterCPU).columns(),
			perMasterText(r.Placement), ceiling, r.Speedup, r.CeilingSpeedup)
	}
	w.Flush()
	fmt.Fprintln(out, "PROJECTION (computed, not measured: each master on its own core; latency not modelled)")
	w = tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "path\tbuckets\tserver CPU µs/op\tclient CPU µs/op\tone master ops/s\tprojected ops/s\tclient cores needed\tprojected speed-up\t")
	for _, r := range rows {
		pr := r.Projection
		if pr == nil {
			fmt.Fprintf(w, "%s\t%d\t-\t-\t-\t-\t-\t-\t\n", r.Path, r.Buckets)
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%.1f\t%.1f\t%.0f\t%.0f\t%.1f\t%.2fx\t\n", r.Path, r.Buckets, pr.ServerCPUPerOpUs, pr.ClientCPUPerOpUs,
			pr.PerMasterOpsPerS, pr.OpsPerS, pr.ClientCores, pr.Speedup)
	}
	w.Flush()
	fmt.Fprintln(out, note)
}

// variantOf is the report section's view of a row.
func variantOf(r capacityRow) reports.CompareVariant {
	s := r.final
	v := reports.CompareVariant{Name: fmt.Sprintf("%d bucket(s), %s", r.Buckets, r.Path), Buckets: int(r.Buckets),
		Passed: r.CapacityOpsPerS > 0, Ops: s.ops, ThroughputOpsPerS: s.ThroughputOpsPerS, LatencyMs: s.latency,
		Outcomes: s.outcomes, Stock: s.stock, Path: r.Path}
	if r.ReportDir != "" {
		v.ReportFile = filepath.Join(r.ReportDir, "report.json")
	}
	vc := &reports.VariantCapacity{OpsPerS: r.CapacityOpsPerS, BrokeOpsPerS: r.BrokeOpsPerS, Confirmations: r.Confirmations,
		ConfirmationsHeld: r.ConfirmationsHeld, P99Ms: r.P99Ms, ErrorRatio: r.ErrorRatio, SoldOutShare: r.SoldOutShare,
		Speedup: r.Speedup, CeilingSpeedup: r.CeilingSpeedup, Projection: r.Projection, MasterCores: map[string]float64{}}
	for _, m := range r.MasterCPU {
		vc.MasterCores[m.Addr] = m.Cores
	}
	if r.Placement != nil {
		vc.BucketsPerMaster, vc.Spread, vc.Ceiling = r.Placement.PerMaster, r.Placement.Spread(), r.Placement.Ceiling
	}
	v.Capacity = vc
	return v
}
