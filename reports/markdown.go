package reports

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteMarkdown writes summary.md: a short GitHub-flavoured Markdown
// summary of r fit for a CI job summary (for example appended to
// $GITHUB_STEP_SUMMARY): the verdict, the key figures, phases, the
// invariant and assertion tables, the faults with their key evidence, and
// the merged runs or compare/capacity results when present. It returns the
// first write error.
func WriteMarkdown(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	p := ew.printf
	markdownHeading(p, r)
	markdownTotals(p, r)
	markdownSourcesAndPhases(p, r)
	markdownInvariants(p, r)
	markdownAssertions(p, r)
	markdownFaults(p, r)
	markdownComparison(p, r)
	markdownServers(p, r)
	return ew.err
}

// markdownHeading prints the heading line (verdict icon, verdict, scenario,
// seed or merged-run count) and the one-line run description under it
// (start time, duration, load, topology, redis version, non-reference path).
func markdownHeading(p func(string, ...any), r *Report) {
	icon := "✅"
	if r.IsInconclusive() {
		icon = "⚠️"
	} else if r.Verdict() != "PASS" {
		icon = "❌"
	}
	run := fmt.Sprintf("seed %d", r.Seed)
	if len(r.Sources) > 1 {
		run = fmt.Sprintf("merged from %d runs", len(r.Sources))
	}
	p("## %s %s — seckill-harness `%s` (%s)\n\n", icon, mdText(r.VerdictLine()), mdCode(orDash(r.Scenario)), run)

	var meta []string
	if !r.StartedAt.IsZero() {
		meta = append(meta, "started "+r.StartedAt.UTC().Format(time.RFC3339))
	}
	meta = append(meta, fmt.Sprintf("%.1f s", r.DurationS))
	l := r.Load
	load := strings.TrimSpace(l.Mode + " " + l.Shape)
	if l.TargetRate > 0 {
		load += fmt.Sprintf(" %g ops/s", l.TargetRate)
	}
	meta = append(meta, load, fmt.Sprintf("%d users", l.Users),
		fmt.Sprintf("stock %d in %d %s", l.Stock, l.Buckets, plural(int64(l.Buckets), "bucket", "buckets")),
		fmt.Sprintf("%d %s × %d %s (%s)", r.Topology.Masters, plural(int64(r.Topology.Masters), "master", "masters"),
			r.Topology.ReplicasPerMaster, plural(int64(r.Topology.ReplicasPerMaster), "replica", "replicas"), orDash(r.Topology.Provider)))
	if r.Versions.Redis != "" {
		meta = append(meta, "redis "+r.Versions.Redis)
	}
	if r.Path != "" && r.Path != "reference" {
		meta = append(meta, "path "+r.Path)
	}
	p("%s\n\n", mdText(strings.Join(meta, " · ")))
}

// markdownTotals prints the whole-run figures table, the wait line when the
// run waited, and the outcome counts with the stock line when any operation
// has an outcome.
func markdownTotals(p func(string, ...any), r *Report) {
	tot := r.Totals
	p("| ops | ops/s | p50 ms | p99 ms | p99.9 ms | max ms | service p99 ms | unknown | lost acks | dropped |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	p("| %d | %.1f | %s | %s | %s | %s | %s | %d | %s | %d |\n\n", tot.Ops, r.ThroughputOpsPerS,
		mdMs(r.LatencyMs.P50), mdMs(r.LatencyMs.P99), mdMs(r.LatencyMs.P999), mdMs(r.LatencyMs.Max),
		mdMs(r.ServiceTimeMs.P99), r.Unknown.Total, r.LostAcksText(), tot.Dropped)
	if w := r.Wait; w != nil {
		p("%s\n\n", mdText(w.Line()))
	}

	var outs []string
	for _, kv := range sortedCounts(tot.Outcomes) {
		outs = append(outs, fmt.Sprintf("%s %d", kv.k, kv.v))
	}
	if len(outs) > 0 {
		p("Outcomes: %s.", mdText(strings.Join(outs, ", ")))
		s := r.Stock
		p(" Stock: %d sold of %d, %d left, %d released.\n\n", s.Reserved, s.Initial, s.Available, s.ReleasedTotal)
	}
}

