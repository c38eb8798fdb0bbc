package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/reports"
)

// readReport reads report.json from dir.
func readReport(t *testing.T, dir string) *reports.Report {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep reports.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// failingChecks names what failed in dir's report.json, each with the
// start of its detail, for a test's failure message: CI shows only part
// of a long run's output, and this puts the reason first. Empty when the
// report is missing or nothing in it failed.
func failingChecks(dir string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return ""
	}
	var rep reports.Report
	if json.Unmarshal(raw, &rep) != nil {
		return ""
	}
	short := func(s string) string {
		if len(s) > 240 {
			return s[:240] + "…"
		}
		return s
	}
	var b strings.Builder
	for _, inv := range rep.Invariants {
		if inv.Status != reports.StatusPass && inv.Status != reports.StatusSkip {
			fmt.Fprintf(&b, "  %s %s %s (waived %v): %s\n", inv.ID, inv.Name, inv.Status, inv.Waived, short(inv.Detail))
		}
	}
	for _, a := range rep.Assertions {
		if a.Status != reports.StatusPass && a.Status != reports.StatusSkip {
			fmt.Fprintf(&b, "  assertion %q %s, observed %v: %s\n", a.Name, a.Status, a.Observed, short(a.Detail))
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "failing in report.json:\n" + b.String()
}

func failedAssertion(rep *reports.Report, prefix string) *reports.Assertion {
	for i := range rep.Assertions {
		if strings.HasPrefix(rep.Assertions[i].Name, prefix) && rep.Assertions[i].Status == reports.StatusFail {
			return &rep.Assertions[i]
		}
	}
	return nil
}

// A reserve script with a Lua syntax error answers every call with an
// error: nothing is sold, and the run must fail with the Redis error text
// in the report (it used to pass: every invariant is vacuously true).
func TestRunWithAScriptThatDoesNotCompileFails(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	emb := lua.Embedded()
	for name, src := range map[string]string{lua.ReserveFile: "local x = = 1\n" + emb.Reserve.Source,
		lua.TransitionFile: emb.Transition.Source, lua.CompensateFile: emb.Compensate.Source} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	code, text := cli(t, "run", "smoke", "--out", out, "--lua-dir", dir)
	if code != exitCheckFailed {
		t.Fatalf("exit %d, want 1:\n%s", code, text)
	}
	rep := readReport(t, out)
	a := failedAssertion(rep, "errors caused by the path under test")
	if rep.Passed || a == nil || a.Observed == 0 {
		t.Fatalf("passed=%v, path-error assertion %+v", rep.Passed, a)
	}
	if !strings.Contains(a.Detail, "Error compiling script") && !strings.Contains(a.Detail, "ERR") {
		t.Fatalf("the Redis error text is not in the report: %q", a.Detail)
	}
	if len(rep.ErrorTexts["OTHER"]) == 0 {
		t.Fatalf("report.error_texts: %v", rep.ErrorTexts)
	}
}

// A load that ran no operation proves nothing: it must not pass.
func TestRunWithNoOperationFails(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	code, text := cli(t, "run", "--rate", "0.1", "--duration", "1s", "--out", out)
	if code != exitCheckFailed {
		t.Fatalf("exit %d, want 1:\n%s", code, text)
	}
	if a := failedAssertion(readReport(t, out), "operations completed"); a == nil {
		t.Fatalf("no failed 'operations completed' assertion:\n%s", text)
	}
}

// A planned fault the cluster cannot take (failover without a replica to
// promote) is refused before the load, naming the fix: the chaos would not
// happen. (A fault whose injection fails at run time fails the run: see
// runner/lifecycle's TestFaultThatDoesNotInjectFailsTheRun.)
func TestRunWhoseFaultCannotHappenIsRefused(t *testing.T) {
	out := t.TempDir()
	code, text := cli(t, "run", "--replicas", "0", "--rate", "300", "--duration", "3s", "--users", "5000", "--stock", "100",
		"--fault", "failover:mode=graceful,at=1s", "--out", out)
	if code != exitHarnessError || !strings.Contains(text, "--replicas 1") {
		t.Fatalf("exit %d, want 2 naming --replicas 1:\n%s", code, text)
	}
}

// An interrupted run writes a partial report that says so: passed false,
// interrupted with the reason and the moment; summary and JUnit agree.
func TestInterruptedRunIsReportedAsSuch(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		time.Sleep(4500 * time.Millisecond) // the cluster starts in ~2.5 s, then the load runs
		cancel(errors.New("interrupt signal received"))
	}()
	var buf strings.Builder
	code := run(ctx, []string{"run", "--rate", "300", "--duration", "30s", "--out", out}, &buf, &buf)
	if code != exitHarnessError {
		t.Fatalf("exit %d, want 2:\n%s", code, buf.String())
	}
	rep := readReport(t, out)
	if rep.Passed || rep.Interrupted == nil || rep.Interrupted.Reason != "interrupt signal received" || rep.Interrupted.AtS <= 0 {
		t.Fatalf("passed=%v interrupted=%+v", rep.Passed, rep.Interrupted)
	}
	for _, f := range []string{"summary.md", "junit.xml"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "INTERRUPTED") {
			t.Errorf("%s does not say the run was interrupted:\n%s", f, b)
		}
	}
}
