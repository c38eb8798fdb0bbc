package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// Column widths at which free text (details, evidence) is wrapped so the
// summary stays within 100 columns.
const (
	invDetailWidth    = 56
	faultTargetWidth  = 24
	faultEvidWidth    = 40
	assertNameWidth   = 34
	assertDetailWidth = 26
)

// WriteText writes the human summary of r, as printed after a run: header,
// totals and outcomes, latency vs service time, phases, faults, stock,
// unknown resolution and lost acks, invariants, assertions, and a final
// verdict line ("PASS" or "FAIL (n checks failed: I3, I6)", see
// Report.Verdict). Lines fit in 100 columns except for unusually long
// names; free text is wrapped. It returns the first write error.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	t := &textWriter{ew: ew}
	t.header(r)
	t.totals(r)
	t.latency(r)
	t.phases(r)
	t.faults(r)
	t.events(r)
	t.stock(r)
	t.checks(r)
	t.sections(r)
	t.baseline(r)
	t.servers(r)
	ew.printf("\n%s\n", r.VerdictLine())
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = fmt.Errorf("reports: text: %w", err)
	}
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}

type textWriter struct {
	ew  *errWriter
	tw  *tabwriter.Writer
	buf bytes.Buffer
}

// table starts a tabwriter table; end flushes it.
func (t *textWriter) table() *tabwriter.Writer {
	t.buf.Reset()
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t.tw
}

// end writes the table without the padding tabwriter leaves at the end of
// lines whose last cells are empty.
func (t *textWriter) end() {
	_ = t.tw.Flush() // cannot fail: it writes to a bytes.Buffer
	for _, l := range strings.SplitAfter(t.buf.String(), "\n") {
		if strings.HasSuffix(l, "\n") {
			l = strings.TrimRight(l[:len(l)-1], " ") + "\n"
		}
		t.ew.printf("%s", l)
	}
}

// row writes one logical table row whose cells may be wrapped over several
// lines: cell i of physical line j is cells[i][j] (empty when missing).
func (t *textWriter) row(cells ...[]string) {
	lines := 1
	for _, c := range cells {
		lines = max(lines, len(c))
	}
	for j := range lines {
		parts := make([]string, len(cells))
		for i, c := range cells {
			if j < len(c) {
				parts[i] = c[j]
			}
		}
		fmt.Fprintf(t.tw, "%s\n", strings.Join(parts, "\t"))
	}
}

func one(s string) []string { return []string{s} }