// markdownSourcesAndPhases prints the table of merged runs (when r was
// merged) and the per-phase table (when r has phases).
func markdownSourcesAndPhases(p func(string, ...any), r *Report) {
	if len(r.Sources) > 0 {
		p("Merged from %d runs:\n\n| run | scenario | ops | ops/s | p99 ms | passed |\n|---|---|---:|---:|---:|---|\n", len(r.Sources))
		for _, s := range r.Sources {
			p("| %s | %s | %d | %.1f | %s | %s |\n", mdCell(s.Label), mdCell(s.Scenario), s.Ops,
				s.ThroughputOpsPerS, mdMs(s.LatencyMs.P99), yesNo(s.Passed))
		}
		p("\n")
	}

	if len(r.Phases) > 0 {
		p("| phase | window s | ops | ops/s | p50 ms | p99 ms | p99.9 ms | max ms |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, ph := range r.Phases {
			p("| %s | %.1f–%.1f | %d | %.1f | %s | %s | %s | %s |\n", mdCell(ph.Name), ph.StartS, ph.EndS, ph.Ops,
				ph.ThroughputOpsPerS, mdMs(ph.LatencyMs.P50), mdMs(ph.LatencyMs.P99), mdMs(ph.LatencyMs.P999),
				mdMs(ph.LatencyMs.Max))
		}
		p("\n")
	}
}

// markdownInvariants prints the invariant table, marking a waived or an
// expected failure as such rather than as a plain fail.
func markdownInvariants(p func(string, ...any), r *Report) {
	if len(r.Invariants) == 0 {
		return
	}
	p("| | id | invariant | detail |\n|---|---|---|---|\n")
	for _, inv := range r.Invariants {
		icon := statusIcon(inv.Status)
		if inv.Waived && inv.Status == StatusFail {
			icon = "⚠️ fail (waived)"
		}
		if inv.Expected != nil && inv.Expected.Met {
			icon = "⚠️ fail (expected)"
		}
		p("| %s | %s | %s | %s |\n", icon, mdCell(inv.ID), mdCell(inv.Name), mdCell(truncate(inv.Detail, 300)))
	}
	p("\n")
}

// markdownAssertions prints the assertion table followed by one quoted
// INCONCLUSIVE note per inconclusive assertion.
func markdownAssertions(p func(string, ...any), r *Report) {
	if len(r.Assertions) == 0 {
		return
	}
	p("| | assertion | observed | threshold |\n|---|---|---:|---:|\n")
	for _, a := range r.Assertions {
		threshold := "–"
		if a.Threshold != nil {
			threshold = fmt.Sprintf("%g %s", *a.Threshold, a.Unit)
		}
		p("| %s | %s | %s | %s |\n", statusIcon(a.Status), mdCell(a.Name),
			mdCell(strings.TrimSpace(fmt.Sprintf("%.4g %s", a.Observed, a.Unit))), mdCell(strings.TrimSpace(threshold)))
	}
	p("\n")
	for _, a := range r.Assertions {
		if a.Status == StatusInconclusive {
			p("> ⚠️ **INCONCLUSIVE** %s: %s\n\n", mdText(a.Name), mdText(a.Detail))
		}
	}
}

