package reports

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// The HTML report is one self-contained file: the page, its CSS, the
// Apache ECharts library (assets/echarts.common.min.js, the unmodified
// dist file of the npm package echarts 6.1.0, Apache-2.0, see
// assets/README.md) and a small script (assets/report.js) that turns the
// report's data into charts are all inlined. A Content-Security-Policy
// forbids every external load, so the page works offline and cannot leak.
//
// Without JavaScript the page keeps every figure: the charts are replaced
// by a note, and the tables (header, key figures, phases, faults with
// evidence, stock, invariants, assertions, and the per-second table behind
// a <details>) are plain HTML.

//go:embed assets/echarts.common.min.js
var echartsJS string

//go:embed assets/report.js
var reportJS string

//go:embed assets/pagekit.js
var pageKitJS string

// PageKitJS is the frame every chart page shares (assets/pagekit.js: the
// error banner and marks, seckillPage.draw); a page inlines it before its
// own script, in the same <script> element.
func PageKitJS() string { return pageKitJS }

// ChartLibraryJS is the embedded ECharts library (see above): every page
// the harness draws charts on (report.html, trend's page) inlines this one
// library, so there is one version to update and to test.
func ChartLibraryJS() string { return echartsJS }

// StyleCSS is report.html's style sheet, which trend's page shares (its
// .chart, table.data, .note, .js-errors and .nojs classes).
func StyleCSS() string { return reportCSS }

//go:embed assets/report.css
var reportCSS string

//go:embed assets/report.html.tmpl
var reportTemplateText string

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":     fmtMs,
	"pct":    func(p float64) string { return fmt.Sprintf("%.2f%%", p) },
	"f1":     func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"share":  func(ratio float64, digits int) string { return fmt.Sprintf("%.*f%%", digits, 100*ratio) },
	"counts": countsText,
	"status": func(s Status) string {
		if s == "" {
			return "-"
		}
		return string(s)
	},
}).Parse(reportTemplateText))

// WriteHTML writes the HTML report of r. h supplies the percentile
// distributions (overall and per phase) and may be nil or partial (a run
// re-rendered from latency.hgrm has the overall latency only); without it
// the distribution chart shows the report's own percentiles. It returns
// the first error.
func WriteHTML(w io.Writer, r *Report, h *Histograms) error {
	v := buildHTMLView(r, h)
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("reports: html: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("reports: html: %w", err)
	}
	return nil
}

