package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner"
)

// compareRow is one bucket count of a compare run.
type compareRow struct {
	Buckets           uint32    `json:"buckets"`
	Passed            bool      `json:"passed"`
	Ops               int64     `json:"ops"`
	ThroughputOpsPerS float64   `json:"throughput_ops_per_s"`
	AcceptedPerS      float64   `json:"accepted_per_s"`
	P50Ms             float64   `json:"p50_ms"`
	P99Ms             float64   `json:"p99_ms"`
	P999Ms            float64   `json:"p999_ms"`
	SoldOutAtS        []float64 `json:"sold_out_at_s"` // per bucket; -1 never
	FirstSoldOutS     float64   `json:"first_sold_out_s"`
	LastSoldOutS      float64   `json:"last_sold_out_s"`
	UnsoldAtFirst     int64     `json:"unsold_when_first_sold_out"`
	SoldOutWhileLeft  int       `json:"sold_out_answers_while_stock_left"`
	FinalUnsold       int64     `json:"final_unsold"`
	ReportDir         string    `json:"report_dir"`
	FailedChecks      []string  `json:"failed_checks,omitempty"`
	// MasterCPU is each master's mean CPU over the load (the servers
	// section's per-second INFO cpu deltas); CPUSpread its hottest
	// master against the others.
	MasterCPU []MasterCPU `json:"master_cpu,omitempty"`
	CPUSpread *CPUSpread  `json:"master_cpu_spread,omitempty"`
}

// DefaultCompareBuckets are the bucket counts compare runs when none are
// given: one slot, the usual split, and 32 buckets (the widest split a
// pre-sale test is asked to try) — enough to show how the partial sell-out
// grows with the split.
const DefaultCompareBuckets = "1,16,32"

