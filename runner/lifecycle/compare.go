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
	"seckill-harness/runner/checks"
	"seckill-harness/runner/sut"
)

// compareRow is one variant of a compare run (a bucket count, a pool
// size, the local sold-out flag off or on).
type compareRow struct {
	Variant           string    `json:"variant"`
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
	// Pool (compare over pool sizes): the pool per node, the waits for a
	// connection, their summed and mean time, and the pool timeouts.
	PoolSize     int     `json:"pool_size,omitempty"`
	PoolWaits    int64   `json:"pool_waits"`
	PoolWaitMs   float64 `json:"pool_wait_ms"`
	PoolMeanWait float64 `json:"pool_mean_wait_ms"`
	PoolTimeouts int64   `json:"pool_timeouts"`
	// LocalSoldOut (compare with and without the flag): what it saved and
	// what it cost, measured from the history (report.json's
	// local_soldout; without the flag the same measures of the history).
	LocalSoldOut *reports.LocalSoldOut `json:"local_soldout,omitempty"`
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

// ParsePoolSizes reads "4,16,64" (--pool-sizes).
func ParsePoolSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 31)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("--pool-sizes %q: want positive pool sizes (connections per node) separated by commas, e.g. 4,16,64", s)
		}
		out = append(out, int(n))
	}
	return out, nil
}

// CompareAxis is what a compare varies between its runs: one change of
// the plan per variant, everything else (seed, load, scenario) the same,
// each variant on a fresh cluster.
type CompareAxis struct {
	// Dimension names the axis in compare.json and report.json
	// ("buckets", "pool_size", "local_soldout").
	Dimension string
	// Title is the table's heading, after the scenario's name.
	Title    string
	Variants []CompareVariant
	// table prints the rows (nil: the bucket table).
	table func(w io.Writer, p *Plan, rows []compareRow)
}

// CompareVariant is one run of a compare: its label, its directory under
// the output, and the change it makes to the plan.
type CompareVariant struct {
	Label string
	Dir   string
	Apply func(*Plan)
}

// BucketAxis compares bucket counts (the default compare).
func BucketAxis(counts []uint32) CompareAxis {
	ax := CompareAxis{Dimension: "buckets", Title: "same seed and load per bucket count"}
	for _, n := range counts {
		ax.Variants = append(ax.Variants, CompareVariant{Label: fmt.Sprintf("%d bucket(s)", n), Dir: fmt.Sprintf("buckets-%d", n),
			Apply: func(q *Plan) { q.Buckets = n }})
	}
	return ax
}

// PoolSizeAxis compares the load client's pool sizes per node (the
// connections the workers share): on a hot slot a bigger pool does not
// raise throughput, it moves the queue from the pool into Redis.
func PoolSizeAxis(sizes []int) CompareAxis {
	ax := CompareAxis{Dimension: "pool_size", Title: "same seed and load per client pool size (connections per node)", table: writePoolTable}
	for _, n := range sizes {
		ax.Variants = append(ax.Variants, CompareVariant{Label: fmt.Sprintf("pool %d", n), Dir: fmt.Sprintf("pool-%d", n),
			Apply: func(q *Plan) { q.Cluster.PoolSize = n }})
	}
	return ax
}

// LocalSoldOutAxis compares the path without the local sold-out flag and
// with it at ttl: the Redis calls it saves after the sell-out against the
// undersell window it costs.
func LocalSoldOutAxis(ttl time.Duration) CompareAxis {
	return CompareAxis{Dimension: "local_soldout", Title: "same seed and load without and with the local sold-out flag", table: writeLocalSoldOutTable,
		Variants: []CompareVariant{
			{Label: "no flag", Dir: "local-soldout-off", Apply: func(q *Plan) { q.LocalSoldOut = sut.LocalSoldOutConfig{} }},
			{Label: "flag " + ttl.String(), Dir: "local-soldout-" + ttl.String(), Apply: func(q *Plan) { q.LocalSoldOut.TTL = ttl }},
		}}
}

// Compare runs the same plan once per bucket count (each on a fresh
// cluster, same seed, same load) and prints the rows side by side.
func Compare(ctx context.Context, log io.Writer, p *Plan, counts []uint32, out Output) (passed bool, err error) {
	for _, n := range counts {
		if p.Stock > 0 && int64(n) > p.Stock {
			return false, fmt.Errorf("--buckets: %d buckets for stock %d: every bucket needs at least one unit", n, p.Stock)
		}
	}
	return CompareOver(ctx, log, p, BucketAxis(counts), out)
}

