package reports

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// withoutScripts is the page as a browser without JavaScript shows it:
// every <script …>…</script> cut out. (Plain string search: the regular
// expression it replaces took a fifth of the package's unit-tier time
// under the race detector on pages of a few hundred KB.)
func withoutScripts(page string) string {
	var b strings.Builder
	for {
		i := strings.Index(page, "<script")
		if i < 0 {
			break
		}
		j := strings.IndexByte(page[i:], '>')
		if j < 0 {
			break
		}
		k := strings.Index(page[i+j+1:], "</script>")
		if k < 0 {
			break
		}
		b.WriteString(page[:i])
		page = page[i+j+1+k+len("</script>"):]
	}
	b.WriteString(page)
	return b.String()
}

// reportData is the chart data the page carries for report.js.
func reportData(t *testing.T, page string) map[string]any {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="report-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no report-data script")
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("report-data: %v", err)
	}
	return d
}

func renderHTML(t *testing.T, rep *Report, h *Histograms) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep, h); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestHTMLSelfContainedAndReadableWithoutJS(t *testing.T) {
	rep, rec := syntheticFailoverRun()
	page := renderHTML(t, rep, rec.Histograms())

	if !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Errorf("page starts %.40q", page)
	}
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="default-src 'none';`) {
		t.Error("no CSP forbidding external loads")
	}
	static := withoutScripts(page)
	// Nothing is loaded from anywhere: no src=, no <link>, no url(...).
	if m := regexp.MustCompile(`(?i)(\ssrc\s*=|<link\b|url\()`).FindString(static); m != "" {
		t.Errorf("the page loads something: %q", m)
	}
	if !strings.Contains(page, "Apache ECharts") || !strings.Contains(page, "echarts.init") {
		t.Error("ECharts or report.js not inlined")
	}
	if n := strings.Count(static, `data-chart="`); n != 3 || !strings.Contains(static, `data-charts="3"`) {
		t.Errorf("%d chart elements", n)
	}
	// Without JavaScript every figure is still in a table.
	for _, want := range []string{
		"FAIL (1 check failed: I6)", "failover-kill", "seed 7", "redis 7.0.15", "3 masters × 1 replica each (local), through toxiproxy",
		`<tr class="row-fail"><td class="mono">I6</td><td>no_lost_acks</td><td class="st-fail">fail</td>`,
		"2 acknowledged reservations are missing from Redis | after the failover", "r7k2m4q9x1c8v5b3n6z0w2e4t1",
		"<strong>failover — failover:mode=kill,at=4s,for=3.5s</strong>", "recovery_ms", "2004.5",
		"Failover election won: I&#39;m the new master.",
		"during failover", "Per-second figures (12 s)", "CLUSTERDOWN", "<td>p99 &lt; 20 ms in baseline</td>",
		"<noscript>",
	} {
		if !strings.Contains(static, want) {
			t.Errorf("static page lacks %q", want)
		}
	}
	if strings.Contains(static, `id="compare"`) || strings.Contains(static, `id="capacity"`) {
		t.Error("compare/capacity sections without data")
	}

	d := reportData(t, page)
	faults := d["faults"].([]any)
	if len(faults) != 1 || faults[0].(map[string]any)["from"] != 4.0 || faults[0].(map[string]any)["to"] != 7.5 {
		t.Errorf("fault windows %v", faults)
	}
	ts := d["ts"].(map[string]any)
	if n := len(ts["p99"].([]any)); n != len(rep.Timeseries) {
		t.Errorf("%d seconds of p99", n)
	}
	dists := d["dists"].([]any)
	if len(dists) != 5 { // whole run, 3 phases, service
		t.Errorf("%d distributions", len(dists))
	}
	last := dists[0].(map[string]any)["points"].([]any)
	top, prev := last[len(last)-1].([]any), last[len(last)-2].([]any)
	if top[2] != 100.0 || top[0] != max(float64(rep.Totals.Ops), prev[0].(float64)) || top[1] != rep.LatencyMs.Max {
		t.Errorf("the max is plotted at %v (before it %v)", top, prev)
	}
	if len(page) > 900_000 {
		t.Errorf("page is %d bytes", len(page))
	}
}