func (t *textWriter) header(r *Report) {
	e := t.ew
	e.printf("== seckill-harness: scenario %s, seed %d ==\n", orDash(r.Scenario), r.Seed)
	tw := t.table()
	var started []string
	if !r.StartedAt.IsZero() {
		started = append(started, r.StartedAt.UTC().Format(time.RFC3339))
	}
	started = append(started, fmt.Sprintf("duration %.2f s", r.DurationS))
	fmt.Fprintf(tw, "started\t%s\n", strings.Join(started, ", "))

	var vers []string
	for _, kv := range [][2]string{
		{"harness", r.Versions.Harness}, {"redis", r.Versions.Redis},
		{"go-redis", r.Versions.GoRedis}, {"go", r.Versions.Go}, {"scripts", r.Versions.Scripts},
	} {
		if kv[1] != "" {
			vers = append(vers, kv[0]+" "+kv[1])
		}
	}
	if len(vers) > 0 {
		fmt.Fprintf(tw, "versions\t%s\n", strings.Join(vers, ", "))
	}

	topo := fmt.Sprintf("%d %s, %d %s each",
		r.Topology.Masters, plural(int64(r.Topology.Masters), "master", "masters"),
		r.Topology.ReplicasPerMaster, plural(int64(r.Topology.ReplicasPerMaster), "replica", "replicas"))
	if r.Topology.Provider != "" {
		topo += " (" + r.Topology.Provider + ")"
	}
	fmt.Fprintf(tw, "topology\t%s\n", topo)
	if r.SystemUnderTest != nil {
		fmt.Fprintf(tw, "system under test\t%s\n", r.SystemUnderTest.Line())
	}
	if r.Service != nil {
		fmt.Fprintf(tw, "service\t%s\n", r.Service.Line())
	}

	l := r.Load
	load := []string{strings.TrimSpace(l.Mode + " " + l.Shape)}
	if l.TargetRate > 0 {
		load = append(load, fmt.Sprintf("target %g ops/s", l.TargetRate))
	}
	load = append(load, fmt.Sprintf("%d users", l.Users),
		fmt.Sprintf("stock %d in %d %s", l.Stock, l.Buckets, plural(int64(l.Buckets), "bucket", "buckets")))
	if l.Concurrency > 0 {
		load = append(load, fmt.Sprintf("%d workers", l.Concurrency))
	}
	if l.TimeoutMs > 0 {
		load = append(load, fmt.Sprintf("timeout %g ms", l.TimeoutMs))
	}
	fmt.Fprintf(tw, "load\t%s\n", strings.Join(load, ", "))
	if r.HistoryFile != "" {
		fmt.Fprintf(tw, "history\t%s\n", r.HistoryFile)
	}
	if r.HGRMFile != "" {
		fmt.Fprintf(tw, "hgrm\t%s\n", r.HGRMFile)
	}
	if r.HlogFile != "" {
		fmt.Fprintf(tw, "hlog\t%s\n", r.HlogFile)
	}
	if r.HTMLFile != "" {
		fmt.Fprintf(tw, "html\t%s\n", r.HTMLFile)
	}
	if len(r.Sources) > 0 {
		labels := make([]string, 0, len(r.Sources))
		for _, s := range r.Sources {
			labels = append(labels, s.Label)
		}
		fmt.Fprintf(tw, "merged\t%d runs: %s\n", len(r.Sources), strings.Join(labels, ", "))
	}
	t.end()
}

func (t *textWriter) totals(r *Report) {
	e := t.ew
	tot := r.Totals
	perOp := "-"
	if tot.Ops > 0 {
		perOp = fmt.Sprintf("%.3f", float64(tot.WireAttempts)/float64(tot.Ops))
	}
	e.printf("\nops %d, throughput %.1f ops/s, wire attempts %d (%s per op)\n",
		tot.Ops, r.ThroughputOpsPerS, tot.WireAttempts, perOp)
	late := fmt.Sprintf("late starts %d", tot.LateStarts)
	if tot.LateStartThresholdMs > 0 {
		late += fmt.Sprintf(" (> %g ms)", tot.LateStartThresholdMs)
	}
	e.printf("%s, dropped %d\n", late, tot.Dropped)
	if tot.PacerClock == "go-timer" {
		e.printf("WARNING: the pacer slept on Go timers (no timerfd here): they wake up to ~1 ms late, and the late starts above include that\n")
	}
	if c := tot.Clamped; c.Total() > 0 {
		e.printf("WARNING: %d durations clamped to [1 µs, 60 s] (latency %d low / %d high, service %d low / %d high)\n",
			c.Total(), c.LatencyLow, c.LatencyHigh, c.ServiceLow, c.ServiceHigh)
	}

	e.printf("\n")
	tw := t.table()
	fmt.Fprintf(tw, "OUTCOME\t%9s\t%8s\n", "COUNT", "%")
	for _, kv := range sortedCounts(withOutcomeKeys(tot.Outcomes)) {
		pct := "-"
		if tot.Ops > 0 {
			pct = fmt.Sprintf("%7.2f%%", 100*float64(kv.v)/float64(tot.Ops))
		}
		fmt.Fprintf(tw, "%s\t%9d\t%8s\n", kv.k, kv.v, pct)
	}
	t.end()

	if len(tot.Errors) > 0 {
		e.printf("\n")
		tw := t.table()
		fmt.Fprintf(tw, "ERROR CLASS\t%9s\n", "COUNT")
		for _, kv := range sortedCounts(tot.Errors) {
			fmt.Fprintf(tw, "%s\t%9d\n", kv.k, kv.v)
		}
		t.end()
	}
}