// markdownFaults prints the planned faults with their key evidence and the
// unplanned events, each table only when it has rows.
func markdownFaults(p func(string, ...any), r *Report) {
	if len(r.Faults) > 0 {
		p("| fault | target | injected | healed | evidence |\n|---|---|---:|---:|---|\n")
		for _, f := range r.Faults {
			kind := f.Kind
			if f.Name != "" && f.Name != f.Kind {
				kind += " (" + f.Name + ")"
			}
			p("| %s | %s | %.1f s | %s | %s |\n", mdCell(kind), mdCell(truncate(f.Target, 60)), f.InjectedAtS,
				mdCell(healedText(f)), mdCell(truncate(keyEvidence(f.Evidence), 300)))
		}
		p("\n")
	}

	if len(r.UnplannedEvents) > 0 {
		p("| unplanned event | at s | lasted s | node | evidence |\n|---|---:|---:|---|---|\n")
		for _, e := range r.UnplannedEvents {
			what := e.What
			if e.Tolerated {
				what += " (tolerated)"
			}
			p("| %s | %.1f | %.1f | %s | %s |\n", mdCell(what), e.TimeS, e.DurationS, mdCell(e.Node), mdCell(truncate(e.Evidence, 300)))
		}
		p("\n")
	}
}

// markdownComparison prints the compare variants table and the capacity
// result with its steps, each only when the report carries it.
func markdownComparison(p func(string, ...any), r *Report) {
	if c := r.Compare; c != nil && len(c.Variants) > 0 {
		p("| variant | buckets | ops/s | p99 ms | sold | left | passed |\n|---|---:|---:|---:|---:|---:|---|\n")
		for _, v := range c.Variants {
			p("| %s | %d | %.1f | %s | %d | %d | %s |\n", mdCell(v.Name), v.Buckets, v.ThroughputOpsPerS,
				mdMs(v.LatencyMs.P99), v.Stock.Reserved, v.Stock.Available, yesNo(v.Passed))
		}
		p("\n")
	}
	if c := r.Capacity; c != nil && len(c.Steps) > 0 {
		p("Capacity: highest rate meeting p99 ≤ %g ms: **%.0f ops/s**.\n\n", c.TargetP99Ms, c.MaxRateOpsPerS)
		p("| offered ops/s | achieved ops/s | p50 ms | p99 ms | errors | |\n|---:|---:|---:|---:|---:|---|\n")
		for _, s := range c.Steps {
			p("| %.0f | %.1f | %s | %s | %d | %s |\n", s.RateOpsPerS, s.ThroughputOpsPerS, mdMs(s.LatencyMs.P50),
				mdMs(s.LatencyMs.P99), s.Errors, statusIcon(boolStatus(s.Passed)))
		}
		p("\n")
	}
}

func boolStatus(ok bool) Status {
	if ok {
		return StatusPass
	}
	return StatusFail
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func statusIcon(s Status) string {
	switch s {
	case StatusPass:
		return "✅ pass"
	case StatusFail:
		return "❌ **fail**"
	case StatusSkip:
		return "➖ skip"
	case StatusInconclusive:
		return "⚠️ **INCONCLUSIVE**"
	}
	return "–"
}

func healedText(f Fault) string {
	switch {
	case f.HealError != "":
		return "HEAL FAILED: " + f.HealError
	case f.Healed || f.HealedAtS > 0:
		return fmt.Sprintf("%.1f s", f.HealedAtS)
	}
	return "not healed"
}

// keyEvidence is formatMap without the bulky values (logs, lists of
// nodes): the scalars and short values only.
func keyEvidence(m map[string]any) string {
	small := map[string]any{}
	for k, v := range m {
		switch v.(type) {
		case string, bool, float64, float32, int, int64, int32, uint, uint64, nil:
			small[k] = v
		}
	}
	return formatMap(small)
}

func mdMs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// mdText escapes the characters Markdown would take as formatting.
func mdText(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)
	return r.Replace(clean(s))
}

// mdCell is mdText safe inside a table cell.
func mdCell(s string) string {
	return strings.ReplaceAll(mdText(s), "|", `\|`)
}

func mdCode(s string) string { return strings.ReplaceAll(clean(s), "`", "'") }
