package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/reports"
)

// copyRun copies the saved real failover run (report.json, latency.hlog)
// into a new directory named name.
func copyRun(t *testing.T, name string, files ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("reports", "testdata", "failover-run", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReportRerendersASavedRun(t *testing.T) {
	dir := copyRun(t, "run1", "report.json", "latency.hlog")
	before, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	code, out := cli(t, "report", "--check", dir)
	if code != exitPass || !strings.Contains(out, "== seckill-harness: scenario failover-kill") ||
		!strings.Contains(out, "html: "+filepath.Join(dir, "report.html")) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, f := range []string{"report.html", "summary.md", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	after, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if string(before) != string(after) {
		t.Error("re-rendering in place must leave report.json alone")
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.HasPrefix(string(md), "## ✅ PASS — seckill-harness `failover-kill`") {
		t.Errorf("summary.md:\n%s", md)
	}

	// Into another directory: everything, JSON and histograms included.
	other := filepath.Join(t.TempDir(), "copy")
	if code, out := cli(t, "report", "-q", "--out", other, dir); code != exitPass || strings.Contains(out, "OUTCOME") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, f := range []string{"report.json", "latency.hgrm", "latency.hlog", "report.html", "summary.md", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(other, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestReportMergesRuns(t *testing.T) {
	a := copyRun(t, "gen1", "report.json", "latency.hlog")
	b := copyRun(t, "gen2", "report.json", "latency.hlog")
	if code, out := cli(t, "report", a, b); code != exitHarnessError || !strings.Contains(out, "--out is required") {
		t.Errorf("merge without --out: exit %d %s", code, out)
	}
	out := filepath.Join(t.TempDir(), "merged")
	code, text := cli(t, "report", "--out", out, a, b)
	if code != exitPass || !strings.Contains(text, "merged    2 runs: gen1, gen2") {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	if _, err := os.Stat(filepath.Join(out, "junit.xml")); err != nil {
		t.Errorf("a merge writes junit.xml like a run: %v", err)
	}
	one, err := reports.ReadJSON(filepath.Join(a, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := reports.ReadJSON(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The same run twice: twice the operations, the same percentiles.
	if m.Totals.Ops != 2*one.Totals.Ops || m.LatencyMs != one.LatencyMs || len(m.Sources) != 2 || len(m.Phases) != len(one.Phases) {
		t.Errorf("merged ops %d latency %+v (one run: %d %+v)", m.Totals.Ops, m.LatencyMs, one.Totals.Ops, one.LatencyMs)
	}

	// A run saved before latency.hlog existed renders, but does not merge.
	old := copyRun(t, "old", "report.json")
	if code, text := cli(t, "report", "-q", old); code != exitPass {
		t.Errorf("old run: exit %d %s", code, text)
	}
	if code, text := cli(t, "report", "--out", out, a, old); code != exitHarnessError || !strings.Contains(text, "latency.hlog") {
		t.Errorf("merge with an old run: exit %d %s", code, text)
	}
	if code, _ := cli(t, "report", filepath.Join(t.TempDir(), "none")); code != exitHarnessError {
		t.Errorf("missing dir: exit %d", code)
	}
}

func TestReportCheckFailsOnAFailedRun(t *testing.T) {
	dir := copyRun(t, "run1", "report.json", "latency.hlog")
	rep, err := reports.ReadJSON(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep.Passed = false
	rep.Invariants[2].Status = reports.StatusFail
	if err := rep.WriteJSON(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	if code, _ := cli(t, "report", "-q", dir); code != exitPass {
		t.Errorf("without --check: exit %d", code)
	}
	if code, _ := cli(t, "report", "-q", "--check", dir); code != exitCheckFailed {
		t.Errorf("with --check: exit %d", code)
	}
}