type kv struct {
	k string
	v int64
}

// sortedCounts orders counts by count descending, then name.
func sortedCounts(m map[string]int64) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].v != out[j].v {
			return out[i].v > out[j].v
		}
		return out[i].k < out[j].k
	})
	return out
}

func ms(v float64) string { return fmt.Sprintf("%9.3f", v) }

func (t *textWriter) latency(r *Report) {
	t.ew.printf("\n")
	tw := t.table()
	fmt.Fprintf(tw, "(ms)\t      p50\t      p95\t      p99\t    p99.9\t      max\n")
	for _, row := range []struct {
		name string
		p    Percentiles
	}{
		{"latency (from intended send)", r.LatencyMs},
		{"service time (from actual send)", r.ServiceTimeMs},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.name,
			ms(row.p.P50), ms(row.p.P95), ms(row.p.P99), ms(row.p.P999), ms(row.p.Max))
	}
	t.end()

	// The worst second by p99, to point at the interesting moment.
	worst := -1
	for i, s := range r.Timeseries {
		if s.Ops > 0 && (worst < 0 || s.P99Ms > r.Timeseries[worst].P99Ms) {
			worst = i
		}
	}
	if worst >= 0 {
		s := r.Timeseries[worst]
		t.ew.printf("worst second: t=%ds, %d ops, latency p99 %.3f ms, max %.3f ms, service p99 %.3f ms\n",
			s.TS, s.Ops, s.P99Ms, s.MaxMs, s.ServiceP99Ms)
	}
}

func (t *textWriter) phases(r *Report) {
	if len(r.Phases) == 0 {
		return
	}
	t.ew.printf("\n")
	tw := t.table()
	fmt.Fprintf(tw, "PHASE\tWINDOW s\t%7s\t%8s\t%9s\t%9s\t%9s\t%9s\t%9s\n",
		"OPS", "OPS/S", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "svc p99")
	for _, p := range r.Phases {
		fmt.Fprintf(tw, "%s\t%.1f-%.1f\t%7d\t%8.1f\t%9.3f\t%9.3f\t%9.3f\t%9.3f\t%9.3f\n",
			p.Name, p.StartS, p.EndS, p.Ops, p.ThroughputOpsPerS,
			p.LatencyMs.P50, p.LatencyMs.P99, p.LatencyMs.P999, p.LatencyMs.Max, p.ServiceTimeMs.P99)
	}
	t.end()
}

func (t *textWriter) faults(r *Report) {
	if len(r.Faults) == 0 {
		return
	}
	t.ew.printf("\n")
	t.table()
	t.row(one("FAULT"), one("TARGET"), one("INJECTED"), one("HEALED"), one("EVIDENCE"))
	for _, f := range r.Faults {
		kind := f.Kind
		if f.Name != "" && f.Name != f.Kind {
			kind += " (" + f.Name + ")"
		}
		healed := "NOT HEALED"
		switch {
		case f.HealError != "":
			healed = "HEAL FAILED"
		case f.Healed || f.HealedAtS > 0:
			healed = fmt.Sprintf("%.1fs", f.HealedAtS)
		}
		evid := wrap(formatMap(f.Evidence), faultEvidWidth)
		if f.HealError != "" {
			evid = append(evid, wrap("heal error: "+f.HealError, faultEvidWidth)...)
		}
		t.row(wrap(kind, 20), one(truncate(f.Target, faultTargetWidth)),
			one(fmt.Sprintf("%.1fs", f.InjectedAtS)), one(healed), evid)
	}
	t.end()
}