// CompareOver runs the plan once per variant of the axis (each on a fresh
// cluster, same seed, same load), prints the rows side by side, and
// writes <out>/compare.json and <out>/report.html; each variant's reports
// go to <out>/<variant dir>/. passed is false when a variant failed.
func CompareOver(ctx context.Context, log io.Writer, p *Plan, axis CompareAxis, out Output) (passed bool, err error) {
	var rows []compareRow
	var variants []reports.CompareVariant
	failed := false
	began := time.Now()
	for _, v := range axis.Variants {
		q := *p
		v.Apply(&q)
		q.Name = fmt.Sprintf("%s (%s)", p.Name, v.Label)
		sub := out
		sub.Dir = filepath.Join(out.Dir, v.Dir)
		fmt.Fprintf(log, "\n=== %s ===\n", v.Label)
		oc, err := Execute(ctx, &q, sub)
		if err != nil {
			return false, fmt.Errorf("%s: %w", v.Label, err)
		}
		if oc.RunErr != nil {
			return false, oc.Interrupted()
		}
		r := compareRowOf(q.Buckets, oc, sub.Dir)
		r.Variant = v.Label
		if pl := oc.Report.Pool; pl != nil {
			r.PoolSize, r.PoolWaits, r.PoolWaitMs, r.PoolTimeouts = pl.Size, pl.Waits, pl.WaitMs, pl.Timeouts
			if pl.Waits > 0 {
				r.PoolMeanWait = pl.WaitMs / float64(pl.Waits)
			}
		}
		r.LocalSoldOut = oc.Report.LocalSoldOut
		if r.LocalSoldOut == nil && axis.Dimension == "local_soldout" {
			r.LocalSoldOut = checks.AnalyzeLocalSoldOut(oc.Result.History.All(), int(oc.Activity.Buckets), 0)
		}
		rows = append(rows, r)
		variants = append(variants, reports.CompareVariant{Name: v.Label, Buckets: int(q.Buckets),
			Passed: oc.Report.Passed, Ops: oc.Report.Totals.Ops, ThroughputOpsPerS: oc.Report.ThroughputOpsPerS,
			LatencyMs: oc.Report.LatencyMs, Outcomes: oc.Report.Totals.Outcomes, Stock: oc.Report.Stock,
			ReportFile: filepath.Join(sub.Dir, "report.json")})
		fmt.Fprintf(log, "%s: %d ops, %.0f ops/s, p99 %.2f ms, first bucket sold out at %.2fs, verdict %s\n",
			q.Name, r.Ops, r.ThroughputOpsPerS, r.P99Ms, r.FirstSoldOutS, oc.Report.Verdict())
		failed = failed || !oc.Report.Passed
	}
	fmt.Fprintf(log, "\ncompare %s: stock %d, %s\n", p.Name, p.Stock, axis.Title)
	table := axis.table
	if table == nil {
		table = writeCompareTable
	}
	table(log, p, rows)
	if err := writeJSONFile(filepath.Join(out.Dir, "compare.json"), map[string]any{"scenario": p.Name, "stock": p.Stock, "dimension": axis.Dimension, "rows": rows}); err != nil {
		return false, err
	}
	sum := &reports.Report{Scenario: p.Name + " — compare by " + strings.ReplaceAll(axis.Dimension, "_", " "), Seed: p.Phases[0].Config.Seed, Passed: !failed,
		StartedAt: began, DurationS: time.Since(began).Seconds(), Compare: &reports.CompareResult{Dimension: axis.Dimension, Variants: variants}}
	if err := writeHTMLFile(filepath.Join(out.Dir, "report.html"), sum); err != nil {
		return false, err
	}
	fmt.Fprintf(log, "compare: %s, %s\n", filepath.Join(out.Dir, "compare.json"), filepath.Join(out.Dir, "report.html"))
	return !failed, nil
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

// verdictOf is a row's verdict column.
func verdictOf(r compareRow) string {
	if r.Passed {
		return "PASS"
	}
	return "FAIL " + strings.Join(r.FailedChecks, ",")
}

// writePoolTable: per pool size, throughput, p99, the pool's waits (count,
// summed and mean time) and timeouts, and the errors they caused.
func writePoolTable(out io.Writer, _ *Plan, rows []compareRow) {
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "pool/node\tops/s\taccepted/s\tp50 ms\tp99 ms\tpool waits\tpool wait ms (sum)\tmean wait ms\tpool timeouts\tverdict\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%.0f\t%.0f\t%.3f\t%.3f\t%d\t%.0f\t%.3f\t%d\t%s\t\n", r.PoolSize, r.ThroughputOpsPerS, r.AcceptedPerS, r.P50Ms, r.P99Ms,
			r.PoolWaits, r.PoolWaitMs, r.PoolMeanWait, r.PoolTimeouts, verdictOf(r))
	}
	w.Flush()
}

// writeLocalSoldOutTable: without and with the flag, the Redis calls
// after the sell-out and the answers given locally (what it saves) beside
// the false sold-out window after releases and the local answers given in
// it (what it costs).
func writeLocalSoldOutTable(out io.Writer, _ *Plan, rows []compareRow) {
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "variant\tops/s\tp99 ms\tRedis calls after sell-out\tanswered locally\treleases after sell-out\tsold again\twindow p50 ms\twindow max ms\tlocal answers in windows\tfinal unsold\tverdict\t")
	for _, r := range rows {
		l := r.LocalSoldOut
		if l == nil {
			l = &reports.LocalSoldOut{}
		}
		fmt.Fprintf(w, "%s\t%.0f\t%.3f\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%d\t%d\t%s\t\n", r.Variant, r.ThroughputOpsPerS, r.P99Ms,
			l.RedisCallsAfterSellOut, l.AnsweredLocally, l.ReleasesAfterSellOut, l.Recovered, l.FalseSoldOutWindowMs.P50, l.FalseSoldOutWindowMs.Max,
			l.FalseSoldOutAnswers, r.FinalUnsold, verdictOf(r))
	}
	w.Flush()
}

func writeCompareTable(out io.Writer, p *Plan, rows []compareRow) {
	secs := func(v float64) string {
		if v < 0 {
			return "never"
		}
		return fmt.Sprintf("%.2fs", v)
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "buckets\tops/s\tp50 ms\tp99 ms\tp99.9 ms\tfirst sold out\tall sold out\tunsold elsewhere then\tSOLD_OUT while stock left\tfinal unsold\t"+spreadColumns+"\tverdict\t")
	for _, r := range rows {
		v := verdictOf(r)
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