// ParseBuckets reads "1,16,32".
func ParseBuckets(s string) ([]uint32, error) {
	var out []uint32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("--buckets %q: want positive counts separated by commas, e.g. %s", s, DefaultCompareBuckets)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

// runCompare runs the same plan once per bucket count (each on a fresh
// cluster, same seed, same load) and prints the rows side by side.
func Compare(ctx context.Context, log io.Writer, p *Plan, counts []uint32, out Output) (passed bool, err error) {
	for _, n := range counts {
		if p.Stock > 0 && int64(n) > p.Stock {
			return false, fmt.Errorf("--buckets: %d buckets for stock %d: every bucket needs at least one unit", n, p.Stock)
		}
	}
	var rows []compareRow
	var variants []reports.CompareVariant
	failed := false
	began := time.Now()
	for _, n := range counts {
		q := *p
		q.Buckets = n
		q.Name = fmt.Sprintf("%s (%d buckets)", p.Name, n)
		sub := out
		sub.Dir = filepath.Join(out.Dir, fmt.Sprintf("buckets-%d", n))
		fmt.Fprintf(log, "\n=== %d bucket(s) ===\n", n)
		oc, err := Execute(ctx, &q, sub)
		if err != nil {
			return false, fmt.Errorf("%d buckets: %w", n, err)
		}
		if oc.RunErr != nil {
			return false, oc.Interrupted()
		}
		rows = append(rows, compareRowOf(n, oc, sub.Dir))
		variants = append(variants, reports.CompareVariant{Name: fmt.Sprintf("%d bucket(s)", n), Buckets: int(n),
			Passed: oc.Report.Passed, Ops: oc.Report.Totals.Ops, ThroughputOpsPerS: oc.Report.ThroughputOpsPerS,
			LatencyMs: oc.Report.LatencyMs, Outcomes: oc.Report.Totals.Outcomes, Stock: oc.Report.Stock,
			ReportFile: filepath.Join(sub.Dir, "report.json")})
		r := rows[len(rows)-1]
		fmt.Fprintf(log, "%s: %d ops, %.0f ops/s, p99 %.2f ms, first bucket sold out at %.2fs, verdict %s\n",
			q.Name, r.Ops, r.ThroughputOpsPerS, r.P99Ms, r.FirstSoldOutS, oc.Report.Verdict())
		failed = failed || !oc.Report.Passed
	}
	writeCompareTable(log, p, rows)
	if err := writeJSONFile(filepath.Join(out.Dir, "compare.json"), map[string]any{"scenario": p.Name, "stock": p.Stock, "rows": rows}); err != nil {
		return false, err
	}
	sum := &reports.Report{Scenario: p.Name + " — compare by bucket count", Seed: p.Phases[0].Config.Seed, Passed: !failed,
		StartedAt: began, DurationS: time.Since(began).Seconds(), Compare: &reports.CompareResult{Dimension: "buckets", Variants: variants}}
	if err := writeHTMLFile(filepath.Join(out.Dir, "report.html"), sum); err != nil {
		return false, err
	}
	fmt.Fprintf(log, "compare: %s, %s\n", filepath.Join(out.Dir, "compare.json"), filepath.Join(out.Dir, "report.html"))
	if failed {
		return false, nil
	}
	return true, nil
}

func compareRowOf(n uint32, oc *Outcome, dir string) compareRow {
	rep := oc.Report
	so := runner.AnalyzeSellOut(oc.Result.History, oc.Activity)
	r := compareRow{Buckets: n, Passed: rep.Passed, Ops: rep.Totals.Ops, ThroughputOpsPerS: rep.ThroughputOpsPerS,
		P50Ms: rep.LatencyMs.P50, P99Ms: rep.LatencyMs.P99, P999Ms: rep.LatencyMs.P999,
		FirstSoldOutS: -1, LastSoldOutS: -1, UnsoldAtFirst: so.UnsoldAtFirstTotal,
		SoldOutWhileLeft: so.SoldOutAnswersWhileStockLeft, FinalUnsold: rep.Stock.Available, ReportDir: dir,
		FailedChecks: rep.FailedChecks()}
	r.MasterCPU = mastersCPUOfServers(rep.Servers, rep.DurationS)
	r.CPUSpread = spreadOf(r.MasterCPU)
	if rep.DurationS > 0 {
		r.AcceptedPerS = float64(rep.Totals.Outcomes["ACCEPTED"]) / rep.DurationS
	}
	all := true
	for _, t := range so.SoldOutAt {
		if t < 0 {
			r.SoldOutAtS = append(r.SoldOutAtS, -1)
			all = false
			continue
		}
		r.SoldOutAtS = append(r.SoldOutAtS, t.Seconds())
		r.LastSoldOutS = max(r.LastSoldOutS, t.Seconds())
	}
	if !all {
		r.LastSoldOutS = -1
	}
	if so.FirstSoldOut >= 0 {
		r.FirstSoldOutS = so.FirstSoldOut.Seconds()
	}
	return r
}

func writeCompareTable(out io.Writer, p *Plan, rows []compareRow) {
	secs := func(v float64) string {
		if v < 0 {
			return "never"
		}
		return fmt.Sprintf("%.2fs", v)
	}
	fmt.Fprintf(out, "\ncompare %s: stock %d, same seed and load per bucket count\n", p.Name, p.Stock)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "buckets\tops/s\tp50 ms\tp99 ms\tp99.9 ms\tfirst sold out\tall sold out\tunsold elsewhere then\tSOLD_OUT while stock left\tfinal unsold\t"+spreadColumns+"\tverdict\t")
	for _, r := range rows {
		v := "PASS"
		if !r.Passed {
			v = "FAIL " + strings.Join(r.FailedChecks, ",")
		}
		fmt.Fprintf(w, "%d\t%.0f\t%.3f\t%.3f\t%.3f\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t\n", r.Buckets, r.ThroughputOpsPerS, r.P50Ms, r.P99Ms, r.P999Ms,
			secs(r.FirstSoldOutS), secs(r.LastSoldOutS), r.UnsoldAtFirst, r.SoldOutWhileLeft, r.FinalUnsold, r.CPUSpread.columns(), v)
	}
	w.Flush()
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