// events lists the unplanned events (report.json's unplanned_events).
func (t *textWriter) events(r *Report) {
	if len(r.UnplannedEvents) == 0 {
		return
	}
	t.ew.printf("\n")
	t.table()
	t.row(one("UNPLANNED EVENT"), one("AT"), one("NODE"), one("EVIDENCE"))
	for _, e := range r.UnplannedEvents {
		what := e.What
		if e.Tolerated {
			what += " (tolerated)"
		}
		at := fmt.Sprintf("%.1fs", e.TimeS)
		if e.DurationS > 0 {
			at += fmt.Sprintf("+%.1fs", e.DurationS)
		}
		t.row(one(what), one(at), one(truncate(e.Node, faultTargetWidth)), wrap(e.Evidence, faultEvidWidth))
	}
	t.end()
}

func (t *textWriter) stock(r *Report) {
	e := t.ew
	e.printf("\n")
	tw := t.table()
	fmt.Fprintf(tw, "STOCK\t%7s\t%9s\t%8s\t%8s\n", "INITIAL", "AVAILABLE", "RESERVED", "RELEASED")
	for _, b := range r.Stock.Buckets {
		fmt.Fprintf(tw, "bucket %d\t%7d\t%9d\t%8d\t%8d\n", b.Bucket, b.Initial, b.Available, b.Reserved, b.ReleasedTotal)
	}
	s := r.Stock
	fmt.Fprintf(tw, "total\t%7d\t%9d\t%8d\t%8d\n", s.Initial, s.Available, s.Reserved, s.ReleasedTotal)
	t.end()

	u := r.Unknown
	e.printf("\nunknown outcomes %d: executed %d, not executed %d, unresolved %d\n",
		u.Total, u.Executed, u.NotExecuted, u.Unresolved)
	if r.LostAcksNotJudged != "" {
		e.printf("lost acks not judged: %s\n", r.LostAcksNotJudged)
	} else {
		e.printf("lost acks %d\n", r.LostAcks)
	}
	if k := r.KeySpace; k != nil {
		e.printf("keys %d checked: %d without TTL, %d beyond retention\n", k.KeysChecked, k.KeysWithoutTTL, k.KeysBeyondRetention)
		e.printf("memory %.0f B per reservation (record + marker), %.1f B per request result\n",
			k.MemoryPerReservationBytes, k.RequestResultBytes)
		if s := k.LargestRequestShard; s != nil {
			e.printf("largest request shard %d entries, %d B (skew %.2f over %d shards)\n", s.HLen, s.MemoryBytes, k.RequestShardSkew, k.RequestShards)
		}
	}
	if w := r.Wait; w != nil {
		e.printf("%s\n", w.Line())
	}
}

func (t *textWriter) checks(r *Report) {
	if len(r.Invariants) > 0 {
		t.ew.printf("\n")
		t.table()
		t.row(one("ID"), one("INVARIANT"), one("STATUS"), one("DETAIL"))
		for _, inv := range r.Invariants {
			st := statusText(inv.Status)
			if inv.Expected != nil && inv.Expected.Met {
				st = "EXPECTED"
			}
			t.row(one(inv.ID), one(inv.Name), one(st), wrap(inv.Detail, invDetailWidth))
		}
		t.end()
	}
	if len(r.Assertions) > 0 {
		t.ew.printf("\n")
		t.table()
		t.row(one("ASSERTION"), one("STATUS"), one("OBSERVED"), one("THRESHOLD"), one("DETAIL"))
		for _, a := range r.Assertions {
			unit := ""
			if a.Unit != "" {
				unit = " " + a.Unit
			}
			threshold := "-"
			if a.Threshold != nil {
				threshold = fmt.Sprintf("%g%s", *a.Threshold, unit)
			}
			t.row(wrap(a.Name, assertNameWidth), one(statusText(a.Status)),
				one(fmtObserved(a.Observed)+unit), one(threshold), wrap(a.Detail, assertDetailWidth))
		}
		t.end()
	}
}

