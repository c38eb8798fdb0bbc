package lifecycle

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner"
)

// VariantSpec is one variant of a compare by variants: a name and the
// scenario settings (key=value, as --set takes them) that make it, applied
// over the scenario and the command's own --set values.
type VariantSpec struct {
	Name string
	Sets []string
}

// Mitigations are the named variants of `compare --mitigations`: the
// defences against losing acknowledged reservations to asynchronous
// replication, each as scenario settings.
//
//   - none: the scenario as written.
//   - min-replicas: a master refuses writes (NOREPLICAS) unless a replica
//     acknowledged the stream within the last second
//     (min-replicas-to-write 1, min-replicas-max-lag 1).
//   - wait: WAIT 1 after each fresh ACCEPTED, on the connection that ran
//     the script (sut.DefaultWaitTimeout); the answer is not refused,
//     but it says whether the replica confirmed it.
var Mitigations = []VariantSpec{
	{Name: "none"},
	{Name: "min-replicas", Sets: []string{"topology.min_replicas_to_write=1", "topology.min_replicas_max_lag=1s"}},
	{Name: "wait", Sets: []string{"wait.replicas=1"}},
}

// DefaultMitigations is what --mitigations names when given empty.
const DefaultMitigations = "none,min-replicas,wait"

var variantName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// ParseVariants reads `--mitigations a,b` (names of Mitigations, in the
// order given) and `--variant NAME:key=value` (repeatable; the settings of
// one NAME accumulate, `NAME:` alone is the scenario as written) into the
// variants to compare: the mitigations first, then the named variants in
// the order they first appear. Errors name the flag and the fix.
func ParseVariants(mitigations string, variants []string) ([]VariantSpec, error) {
	var out []VariantSpec
	index := map[string]int{}
	add := func(name string) (*VariantSpec, error) {
		if i, ok := index[name]; ok {
			return &out[i], nil
		}
		if !variantName.MatchString(name) {
			return nil, fmt.Errorf("variant name %q: want 1-40 letters, digits, '-' or '_' (it names the variant's report directory)", name)
		}
		index[name] = len(out)
		out = append(out, VariantSpec{Name: name})
		return &out[len(out)-1], nil
	}
	if strings.TrimSpace(mitigations) != "" {
		for _, m := range strings.Split(mitigations, ",") {
			m = strings.TrimSpace(m)
			var found *VariantSpec
			for i := range Mitigations {
				if Mitigations[i].Name == m {
					found = &Mitigations[i]
				}
			}
			if found == nil {
				return nil, fmt.Errorf("--mitigations %q: unknown mitigation %q; known: %s (or describe your own with --variant NAME:key=value)", mitigations, m, mitigationNames())
			}
			if _, dup := index[m]; dup {
				return nil, fmt.Errorf("--mitigations %q: %s named twice", mitigations, m)
			}
			v, _ := add(m)
			v.Sets = append([]string(nil), found.Sets...)
		}
	}
	for _, raw := range variants {
		name, set, ok := strings.Cut(raw, ":")
		name, set = strings.TrimSpace(name), strings.TrimSpace(set)
		if !ok || name == "" {
			return nil, fmt.Errorf("--variant %q: want NAME:key=value (e.g. --variant wait-1s:wait.replicas=1 --variant wait-1s:wait.timeout=1s), or NAME: for the scenario as written", raw)
		}
		v, err := add(name)
		if err != nil {
			return nil, fmt.Errorf("--variant %q: %w", raw, err)
		}
		if set != "" {
			if !strings.Contains(set, "=") {
				return nil, fmt.Errorf("--variant %q: the setting %q is not key=value (as --set takes it, e.g. topology.min_replicas_to_write=1)", raw, set)
			}
			v.Sets = append(v.Sets, set)
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("a compare by variants needs at least two: --mitigations %s, or --variant NAME:key=value for each", DefaultMitigations)
	}
	return out, nil
}

func mitigationNames() string {
	names := make([]string, len(Mitigations))
	for i, m := range Mitigations {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// Variant is one resolved variant: its spec and the plan it runs.
type Variant struct {
	VariantSpec
	Plan *Plan
}

// variantRow is one variant of a compare by variants (compare.json rows).
type variantRow struct {
	Variant           string   `json:"variant"`
	Settings          []string `json:"settings"`
	Passed            bool     `json:"passed"`
	Ops               int64    `json:"ops"`
	Accepted          int64    `json:"accepted"`
	ThroughputOpsPerS float64  `json:"throughput_ops_per_s"`
	P50Ms             float64  `json:"p50_ms"`
	P99Ms             float64  `json:"p99_ms"`
	LostAcks          int64    `json:"lost_acks"`
	// LostConfirmed are lost reservations WAIT had confirmed; null when the
	// variant sent no WAIT.
	LostConfirmed *int64   `json:"lost_wait_confirmed"`
	WaitP99Ms     *float64 `json:"wait_p99_ms"`
	// NoReplicas counts the NOREPLICAS refusals; RefusedFromS/ToS are the
	// first and the last of them (seconds into the load), -1 when none.
	NoReplicas   int64    `json:"noreplicas_refusals"`
	RefusedFromS float64  `json:"refused_from_s"`
	RefusedToS   float64  `json:"refused_to_s"`
	ReportDir    string   `json:"report_dir"`
	FailedChecks []string `json:"failed_checks,omitempty"`
}

// CompareVariants runs each variant's plan through Execute (each on its
// own fresh cluster, reports in <out>/<variant>/) and prints one table:
// lost acknowledged reservations, those lost although WAIT confirmed them,
// NOREPLICAS refusals and the window they covered, p99 and throughput —
// the trade-off between the variants. The table also goes to
// <out>/compare.json, <out>/compare.md and <out>/report.html. passed is
// every variant's verdict.
func CompareVariants(ctx context.Context, log io.Writer, name string, variants []Variant, out Output) (passed bool, err error) {
	var rows []variantRow
	var summary []reports.CompareVariant
	failed := false
	began := time.Now()
	for _, v := range variants {
		q := *v.Plan
		q.Name = fmt.Sprintf("%s (%s)", name, v.Name)
		sub := out
		sub.Dir = filepath.Join(out.Dir, v.Name)
		fmt.Fprintf(log, "\n=== %s: %s ===\n", v.Name, settingsText(v.Sets))
		oc, err := Execute(ctx, &q, sub)
		if err != nil {
			return false, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		if oc.RunErr != nil {
			return false, oc.Interrupted()
		}
		r := variantRowOf(v.VariantSpec, oc, sub.Dir)
		rows = append(rows, r)
		rep := oc.Report
		summary = append(summary, reports.CompareVariant{Name: v.Name, Buckets: rep.Load.Buckets, Passed: rep.Passed,
			Ops: rep.Totals.Ops, ThroughputOpsPerS: rep.ThroughputOpsPerS, LatencyMs: rep.LatencyMs,
			Outcomes: rep.Totals.Outcomes, Stock: rep.Stock, ReportFile: filepath.Join(sub.Dir, reports.ReportFile)})
		fmt.Fprintf(log, "%s: %d lost acks, %d NOREPLICAS, p99 %.2f ms, %.0f ops/s, verdict %s\n",
			q.Name, r.LostAcks, r.NoReplicas, r.P99Ms, r.ThroughputOpsPerS, rep.Verdict())
		failed = failed || !rep.Passed
	}
	var text strings.Builder
	writeVariantTable(&text, name, rows)
	fmt.Fprint(log, text.String())
	if out.Dir == "" {
		return !failed, nil
	}
	if err := writeJSONFile(filepath.Join(out.Dir, "compare.json"), map[string]any{"scenario": name, "dimension": "variant", "rows": rows}); err != nil {
		return false, err
	}
	if err := reports.WriteFileAtomic(filepath.Join(out.Dir, "compare.md"), []byte(variantMarkdown(name, rows))); err != nil {
		return false, err
	}
	sum := &reports.Report{Scenario: name + " — compare by variant", Seed: variants[0].Plan.Phases[0].Config.Seed, Passed: !failed,
		StartedAt: began, DurationS: time.Since(began).Seconds(), Compare: &reports.CompareResult{Dimension: "variant", Variants: summary}}
	if err := writeHTMLFile(filepath.Join(out.Dir, "report.html"), sum); err != nil {
		return false, err
	}
	fmt.Fprintf(log, "compare: %s, %s, %s\n", filepath.Join(out.Dir, "compare.json"), filepath.Join(out.Dir, "compare.md"), filepath.Join(out.Dir, "report.html"))
	return !failed, nil
}

func variantRowOf(v VariantSpec, oc *Outcome, dir string) variantRow {
	rep := oc.Report
	r := variantRow{Variant: v.Name, Settings: append([]string{}, v.Sets...), Passed: rep.Passed, Ops: rep.Totals.Ops,
		Accepted: rep.Totals.Outcomes[reports.OutcomeAccepted], ThroughputOpsPerS: rep.ThroughputOpsPerS,
		P50Ms: rep.LatencyMs.P50, P99Ms: rep.LatencyMs.P99, LostAcks: rep.LostAcks, ReportDir: dir,
		RefusedFromS: -1, RefusedToS: -1, FailedChecks: rep.FailedChecks()}
	if w := rep.Wait; w != nil {
		r.LostConfirmed, r.WaitP99Ms = &w.LostConfirmed, &w.LatencyMs.P99
	}
	r.NoReplicas, r.RefusedFromS, r.RefusedToS = refusals(oc.Result.History, runner.ErrNoReplicas)
	return r
}

// refusals counts the operations that ended refused with class c and the
// first and last time (seconds into the load) one was answered; -1, -1
// when none was.
func refusals(h *runner.History, c runner.ErrClass) (n int64, fromS, toS float64) {
	fromS, toS = -1, -1
	for _, o := range h.All() {
		if o.Outcome != runner.OutcomeError || o.ErrClass != c {
			continue
		}
		n++
		at := o.End.Seconds()
		if fromS < 0 || at < fromS {
			fromS = at
		}
		toS = max(toS, at)
	}
	return n, fromS, toS
}

func settingsText(sets []string) string {
	if len(sets) == 0 {
		return "the scenario as written"
	}
	return strings.Join(sets, " ")
}

// variantCells are one row's cells, shared by the text and Markdown tables.
func variantCells(r variantRow) []string {
	window := "-"
	if r.NoReplicas > 0 {
		window = fmt.Sprintf("%.2fs–%.2fs (%.2fs)", r.RefusedFromS, r.RefusedToS, r.RefusedToS-r.RefusedFromS)
	}
	confirmed, waitP99 := "no WAIT", "-"
	if r.LostConfirmed != nil {
		confirmed = fmt.Sprint(*r.LostConfirmed)
		waitP99 = fmt.Sprintf("%.2f", *r.WaitP99Ms)
	}
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL " + strings.Join(r.FailedChecks, ",")
	}
	return []string{r.Variant, fmt.Sprint(r.Accepted), fmt.Sprint(r.LostAcks), confirmed, fmt.Sprint(r.NoReplicas), window,
		fmt.Sprintf("%.2f", r.P99Ms), waitP99, fmt.Sprintf("%.0f", r.ThroughputOpsPerS), verdict}
}

var variantHeader = []string{"variant", "acks", "lost acks", "lost WAIT-confirmed", "NOREPLICAS", "refused window", "p99 ms", "WAIT p99 ms", "ops/s", "verdict"}

func writeVariantTable(w io.Writer, name string, rows []variantRow) {
	fmt.Fprintf(w, "\ncompare %s: same seed and load per variant\n", name)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(variantHeader, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(variantCells(r), "\t")+"\t")
	}
	tw.Flush()
	for _, r := range rows {
		fmt.Fprintf(w, "  %s: %s\n", r.Variant, settingsText(r.Settings))
	}
}

func variantMarkdown(name string, rows []variantRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# compare %s by variant\n\nSame seed and load per variant; each on a fresh cluster.\n\n", name)
	b.WriteString("| " + strings.Join(variantHeader, " | ") + " |\n|" + strings.Repeat("---|", len(variantHeader)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(variantCells(r), " | ") + " |\n")
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "- **%s**: %s\n", r.Variant, settingsText(r.Settings))
	}
	return b.String()
}
