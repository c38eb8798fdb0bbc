package compare

import (
	"fmt"
	"io"
	"seckill-harness/reports"
	"sort"
	"strings"
	"text/tabwriter"
)

// column is one column of a table: its heading and its cell of a row.
type column[T any] struct {
	head string
	cell func(T) string
}

// table is the one table writer of compare and capacity: the same columns
// as aligned text (text) and as Markdown (markdown).
type table[T any] struct {
	// title, when set, is printed on a line of its own above the table.
	title string
	cols  []column[T]
	// align is the tabwriter's flags: tabwriter.AlignRight for figures.
	align uint
}

func (t table[T]) heads() []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.head
	}
	return out
}

func (t table[T]) cells(r T) []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.cell(r)
	}
	return out
}

// text writes the table aligned, a cell per column, each ended by a tab.
func (t table[T]) text(out io.Writer, rows []T) {
	if t.title != "" {
		fmt.Fprintln(out, t.title)
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', t.align)
	fmt.Fprintln(w, strings.Join(t.heads(), "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(t.cells(r), "\t")+"\t")
	}
	w.Flush()
}

// markdown writes the table as a Markdown table (its title in bold above).
func (t table[T]) markdown(out io.Writer, rows []T) {
	if t.title != "" {
		fmt.Fprintf(out, "**%s**\n\n", t.title)
	}
	fmt.Fprintf(out, "| %s |\n|%s\n", strings.Join(t.heads(), " | "), strings.Repeat("---|", len(t.cols)))
	for _, r := range rows {
		fmt.Fprintf(out, "| %s |\n", strings.Join(t.cells(r), " | "))
	}
}

// view is how an axis's rows of one run per value are shown: the line
// printed after each run, the table after all of them, whether the
// heading and compare.json name the stock, and whether each value's
// settings are listed under the table.
type view struct {
	line  func(Row) string
	table table[Row]
	stock bool
	notes bool
}

// The cells of the views' tables.
func f0(v float64) string         { return fmt.Sprintf("%.0f", v) }
func f2(v float64) string         { return fmt.Sprintf("%.2f", v) }
func f3(v float64) string         { return fmt.Sprintf("%.3f", v) }
func d[N int | int64](v N) string { return fmt.Sprint(v) }

func secs(v float64) string {
	if v < 0 {
		return "never"
	}
	return fmt.Sprintf("%.2fs", v)
}

func verdictCell(r Row) string {
	if r.passed() {
		return "PASS"
	}
	return "FAIL " + strings.Join(r.FailedChecks, ",")
}

// spreadCols are the hottest master's CPU and the others' highest.
var spreadCols = []column[Row]{
	{"hot master cpu", func(r Row) string { return pct(r.CPUSpread, func(s *CPUSpread) float64 { return s.HotCPUPct }) }},
	{"other masters cpu (max)", func(r Row) string { return pct(r.CPUSpread, func(s *CPUSpread) float64 { return s.OthersMaxCPUPct }) }},
}

func pct(s *CPUSpread, v func(*CPUSpread) float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", v(s))
}

func cols(parts ...[]column[Row]) []column[Row] {
	var out []column[Row]
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var verdictCol = []column[Row]{{"verdict", verdictCell}}

func sellOutLine(r Row) string {
	return fmt.Sprintf("%d ops, %.0f ops/s, p99 %.2f ms, first bucket sold out at %.2fs", r.Ops, r.ThroughputOpsPerS, r.P99Ms, r.FirstSoldOutS)
}

// bucketView: per bucket count, throughput, latency, when the first and
// the last bucket sold out, the stock left elsewhere then, the SOLD_OUT
// answers given while stock was left, the final unsold stock and the
// masters' CPU spread.
var bucketView = view{line: sellOutLine, stock: true, table: table[Row]{align: tabwriter.AlignRight, cols: cols([]column[Row]{
	{"buckets", func(r Row) string { return fmt.Sprint(r.Buckets) }},
	{"ops/s", func(r Row) string { return f0(r.ThroughputOpsPerS) }},
	{"p50 ms", func(r Row) string { return f3(r.P50Ms) }},
	{"p99 ms", func(r Row) string { return f3(r.P99Ms) }},
	{"p99.9 ms", func(r Row) string { return f3(r.P999Ms) }},
	{"first sold out", func(r Row) string { return secs(r.FirstSoldOutS) }},
	{"all sold out", func(r Row) string { return secs(r.LastSoldOutS) }},
	{"unsold elsewhere then", func(r Row) string { return d(r.UnsoldAtFirst) }},
	{"SOLD_OUT while stock left", func(r Row) string { return fmt.Sprint(r.SoldOutWhileLeft) }},
	{"final unsold", func(r Row) string { return d(r.FinalUnsold) }},
}, spreadCols, verdictCol)}}

// poolView: per pool size, throughput, p99, the pool's waits (count,
// summed and mean time) and timeouts.
var poolView = view{line: sellOutLine, stock: true, table: table[Row]{align: tabwriter.AlignRight, cols: cols([]column[Row]{
	{"pool/node", func(r Row) string { return fmt.Sprint(r.PoolSize) }},
	{"ops/s", func(r Row) string { return f0(r.ThroughputOpsPerS) }},
	{"accepted/s", func(r Row) string { return f0(r.AcceptedPerS) }},
	{"p50 ms", func(r Row) string { return f3(r.P50Ms) }},
	{"p99 ms", func(r Row) string { return f3(r.P99Ms) }},
	{"pool waits", func(r Row) string { return d(r.PoolWaits) }},
	{"pool wait ms (sum)", func(r Row) string { return f0(r.PoolWaitMs) }},
	{"mean wait ms", func(r Row) string { return f3(r.PoolMeanWait) }},
	{"pool timeouts", func(r Row) string { return d(r.PoolTimeouts) }},
}, verdictCol)}}

// localSoldOutView: without and with the flag, the Redis calls after the
// sell-out and the answers given locally (what it saves) beside the false
// sold-out window after releases and the local answers given in it (what
// it costs).
var localSoldOutView = view{line: sellOutLine, stock: true, table: table[Row]{align: tabwriter.AlignRight, cols: cols([]column[Row]{
	{"variant", func(r Row) string { return r.Variant }},
	{"ops/s", func(r Row) string { return f0(r.ThroughputOpsPerS) }},
	{"p99 ms", func(r Row) string { return f3(r.P99Ms) }},
	{"Redis calls after sell-out", func(r Row) string { return d(r.lso().RedisCallsAfterSellOut) }},
	{"answered locally", func(r Row) string { return d(r.lso().AnsweredLocally) }},
	{"releases after sell-out", func(r Row) string { return d(r.lso().ReleasesAfterSellOut) }},
	{"sold again", func(r Row) string { return d(r.lso().Recovered) }},
	{"window p50 ms", func(r Row) string { return f0(r.lso().FalseSoldOutWindowMs.P50) }},
	{"window max ms", func(r Row) string { return f0(r.lso().FalseSoldOutWindowMs.Max) }},
	{"local answers in windows", func(r Row) string { return d(r.lso().FalseSoldOutAnswers) }},
	{"final unsold", func(r Row) string { return d(r.FinalUnsold) }},
}, verdictCol)}}

// variantView: per variant, the acknowledged and lost reservations, those
// lost although WAIT confirmed them, the NOREPLICAS refusals and the
// window they covered, p99, WAIT's p99 and throughput — the trade-off
// between the variants, their settings listed under the table.
var variantView = view{notes: true, table: table[Row]{cols: []column[Row]{
	{"variant", func(r Row) string { return r.Variant }},
	{"acks", func(r Row) string { return d(r.Accepted) }},
	{"lost acks", func(r Row) string {
		if r.report != nil {
			return r.report.LostAcksText()
		}
		return d(r.LostAcks)
	}},
	{"lost WAIT-confirmed", func(r Row) string { return ifWait(r, func() string { return d(*r.LostConfirmed) }, "no WAIT") }},
	{"NOREPLICAS", func(r Row) string { return d(r.NoReplicas) }},
	{"refused window", refusedWindow},
	{"p99 ms", func(r Row) string { return f2(r.P99Ms) }},
	{"WAIT p99 ms", func(r Row) string { return ifWait(r, func() string { return f2(*r.WaitP99Ms) }, "-") }},
	{"ops/s", func(r Row) string { return f0(r.ThroughputOpsPerS) }},
	{"verdict", verdictCell},
}}, line: func(r Row) string {
	return fmt.Sprintf("%d lost acks, %d NOREPLICAS, p99 %.2f ms, %.0f ops/s", r.LostAcks, r.NoReplicas, r.P99Ms, r.ThroughputOpsPerS)
}}

func ifWait(r Row, cell func() string, none string) string {
	if r.LostConfirmed == nil {
		return none
	}
	return cell()
}

func refusedWindow(r Row) string {
	if r.NoReplicas == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fs–%.2fs (%.2fs)", r.RefusedFromS, r.RefusedToS, r.RefusedToS-r.RefusedFromS)
}

// measuredTable is compare --capacity's table of what was measured at
// each value's capacity rate (masters in address order).
var measuredTable = table[Row]{title: "MEASURED (masters in address order)", align: tabwriter.AlignRight, cols: cols([]column[Row]{
	{"path", func(r Row) string { return r.Path }},
	{"buckets", func(r Row) string { return fmt.Sprint(r.Buckets) }},
	{"capacity ops/s", func(r Row) string { return ifHeld(r, f0(r.CapacityOpsPerS), "none held") }},
	{"broke at", brokeAt},
	{"bound by", func(r Row) string { return ifElse(r.BoundBy != "", r.BoundBy, "-") }},
	{"confirmed", func(r Row) string { return fmt.Sprintf("%d/%d", r.ConfirmationsHeld, r.Confirmations) }},
	{"p99 ms", func(r Row) string { return f2(r.P99Ms) }},
	{"errors", func(r Row) string { return d(r.Errors) }},
	{"SOLD_OUT", func(r Row) string { return fmt.Sprintf("%.0f%%", 100*r.SoldOutShare) }},
	{"master CPU (cores)", func(r Row) string { return masterCoresText(r.MasterCPU) }},
}, spreadCols, []column[Row]{
	{"buckets/master", func(r Row) string { return perMasterText(r.Placement) }},
	{"ceiling", func(r Row) string {
		return ifPlaced(r.Placement, func(p *Placement) string { return fmt.Sprintf("%.2fx", p.Ceiling) })
	}},
	{"speed-up", func(r Row) string { return fmt.Sprintf("%.2fx", r.Speedup) }},
	{"ceiling speed-up", func(r Row) string { return fmt.Sprintf("%.2fx", r.CeilingSpeedup) }},
})}

func ifHeld(r Row, cell, none string) string {
	if r.CapacityOpsPerS > 0 {
		return cell
	}
	return none
}

func brokeAt(r Row) string {
	if r.BrokeOpsPerS > 0 {
		return f0(r.BrokeOpsPerS)
	}
	if r.StandBound {
		return "not reached (stand-bound)"
	}
	return ifHeld(r, "not reached", "-")
}

func ifPlaced(pl *Placement, cell func(*Placement) string) string {
	if pl == nil {
		return "-"
	}
	return cell(pl)
}

// projectionTable is compare --capacity's computed table: each master on
// its own core, from the measured server and client CPU per operation.
var projectionTable = table[Row]{title: "PROJECTION (computed, not measured: each master on its own core; latency not modelled)",
	align: tabwriter.AlignRight, cols: []column[Row]{
		{"path", func(r Row) string { return r.Path }},
		{"buckets", func(r Row) string { return fmt.Sprint(r.Buckets) }},
		{"server CPU µs/op", projected(func(p *projection) string { return fmt.Sprintf("%.1f", p.ServerCPUPerOpUs) })},
		{"client CPU µs/op", projected(func(p *projection) string { return fmt.Sprintf("%.1f", p.ClientCPUPerOpUs) })},
		{"one master ops/s", projected(func(p *projection) string { return f0(p.PerMasterOpsPerS) })},
		{"projected ops/s", projected(func(p *projection) string { return ifElse(p.LowerBound, ">= ", "") + f0(p.OpsPerS) })},
		{"client cores needed", projected(func(p *projection) string { return fmt.Sprintf("%.1f", p.ClientCores) })},
		{"projected speed-up", projected(func(p *projection) string { return fmt.Sprintf("%.2fx", p.Speedup) })},
	}}

// curveTable is capacity's curve: every step in the order run.
var curveTable = table[SearchStep[Step]]{align: tabwriter.AlignRight, cols: []column[SearchStep[Step]]{
	{"step", func(s SearchStep[Step]) string { return string(s.Phase) }},
	{"rate", func(s SearchStep[Step]) string { return f0(s.Step.Rate) }},
	{"achieved", func(s SearchStep[Step]) string { return f0(s.Step.ThroughputOpsPerS) }},
	{"p50 ms", func(s SearchStep[Step]) string { return f3(s.Step.P50Ms) }},
	{"p99 ms", func(s SearchStep[Step]) string { return f3(s.Step.P99Ms) }},
	{"p99.9 ms", func(s SearchStep[Step]) string { return f3(s.Step.P999Ms) }},
	{"service p99", func(s SearchStep[Step]) string { return f3(s.Step.ServiceP99Ms) }},
	{"late", func(s SearchStep[Step]) string { return d(s.Step.LateStarts) }},
	{"dropped", func(s SearchStep[Step]) string { return d(s.Step.Dropped) }},
	{"errors", func(s SearchStep[Step]) string { return fmt.Sprintf("%.2f%%", s.Step.ErrorRatio*100) }},
	{"hot master cpu", func(s SearchStep[Step]) string { return spreadCols[0].cell(Row{CPUSpread: spreadOf(s.Step.MasterCPU)}) }},
	{"other masters cpu (max)", func(s SearchStep[Step]) string { return spreadCols[1].cell(Row{CPUSpread: spreadOf(s.Step.MasterCPU)}) }},
	{"result", func(s SearchStep[Step]) string {
		return ifElse(s.Step.Held, "held", ifElse(s.Step.StandBound, "STAND-BOUND ", "BROKE ")+s.Step.Why)
	}},
	{"bound by", func(s SearchStep[Step]) string { return ifElse(s.Step.BoundBy != "", s.Step.BoundBy, "-") }},
}}

func ifElse(c bool, a, b string) string {
	if c {
		return a
	}
	return b
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

type projection = reports.CapacityProjection

// projected is a projection cell, "-" when a row has no projection.
func projected(cell func(*projection) string) func(Row) string {
	return func(r Row) string {
		if r.Projection == nil {
			return "-"
		}
		return cell(r.Projection)
	}
}

// lso is the row's local sold-out measures (zero when there are none).
func (r Row) lso() *reports.LocalSoldOut {
	if r.LocalSoldOut == nil {
		return &reports.LocalSoldOut{}
	}
	return r.LocalSoldOut
}