// sections writes the optional compare and capacity results.
func (t *textWriter) sections(r *Report) {
	if c := r.Compare; c != nil && len(c.Variants) > 0 {
		t.ew.printf("\n")
		tw := t.table()
		fmt.Fprintf(tw, "COMPARE %s\t%7s\t%8s\t%9s\t%6s\t%6s\tPASSED\n", strings.ToUpper(c.Dimension), "BUCKETS", "OPS/S", "p99 ms", "SOLD", "LEFT")
		for _, v := range c.Variants {
			fmt.Fprintf(tw, "%s\t%7d\t%8.1f\t%9.3f\t%6d\t%6d\t%s\n", v.Name, v.Buckets, v.ThroughputOpsPerS,
				v.LatencyMs.P99, v.Stock.Reserved, v.Stock.Available, statusText(boolStatus(v.Passed)))
		}
		t.end()
	}
	if c := r.Capacity; c != nil && len(c.Steps) > 0 {
		t.ew.printf("\ncapacity: highest passing rate %.0f ops/s (target p99 %g ms)\n", c.MaxRateOpsPerS, c.TargetP99Ms)
		tw := t.table()
		fmt.Fprintf(tw, "%8s\t%9s\t%9s\t%9s\t%7s\tPASSED\n", "OFFERED", "ACHIEVED", "p50 ms", "p99 ms", "ERRORS")
		for _, s := range c.Steps {
			fmt.Fprintf(tw, "%8.0f\t%9.1f\t%9.3f\t%9.3f\t%7d\t%s\n", s.RateOpsPerS, s.ThroughputOpsPerS,
				s.LatencyMs.P50, s.LatencyMs.P99, s.Errors, statusText(boolStatus(s.Passed)))
		}
		t.end()
	}
}

func statusText(s Status) string {
	if s == "" {
		return "-"
	}
	return strings.ToUpper(string(s))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// formatMap renders a free-form map as "k=v, k=v" in key order; nested
// values are compact JSON, each value cut to 40 characters.
func formatMap(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		var v string
		switch x := m[k].(type) {
		case string:
			v = x
		case nil:
			v = "null"
		case fmt.Stringer:
			v = x.String()
		case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
			v = fmt.Sprint(x)
		default:
			if b, err := json.Marshal(x); err == nil {
				v = string(b)
			} else {
				v = fmt.Sprint(x)
			}
		}
		parts = append(parts, k+"="+truncate(v, 40))
	}
	return strings.Join(parts, ", ")
}

// clean turns control characters (tabs, newlines) into spaces so free
// text cannot break a table.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func truncate(s string, width int) string {
	s = clean(s)
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// wrap splits s into lines of at most width runes, at spaces when it can.
// It returns at least one (possibly empty) line.
func wrap(s string, width int) []string {
	words := strings.Fields(clean(s))
	var lines []string
	cur := ""
	for _, w := range words {
		for utf8.RuneCountInString(w) > width { // hard-break long words
			if cur != "" {
				lines = append(lines, cur)
				cur = ""
			}
			r := []rune(w)
			lines = append(lines, string(r[:width]))
			w = string(r[width:])
		}
		switch {
		case w == "":
		case cur == "":
			cur = w
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

// fmtObserved prints counts as integers and other figures with 4 significant digits.
func fmtObserved(v float64) string {
	if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.4g", v)
}

// baseline writes run --baseline's comparison: the window and each figure.
func (t *textWriter) baseline(r *Report) {
	b := r.Baseline
	if b == nil {
		return
	}
	t.ew.printf("\nbaseline (%s): %s: %s\n", b.History, b.Status, b.Detail)
	for _, f := range b.Figures {
		mark := "ok       "
		if f.Regressed {
			mark = "REGRESSED"
		}
		t.ew.printf("  %s %s\n", mark, f.Line(b.Alpha))
	}
}