// fmtMs formats milliseconds with about four significant digits.
func fmtMs(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.1f", v)
	case v >= 10:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

type htmlView struct {
	R       *Report
	Title   string
	Verdict string
	Checks  string // "9 invariants (1 skipped) and 2 assertions checked"
	Pass    bool
	// Inconclusive: only inconclusive assertions kept the run from passing.
	Inconclusive bool
	// Unplanned names the unplanned events the scenario does not tolerate
	// (the verdict line's clause; "" for none).
	Unplanned string
	Meta      []kvView
	Cards     []cardView
	Outcomes  []outcomeRow
	Phases    []Phase
	Faults    []faultView
	Invs      []invView
	Asserts   []assertView
	Stock     Stock
	Seconds   []secondRow
	Sources   []Source

	Charts   chartsView
	Compare  *CompareResult
	Capacity *CapacityResult
	Servers  *serversView
	Pipeline *pipelineView

	Data      chartData
	Assets    pageAssets
	Generated string
}

// chartsView is which charts the page draws: Count of them in all (the
// page waits for that many to render), the time series and the latency
// distributions (with DistNote, "" for none).
type chartsView struct {
	Count      int
	Timeseries bool
	Dist       bool
	DistNote   string
}

// pageAssets are the page's embedded script and style.
type pageAssets struct {
	ECharts template.JS
	Script  template.JS
	CSS     template.CSS
}

type kvView struct {
	Key, Value string
	Block      bool // a multi-line value (JSON)
	Mono       bool // a one-line JSON value
}

type cardView struct {
	Label, Value, Sub string
	Bad               bool
}

type outcomeRow struct {
	Name  string
	Count int64
	Pct   float64
}

type faultView struct {
	Index                      int
	Kind, Target, Params       string
	Injected, Healed, Duration string
	Bad                        bool
	Evidence                   []kvView
}

type invView struct {
	Invariant
	Evidence    []kvView
	Class, Text string // row/status class ("pass", "fail", "skip", "waived") and status text
	// Link is the drawing of the check's violation beside report.html
	// (the linearizability check's, Report.LinearizabilityFile); "" when none.
	Link string
}

type assertView struct {
	Assertion
	ObservedText, ThresholdText string
}

type secondRow struct {
	Second
	OutcomesText string
}

// chartData is what assets/report.js reads (JSON in the page).
type chartData struct {
	DurationS  float64         `json:"duration_s"`
	TargetRate float64         `json:"target_rate,omitempty"` // constant open-loop rate
	Faults     []faultWindow   `json:"faults"`
	Events     []eventMark     `json:"events,omitempty"`
	TS         *tsData         `json:"ts,omitempty"`
	Dists      []distSeries    `json:"dists,omitempty"`
	Compare    *CompareResult  `json:"compare,omitempty"`
	Capacity   *CapacityResult `json:"capacity,omitempty"`
	Servers    *serversChart   `json:"servers,omitempty"`
}

type faultWindow struct {
	Label  string  `json:"label"`
	From   float64 `json:"from"`
	To     float64 `json:"to"`
	Healed bool    `json:"healed"`
}

// eventMark is one unplanned event on the time charts.
type eventMark struct {
	At        float64 `json:"at"`
	Label     string  `json:"label"`
	Tolerated bool    `json:"tolerated,omitempty"`
}

type tsData struct {
	X         []float64     `json:"x"` // middle of each second
	Ops       []int64       `json:"ops"`
	Completed []int64       `json:"completed"`
	Outcomes  []namedCounts `json:"outcomes"`
	P50       []*float64    `json:"p50"` // null: no operation that second
	P99       []*float64    `json:"p99"`
	P999      []*float64    `json:"p999"`
	Max       []*float64    `json:"max"`
	SvcP99    []*float64    `json:"svc_p99"`
}

type namedCounts struct {
	Name string  `json:"name"`
	Data []int64 `json:"data"`
}

type distSeries struct {
	Name    string       `json:"name"`
	Kind    string       `json:"kind"` // "latency" or "service"
	Overall bool         `json:"overall"`
	Points  [][3]float64 `json:"points"` // [1/(1-p), ms, percentile]
}

// outcomeOrder puts the well-known outcomes first.
var outcomeOrder = map[string]int{OutcomeAccepted: 0, OutcomeSoldOut: 1, OutcomeUnknown: 2, OutcomeError: 3}

func sortOutcomeNames(names []string) {
	sort.Slice(names, func(i, j int) bool {
		oi, iok := outcomeOrder[names[i]]
		oj, jok := outcomeOrder[names[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return names[i] < names[j]
	})
}

// buildHTMLView turns r (and h, for the latency distributions) into what
// the report.html template renders: header, outcome, fault, invariant and
// assertion rows, and the chart data assets/report.js draws.
func buildHTMLView(r *Report, h *Histograms) *htmlView {
	v := &htmlView{
		R:         r,
		Verdict:   r.Verdict(),
		Stock:     r.Stock,
		Phases:    r.Phases,
		Sources:   r.Sources,
		Compare:   r.Compare,
		Capacity:  r.Capacity,
		Assets:    pageAssets{ECharts: template.JS(echartsJS), Script: template.JS(pageKitJS + reportJS), CSS: template.CSS(reportCSS)},
		Generated: time.Now().UTC().Format(time.RFC3339),
	}
	v.Pass = v.Verdict == "PASS"
	v.Inconclusive = r.IsInconclusive()
	v.Unplanned = NameEvents("unplanned ", r.Untolerated())
	for _, e := range r.UnplannedEvents {
		v.Data.Events = append(v.Data.Events, eventMark{At: e.TimeS, Label: e.What + " " + e.Node, Tolerated: e.Tolerated})
	}
	v.Checks = checksLine(r)
	v.Title = fmt.Sprintf("%s — seckill-harness %s, seed %d", v.Verdict, orDash(r.Scenario), r.Seed)
	v.Meta = headerMeta(r)
	v.Cards = headerCards(r)
	v.Outcomes = outcomeRows(r)
	v.addFaults(r)
	v.Invs = invViews(r.Invariants, r.LinearizabilityFile)
	v.Asserts = assertViews(r.Assertions)
	v.addCharts(r, h)
	return v
}

// outcomeRows lists the run's outcomes, the well-known ones first (always
// present, even at zero), each with its share of all operations.
func outcomeRows(r *Report) []outcomeRow {
	names := make([]string, 0, len(r.Totals.Outcomes))
	for k := range withOutcomeKeys(r.Totals.Outcomes) {
		names = append(names, k)
	}
	sortOutcomeNames(names)
	var rows []outcomeRow
	for _, k := range names {
		n := r.Totals.Outcomes[k]
		pct := 0.0
		if r.Totals.Ops > 0 {
			pct = 100 * float64(n) / float64(r.Totals.Ops)
		}
		rows = append(rows, outcomeRow{Name: k, Count: n, Pct: pct})
	}
	return rows
}

// addFaults adds one fault row per planned fault and one chart window per
// distinct fault window (an unhealed fault reaches the end of the run; the
// same window reported by several merged runs is drawn once). The window
// list is never nil, so the page's JSON holds [] rather than null.
func (v *htmlView) addFaults(r *Report) {
	for i, f := range r.Faults {
		v.Faults = append(v.Faults, faultViewOf(i, f, r.DurationS))
		to, healed := f.HealedAtS, f.Healed || f.HealedAtS > 0
		if !healed || to < f.InjectedAtS {
			to = max(r.DurationS, f.InjectedAtS)
		}
		label := f.Kind
		if mode, ok := f.Params["mode"].(string); ok && mode != "" {
			label += " (" + mode + ")"
		}
		if !healed {
			label += " — not healed"
		}
		// The same window reported by several merged runs is drawn once.
		w := faultWindow{Label: label, From: f.InjectedAtS, To: to, Healed: healed}
		if i := slices.IndexFunc(v.Data.Faults, func(x faultWindow) bool {
			return x.Label == w.Label && math.Abs(x.From-w.From) < 0.05 && math.Abs(x.To-w.To) < 0.05
		}); i < 0 {
			v.Data.Faults = append(v.Data.Faults, w)
		}
	}
	if v.Data.Faults == nil {
		v.Data.Faults = []faultWindow{}
	}
}

// invViews gives each invariant its row class and status text: a waived or
// expected failure shows as "waived", an invariant without a status as
// "skip" with "-". A check whose evidence names drawing, the file of the
// run's drawing, links to it.
func invViews(invs []Invariant, drawing string) []invView {
	var out []invView
	for _, inv := range invs {
		iv := invView{Invariant: inv, Evidence: evidenceRows(inv.Evidence), Class: string(inv.Status), Text: string(inv.Status)}
		if d, _ := inv.Evidence["drawing"].(string); drawing != "" && d == drawing {
			iv.Link = drawing
		}
		if inv.Waived && inv.Status == StatusFail {
			iv.Class, iv.Text = "waived", "fail (waived)"
		}
		if inv.Expected != nil && inv.Expected.Met {
			iv.Class, iv.Text = "waived", "fail (expected)"
		}
		if iv.Class == "" {
			iv.Class, iv.Text = "skip", "-"
		}
		out = append(out, iv)
	}
	return out
}

// assertViews formats each assertion's observed value and threshold with
// its unit ("–" when it has no threshold).
func assertViews(asserts []Assertion) []assertView {
	var out []assertView
	for _, a := range asserts {
		av := assertView{Assertion: a, ObservedText: strings.TrimSpace(fmt.Sprintf("%.4g %s", a.Observed, a.Unit)), ThresholdText: "–"}
		if a.Threshold != nil {
			av.ThresholdText = strings.TrimSpace(fmt.Sprintf("%g %s", *a.Threshold, a.Unit))
		}
		out = append(out, av)
	}
	return out
}

// addCharts fills the chart data (time series, distributions, compare,
// capacity, pipeline, servers) and counts the charts the page draws. It
// clears v.Compare and v.Capacity when they have no rows, so their
// sections are not rendered empty.
func (v *htmlView) addCharts(r *Report, h *Histograms) {
	v.Data.DurationS = r.DurationS
	if r.Load.Shape == "constant" && r.Load.Mode == "open" {
		v.Data.TargetRate = r.Load.TargetRate
	}
	if len(r.Timeseries) > 0 {
		v.Charts.Timeseries = true
		v.Charts.Count += 2
		v.Data.TS = timeseriesData(r.Timeseries)
		for _, s := range r.Timeseries {
			v.Seconds = append(v.Seconds, secondRow{Second: s, OutcomesText: countsText(s.Outcomes)})
		}
		v.Data.DurationS = max(v.Data.DurationS, float64(len(r.Timeseries)))
	}
	v.Data.Dists, v.Charts.DistNote = distributions(r, h)
	if len(v.Data.Dists) > 0 {
		v.Charts.Dist = true
		v.Charts.Count++
	}
	if r.Compare != nil && len(r.Compare.Variants) > 0 {
		v.Data.Compare = r.Compare
		v.Charts.Count++
	} else {
		v.Compare = nil
	}
	if r.Capacity != nil && len(r.Capacity.Steps) > 0 {
		v.Data.Capacity = r.Capacity
		v.Charts.Count++
	} else {
		v.Capacity = nil
	}
	v.Pipeline = pipelineHTML(r.Pipeline)
	if v.Data.Servers, v.Servers = serversHTML(r.Servers); v.Servers != nil {
		v.Charts.Count += 2
		if len(v.Data.Servers.Lag) > 0 {
			v.Charts.Count++
		}
	}
}

// checksLine counts what was checked, by status.
func checksLine(r *Report) string {
	count := func(n int, skipped int, noun string) string {
		s := fmt.Sprintf("%d %s", n, noun)
		if n == 1 {
			s = strings.TrimSuffix(s, "s")
		}
		if skipped > 0 {
			s += fmt.Sprintf(" (%d skipped)", skipped)
		}
		return s
	}
	skippedInv, skippedAs, waived := 0, 0, 0
	for _, inv := range r.Invariants {
		if inv.Status == StatusSkip {
			skippedInv++
		}
		if inv.Waived && inv.Status == StatusFail {
			waived++
		}
	}
	for _, a := range r.Assertions {
		if a.Status == StatusSkip {
			skippedAs++
		}
	}
	line := count(len(r.Invariants), skippedInv, "invariants") + " and " +
		count(len(r.Assertions), skippedAs, "assertions") + " checked"
	if waived > 0 {
		line += fmt.Sprintf("; %d failed %s waived by the scenario", waived, plural(int64(waived), "invariant", "invariants"))
	}
	return line
}

func headerMeta(r *Report) []kvView {
	var m []kvView
	add := func(k, v string) {
		if v != "" {
			m = append(m, kvView{Key: k, Value: v})
		}
	}
	started := ""
	if !r.StartedAt.IsZero() {
		started = r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC") + ", "
	}
	add("run", fmt.Sprintf("%s%.2f s", started, r.DurationS))
	l := r.Load
	load := []string{strings.TrimSpace(l.Mode + " " + l.Shape)}
	if l.TargetRate > 0 {
		load = append(load, fmt.Sprintf("%g ops/s", l.TargetRate))
	}
	load = append(load, fmt.Sprintf("%d users", l.Users),
		fmt.Sprintf("stock %d in %d %s", l.Stock, l.Buckets, plural(int64(l.Buckets), "bucket", "buckets")))
	if l.Concurrency > 0 {
		load = append(load, fmt.Sprintf("%d workers", l.Concurrency))
	}
	if l.TimeoutMs > 0 {
		load = append(load, fmt.Sprintf("timeout %g ms", l.TimeoutMs))
	}
	add("load", strings.Join(load, " · "))
	topo := fmt.Sprintf("%d %s × %d %s each", r.Topology.Masters, plural(int64(r.Topology.Masters), "master", "masters"),
		r.Topology.ReplicasPerMaster, plural(int64(r.Topology.ReplicasPerMaster), "replica", "replicas"))
	if r.Topology.Provider != "" {
		topo += " (" + r.Topology.Provider + ")"
	}
	if r.Topology.Proxied {
		topo += ", through toxiproxy"
	}
	add("topology", topo)
	add("path", r.Path)
	add("system under test", r.SystemUnderTest.Line())
	if r.Service != nil {
		add("service", r.Service.Line())
	}
	var vers []string
	for _, kv := range [][2]string{
		{"harness", r.Versions.Harness}, {"redis", r.Versions.Redis},
		{"go-redis", r.Versions.GoRedis}, {"go", r.Versions.Go}, {"scripts", r.Versions.Scripts},
	} {
		if kv[1] != "" {
			vers = append(vers, kv[0]+" "+kv[1])
		}
	}
	add("versions", strings.Join(vers, " · "))
	return m
}

func headerCards(r *Report) []cardView {
	t := r.Totals
	perOp := ""
	if t.Ops > 0 && t.WireAttempts > 0 {
		perOp = fmt.Sprintf("%.3f sends / op", float64(t.WireAttempts)/float64(t.Ops))
	}
	cards := []cardView{
		{Label: "operations", Value: fmt.Sprint(t.Ops), Sub: perOp},
		{Label: "throughput", Value: fmt.Sprintf("%.0f/s", r.ThroughputOpsPerS)},
		{Label: "latency p50", Value: fmtMs(r.LatencyMs.P50) + " ms", Sub: "service " + fmtMs(r.ServiceTimeMs.P50) + " ms"},
		{Label: "latency p99", Value: fmtMs(r.LatencyMs.P99) + " ms", Sub: "service " + fmtMs(r.ServiceTimeMs.P99) + " ms"},
		{Label: "latency p99.9", Value: fmtMs(r.LatencyMs.P999) + " ms", Sub: "service " + fmtMs(r.ServiceTimeMs.P999) + " ms"},
		{Label: "latency max", Value: fmtMs(r.LatencyMs.Max) + " ms", Sub: "service " + fmtMs(r.ServiceTimeMs.Max) + " ms"},
		{Label: "unknown", Value: fmt.Sprint(r.Unknown.Total), Bad: r.Unknown.Unresolved > 0,
			Sub: fmt.Sprintf("%d executed · %d not", r.Unknown.Executed, r.Unknown.NotExecuted)},
		{Label: "lost acks", Value: r.LostAcksText(), Bad: r.LostAcks > 0, Sub: notJudged(r.LostAcksNotJudged)},
		{Label: "dropped / late", Value: fmt.Sprintf("%d / %d", t.Dropped, t.LateStarts), Bad: t.Dropped > 0},
	}
	return cards
}

func faultViewOf(i int, f Fault, runEnd float64) faultView {
	kind := f.Kind
	if f.Name != "" && f.Name != f.Kind {
		kind += " — " + f.Name
	}
	fv := faultView{Index: i, Kind: kind, Target: f.Target, Params: formatMap(f.Params),
		Injected: fmt.Sprintf("%.2f s", f.InjectedAtS), Evidence: evidenceRows(f.Evidence)}
	switch {
	case f.HealError != "":
		fv.Healed, fv.Bad = "heal failed: "+f.HealError, true
	case f.Healed || f.HealedAtS > 0:
		fv.Healed = fmt.Sprintf("%.2f s", f.HealedAtS)
		fv.Duration = fmt.Sprintf("%.2f s", f.HealedAtS-f.InjectedAtS)
	default:
		fv.Healed, fv.Bad = "not healed", true
	}
	return fv
}

// evidenceRows lists an evidence map by key: scalars inline, lists and
// objects as indented JSON.
func evidenceRows(m map[string]any) []kvView {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]kvView, 0, len(keys))
	for _, k := range keys {
		switch x := m[k].(type) {
		case nil:
			out = append(out, kvView{Key: k, Value: "null"})
		case string:
			out = append(out, kvView{Key: k, Value: x, Block: strings.Contains(x, "\n")})
		case float64:
			out = append(out, kvView{Key: k, Value: fmtNumber(x)})
		case bool, int, int64, int32, uint, uint64, float32:
			out = append(out, kvView{Key: k, Value: fmt.Sprint(x)})
		default:
			// Short values on one line, long ones indented.
			b, err := json.Marshal(x)
			if err != nil {
				out = append(out, kvView{Key: k, Value: fmt.Sprint(x)})
				continue
			}
			if len(b) > 100 {
				if ib, err := json.MarshalIndent(x, "", "  "); err == nil {
					out = append(out, kvView{Key: k, Value: string(ib), Block: true})
					continue
				}
			}
			out = append(out, kvView{Key: k, Value: string(b), Mono: true})
		}
	}
	return out
}

func fmtNumber(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.6g", x)
}

func countsText(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sortOutcomeNames(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return strings.Join(parts, " · ")
}

func timeseriesData(ts []Second) *tsData {
	d := &tsData{}
	all := map[string]bool{}
	for _, s := range ts {
		for k := range s.Outcomes {
			all[k] = true
		}
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sortOutcomeNames(names)
	for _, k := range names {
		d.Outcomes = append(d.Outcomes, namedCounts{Name: k, Data: make([]int64, len(ts))})
	}
	ptr := func(v float64, ok bool) *float64 {
		if !ok || v <= 0 {
			return nil
		}
		return &v
	}
	for i, s := range ts {
		d.X = append(d.X, float64(s.TS)+0.5)
		d.Ops = append(d.Ops, s.Ops)
		d.Completed = append(d.Completed, s.Completed)
		for j, k := range names {
			d.Outcomes[j].Data[i] = s.Outcomes[k]
		}
		has := s.Ops > 0
		d.P50 = append(d.P50, ptr(s.P50Ms, has))
		d.P99 = append(d.P99, ptr(s.P99Ms, has))
		d.P999 = append(d.P999, ptr(s.P999Ms, has))
		d.Max = append(d.Max, ptr(s.MaxMs, has))
		d.SvcP99 = append(d.SvcP99, ptr(s.ServiceP99Ms, has))
	}
	if d.Outcomes == nil {
		d.Outcomes = []namedCounts{}
	}
	return d
}

// distributions returns the percentile curves to plot: overall latency,
// each phase's latency, overall service time. Without histograms it falls
// back on the report's percentiles (five points).
func distributions(r *Report, h *Histograms) ([]distSeries, string) {
	var out []distSeries
	add := func(name, kind string, overall bool, pts []PercentilePoint) {
		if len(pts) == 0 {
			return
		}
		ds := distSeries{Name: name, Kind: kind, Overall: overall}
		last := 1.0
		for _, p := range pts {
			x := p.Inverse()
			if math.IsInf(x, 1) {
				// The max: plot it at "1 in N", N the total count.
				x = max(last, float64(p.Count))
			}
			last = x
			ds.Points = append(ds.Points, [3]float64{x, p.ValueMs, p.Percentile})
		}
		out = append(out, ds)
	}
	if h != nil && h.Latency != nil && h.Latency.TotalCount() > 0 {
		add("latency, whole run", "latency", true, DistributionOf(h.Latency))
		for _, p := range h.Phases {
			add("latency, "+p.Name, "latency", false, DistributionOf(p.Latency))
		}
		add("service time, whole run", "service", true, DistributionOf(h.Service))
		note := ""
		if h.Service == nil && len(h.Phases) == 0 {
			note = "Rebuilt from latency.hgrm (whole-run latency only): values between the listed percentiles are rounded up to the next one."
		}
		return out, note
	}
	fromReport := func(p Percentiles) []PercentilePoint {
		if p.Max == 0 {
			return nil
		}
		return []PercentilePoint{{Percentile: 50, ValueMs: p.P50}, {Percentile: 95, ValueMs: p.P95},
			{Percentile: 99, ValueMs: p.P99}, {Percentile: 99.9, ValueMs: p.P999},
			{Percentile: 100, ValueMs: p.Max, Count: max(r.Totals.Ops, 1000)}}
	}
	add("latency, whole run", "latency", true, fromReport(r.LatencyMs))
	for _, p := range r.Phases {
		add("latency, "+p.Name, "latency", false, fromReport(p.LatencyMs))
	}
	add("service time, whole run", "service", true, fromReport(r.ServiceTimeMs))
	return out, "No histograms were saved with this run: the curves join the report's five percentiles only."
}