func TestHTMLOptionalSectionsAndFallbacks(t *testing.T) {
	rep, _ := syntheticFailoverRun()
	withCompareAndCapacity(rep)
	page := renderHTML(t, rep, nil)
	static := withoutScripts(page)
	for _, want := range []string{`id="compare"`, `data-chart="compare"`, "16 buckets", `id="capacity"`,
		`data-chart="capacity"`, "<strong>24000 ops/s</strong>", `data-charts="5"`,
		"No histograms were saved with this run"} {
		if !strings.Contains(static, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	d := reportData(t, page)
	if d["compare"] == nil || d["capacity"] == nil {
		t.Error("compare/capacity data missing")
	}
	// The distribution falls back on the report's percentiles.
	if n := len(d["dists"].([]any)[0].(map[string]any)["points"].([]any)); n != 5 {
		t.Errorf("fallback distribution has %d points", n)
	}

	// A failed invariant the scenario waives is shown as such.
	rep.Invariants[0].Status, rep.Invariants[0].Waived = StatusFail, true
	waived := withoutScripts(renderHTML(t, rep, nil))
	if !strings.Contains(waived, `<td class="st-waived">fail (waived)</td>`) || !strings.Contains(waived, "1 failed invariant waived by the scenario") {
		t.Error("waived invariant not shown")
	}
	var md bytes.Buffer
	_ = WriteMarkdown(&md, rep)
	if !strings.Contains(md.String(), "| ⚠️ fail (waived) | I1 |") {
		t.Errorf("summary.md: waived invariant not shown")
	}

	// The same fault window from two merged runs is drawn once.
	rep.Faults = append(rep.Faults, rep.Faults[0])
	if f := reportData(t, renderHTML(t, rep, nil))["faults"].([]any); len(f) != 1 {
		t.Errorf("%d fault windows for one duplicated fault", len(f))
	}

	// An empty report still renders, with no chart.
	empty := renderHTML(t, &Report{}, nil)
	if !strings.Contains(empty, `data-charts="0"`) || !strings.Contains(empty, "No invariant was checked.") {
		t.Errorf("empty report page:\n%.500s", withoutScripts(empty))
	}
}

func TestHTMLEscapesReportText(t *testing.T) {
	rep, _ := syntheticFailoverRun()
	rep.Scenario = `<script>alert(1)</script>`
	rep.Invariants[0].Detail = `</script><img src=x onerror=alert(1)>`
	rep.Faults[0].Evidence["x"] = "</script><b>"
	page := renderHTML(t, rep, nil)
	if strings.Contains(page, "<script>alert(1)") || strings.Contains(page, "<img src=x") || strings.Contains(page, "</script><b>") {
		t.Error("report text is not escaped")
	}
	reportData(t, page) // the JSON is intact
}

func TestReportJSONOptionalSections(t *testing.T) {
	rep, _ := syntheticFailoverRun()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"compare"`) || strings.Contains(string(b), `"capacity"`) || strings.Contains(string(b), `"sources"`) {
		t.Error("absent sections must be omitted")
	}
	rep.Compare = &CompareResult{Variants: []CompareVariant{{Name: "1 bucket"}}}
	rep.Capacity = &CapacityResult{}
	b, _ = json.Marshal(rep)
	for _, want := range []string{`"compare":{"dimension":"","variants":[{"name":"1 bucket"`, `"buckets":[]`,
		`"outcomes":{"ACCEPTED":0,"ERROR":0,"SOLD_OUT":0,"UNKNOWN":0}`, `"capacity":{"target_p99_ms":0,"max_rate_ops_per_s":0,"steps":[]}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := withCompareAndCapacity(rep).WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Compare.Variants) != 3 || back.Compare.Variants[2].Stock.Buckets[15].Bucket != 15 ||
		back.Capacity.MaxRateOpsPerS != 24000 || len(back.Capacity.Steps) != 7 {
		t.Errorf("round trip: %+v %+v", back.Compare, back.Capacity)
	}
}

func TestWriteMarkdown(t *testing.T) {
	rep, _ := syntheticFailoverRun()
	withCompareAndCapacity(rep)
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, rep); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"## ❌ FAIL (1 check failed: I6) — seckill-harness `failover-kill` (seed 7)",
		"| ops | ops/s | p50 ms | p99 ms |",
		"| ❌ **fail** | I6 | no\\_lost\\_acks | 2 acknowledged reservations are missing from Redis \\| after the failover |",
		"| ➖ skip | I9 | liveness |",
		"| ✅ pass | p99 &lt; 20 ms in baseline | 1.2 ms | 20 ms |",
		"| failover (failover:mode=kill,at=4s,for=3.5s) | 127.0.0.1:7001 | 4.0 s | 7.5 s |",
		"recovery\\_ms=2004.5",
		"| during failover | 4.0–7.5 |",
		"| 16 buckets | 16 |",
		"highest rate meeting p99 ≤ 20 ms: **24000 ops/s**",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	if strings.Contains(md, "Failover election won") {
		t.Error("bulky evidence (logs) belongs in the HTML, not the summary")
	}
	if n := len(md); n > 8000 {
		t.Errorf("summary.md is %d bytes: too long for a job summary", n)
	}
	// A passing run.
	buf.Reset()
	if err := WriteMarkdown(&buf, &Report{Scenario: "smoke", Passed: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "## ✅ PASS — seckill-harness `smoke`") {
		t.Errorf("%s", buf.String())
	}
	if err := WriteMarkdown(failWriter{}, rep); err == nil {
		t.Error("write errors must be returned")
	}
}

func TestWriteTextOptionalSectionsAndFiles(t *testing.T) {
	rep, _ := syntheticFailoverRun()
	withCompareAndCapacity(rep)
	rep.HlogFile, rep.HTMLFile = HlogFileName, HTMLFileName
	rep.Sources = []Source{{Label: "gen1"}, {Label: "gen2"}}
	var buf bytes.Buffer
	if err := WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hlog      latency.hlog\n", "html      report.html\n", "merged    2 runs: gen1, gen2\n",
		"COMPARE BUCKETS  BUCKETS", "16 buckets            16    2000.0      1.200     985       7  PASS\n",
		"capacity: highest passing rate 24000 ops/s (target p99 20 ms)\n", "   28000    27472.5"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}

// A compare --capacity shows, per variant, the measured capacity with its
// placement, and the projection in a table of its own, labelled as
// computed; a fixed-load compare shows neither.
func TestHTMLCompareCapacityKeepsProjectionApart(t *testing.T) {
	rep, _ := syntheticFailoverRun()
	withCompareAndCapacity(rep)
	fixed := withoutScripts(renderHTML(t, rep, nil))
	if strings.Contains(fixed, "Capacity per variant") || strings.Contains(fixed, "Projection (computed") {
		t.Fatal("capacity tables on a fixed-load compare")
	}
	rep.Compare.SloP99Ms, rep.Compare.Note = 20, "2 CPUs shared"
	for i := range rep.Compare.Variants {
		v := &rep.Compare.Variants[i]
		v.Path = "sold-out"
		v.Capacity = &VariantCapacity{OpsPerS: 1000 * float64(i+7), BrokeOpsPerS: 1000*float64(i+7) + 300, Confirmations: 1,
			ConfirmationsHeld: 1, SoldOutShare: 0.9, Spread: []string{"1/0/0", "2/1/1", "6/5/5"}[i],
			MasterCores: map[string]float64{"127.0.0.1:7000": 0.93}, Ceiling: []float64{1, 2, 16.0 / 6}[i],
			Speedup: float64(i+7) / 7, Projection: &CapacityProjection{OpsPerS: 54321 + float64(i), Speedup: 1}}
	}
	page := withoutScripts(renderHTML(t, rep, nil))
	measured, projected, ok := strings.Cut(page[strings.Index(page, "Capacity per variant"):], "Projection (computed, not measured)")
	if !ok {
		t.Fatal("no projection table")
	}
	for _, want := range []string{"7000", "7300", "2/1/1", "2.00×", "90%", "127.0.0.1:7000: 0.93", "sold-out", "2 CPUs shared"} {
		if !strings.Contains(measured+projected, want) {
			t.Errorf("capacity tables lack %q", want)
		}
	}
	if strings.Contains(measured, "54321") || !strings.Contains(projected, "54321") {
		t.Error("the projected rate must be in the projection table only")
	}
}

// The pipeline section: the final stage's orders/s, order-transaction p99
// and the hot stock row's UPDATE p99, then every divergence class of the
// reconciliation with its final and during-load counts and its ids.
// Absent without a pipeline.
func TestHTMLPipelineSection(t *testing.T) {
	rep, rec := syntheticFailoverRun()
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, rec.Histograms()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="pipeline"`) {
		t.Fatal("pipeline section without a pipeline")
	}
	b.Reset()
	if err := WriteHTML(&b, withPipeline(rep), rec.Histograms()); err != nil {
		t.Fatal(err)
	}
	page := withoutScripts(b.String())
	i := strings.Index(page, `<section id="pipeline">`)
	if i < 0 {
		t.Fatal("no pipeline section")
	}
	sec := page[i : i+strings.Index(page[i:], "</section>")]
	for _, want := range []string{
		"orders/s (first to last created, 5.9 s)</td><td class=\"num\">30.2",
		"order transaction p50 / p99 / max (ms)</td><td class=\"num\">11.20 / 580.6 / 711.7",
		"hot stock row: conditional UPDATE p50 / p99 (ms, its lock wait)</td><td class=\"num\">0.300 / 54.5",
		"local throwaway postgres://seckill@127.0.0.1:5999/postgres",
		"31 passes; the final pass compared 338 reservations with 180 orders: 4 divergences, 1 repaired",
		`<td class="mono">order_reservation_lost</td><td class="num">2</td><td class="num">2</td>`,
		`<td class="mono">accepted_reservation_lost</td><td class="num">1</td><td class="num">0</td>`,
		`<td class="mono">order_not_fenced</td><td class="num">0</td><td class="num">2</td>`,
		"lostwithorderaaaaaaaaaaaa1", "lostwithorderaaaaaaaaaaaa2", "ord-lostwithorderaaaaaaaaaaaa2", "lostwithoutorderbbbbbbbbb1",
		"[ENQUEUED]", "(repaired)", "redis_lost_with_order",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("pipeline section lacks %q", want)
		}
	}
}

// withoutScripts cuts what the regular expression
// (?s)<script[^>]*>.*?</script> matches, and nothing else.
func TestWithoutScriptsCutsWhatTheExpressionMatches(t *testing.T) {
	re := regexp.MustCompile(`(?s)<script[^>]*>.*?</script>`)
	for _, page := range []string{
		"", "plain", "a<script>x</script>b",
		"<script type=\"application/json\" id=\"d\">{\"a\":\"<b>\"}</script><p>2</p><script src=y>\n1\n</script>z",
		"<script>unclosed", "<script", "x<script>a</script><script>b", "<scripts>not a tag but matched</script>!",
	} {
		if got, want := withoutScripts(page), re.ReplaceAllString(page, ""); got != want {
			t.Errorf("withoutScripts(%q) = %q, want %q", page, got, want)
		}
	}
}
