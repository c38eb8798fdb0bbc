package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"seckill-harness/internal/clustertest"
	"slices"
	"strings"
	"testing"
)

// exploreSummary is the part of summary.json the tests read.
type exploreSummary struct {
	Runs []struct {
		Verdict string   `json:"verdict"`
		Kinds   []string `json:"kinds"`
		Failed  []string `json:"failed"`
	} `json:"runs"`
	Findings []struct {
		Run           int      `json:"run"`
		Invariant     string   `json:"invariant"`
		Minimal       string   `json:"minimal"`
		Command       string   `json:"command"`
		MinimalFaults []string `json:"minimal_faults"`
		Reproduced    int      `json:"reproduced"`
		Confirmations int      `json:"confirmations"`
		Reproduces    string   `json:"reproduces"`
		TimeToFindS   float64  `json:"time_to_find_s"`
		ShrinkS       float64  `json:"shrink_s"`
		Shrink        struct {
			Exhausted bool `json:"exhausted"`
		} `json:"shrink"`
		Original struct {
			Faults     int     `json:"faults"`
			PlannedOps float64 `json:"planned_ops"`
		} `json:"original"`
		MinimalSize struct {
			Faults     int     `json:"faults"`
			PlannedOps float64 `json:"planned_ops"`
		} `json:"minimal_size"`
	} `json:"findings"`
	Coverage struct {
		Runs  int            `json:"runs"`
		Kinds map[string]int `json:"kinds"`
	} `json:"coverage"`
}

func readExploreSummary(t *testing.T, dir string) exploreSummary {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s exploreSummary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.txt", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("explore wrote no %s: %v", f, err)
		}
	}
	return s
}

// The bad path that re-sends under a fresh request id after a cut reply
// fails I5 only where a reply is cut after the script ran. Among kinds of
// which only disconnect-before-reply cuts replies (partition does too, when
// it lands on a request in flight: left out here), explore finds it within
// a few runs, shrinks it to that fault alone, and 'run' of the minimal YAML
// fails I5 again.
func TestExploreFindsAndShrinksTheFreshRequestIDPath(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "explore")
	code, text := cli(t, "explore", "--seed", "1", "--runs", "6", "--min-duration", "2s", "--max-duration", "3s", "--max-rate", "600",
		"--kinds", "latency,bandwidth,slicer,replica-lag,disconnect-before-reply", "--shrink-budget", "50s",
		"--path", "new-request-id-on-timeout", "--out", out, "--state", filepath.Join(dir, "state.json"))
	t.Log(text)
	if code != exitCheckFailed {
		t.Fatalf("explore exit %d, want 1 (a finding)", code)
	}
	s := readExploreSummary(t, out)
	if len(s.Findings) != 1 {
		t.Fatalf("%d findings, want 1", len(s.Findings))
	}
	f := s.Findings[0]
	if f.Invariant != "I5" {
		t.Fatalf("finding %s, want I5", f.Invariant)
	}
	// The culprit is kept and everything else that can go goes — within
	// the shrink budget: with reset_peer at toxicity 0.5 a variant
	// reproduces about 2 times in 3, so a shrink whose budget runs out
	// may keep one bystander (seen once in three make test runs: budget
	// spent, disconnect-before-reply plus bandwidth left). Whether it ran
	// out is what the shrink reports (exhausted: false), not a guess from
	// the seconds it took on a machine of unknown speed.
	hasCulprit := slices.ContainsFunc(f.MinimalFaults, func(s string) bool { return strings.HasPrefix(s, "disconnect-before-reply:") })
	if !hasCulprit || len(f.MinimalFaults) > 2 || (len(f.MinimalFaults) == 2 && f.Shrink.Exhausted) {
		t.Fatalf("minimal faults %v (shrunk in %.1fs of a 50 s budget, every smaller variant tried: %v): want disconnect-before-reply alone, or with one other when the budget ran out",
			f.MinimalFaults, f.ShrinkS, f.Shrink.Exhausted)
	}
	if f.MinimalSize.Faults > f.Original.Faults || f.MinimalSize.PlannedOps > f.Original.PlannedOps ||
		(f.MinimalSize.Faults == f.Original.Faults && f.MinimalSize.PlannedOps == f.Original.PlannedOps) {
		t.Errorf("minimal %+v is not smaller than the original %+v", f.MinimalSize, f.Original)
	}
	// Confirmations measure how often the minimal scenario fails on a
	// fresh cluster; a minimal shrunk on the shared stand may reproduce
	// only sometimes there (a run with 4 workers reproduced 0 of 3 and
	// then 'run' of it failed I5 at once), so the proof that it
	// reproduces is any failure among the confirmations and the re-runs
	// below.
	if f.Confirmations != 3 || f.Reproduces != fmt.Sprintf("%d/3", f.Reproduced) {
		t.Errorf("confirmations: %d of %d reproduced (%q)", f.Reproduced, f.Confirmations, f.Reproduces)
	}
	if !strings.Contains(f.Command, "run "+f.Minimal) || !strings.Contains(text, "reproduces") {
		t.Errorf("re-run command %q", f.Command)
	}
	t.Logf("found after %.1fs, shrunk in %.1fs: %d fault(s), %.0f planned ops -> %d fault(s), %.0f planned ops",
		f.TimeToFindS, f.ShrinkS, f.Original.Faults, f.Original.PlannedOps, f.MinimalSize.Faults, f.MinimalSize.PlannedOps)
	// 'run' of the minimal YAML reproduces. A short fault window can miss:
	// minimal scenarios shrunk this way reproduced 2 of 3 confirmations
	// (the re-runs once missed three times in a row), so up to six
	// attempts, stopping at the first failure of I5.
	reproduced := false
	attempts := 6
	for i := 0; i < attempts && !reproduced; i++ {
		repro := filepath.Join(dir, "repro")
		code, text := cli(t, "run", f.Minimal, "--out", repro, "--progress", "off")
		raw, err := os.ReadFile(filepath.Join(repro, "report.json"))
		if err != nil {
			t.Fatalf("run %s: exit %d, no report: %v\n%s", f.Minimal, code, err, text)
		}
		var rep struct {
			Invariants []struct{ ID, Status string } `json:"invariants"`
		}
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		for _, inv := range rep.Invariants {
			reproduced = reproduced || (inv.ID == "I5" && inv.Status == "fail" && code == exitCheckFailed)
		}
		t.Logf("run %s, attempt %d: exit %d, I5 failed: %v", f.Minimal, i+1, code, reproduced)
	}
	if !reproduced {
		t.Fatalf("run %s did not fail I5 in %d attempts (and %d of 3 confirmations reproduced)", f.Minimal, attempts, f.Reproduced)
	}
}

// The reference path explored the same way has no finding; the coverage
// is printed and carried in the state file to the next invocation.
func TestExploreReferenceHasNoFindingAndCarriesCoverage(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	args := []string{"explore", "--seed", "1", "--min-duration", "2s", "--max-duration", "3s", "--max-rate", "600",
		"--kinds", "latency,bandwidth,slicer,replica-lag,disconnect-before-reply,partition", "--state", state}
	out := filepath.Join(dir, "a")
	code, text := cli(t, append(args, "--runs", "4", "--out", out)...)
	t.Log(text)
	if code != exitPass {
		t.Fatalf("explore of the reference: exit %d, want 0", code)
	}
	s := readExploreSummary(t, out)
	if len(s.Runs) != 4 || len(s.Findings) != 0 || s.Coverage.Runs != 4 {
		t.Fatalf("%d runs, %d findings, coverage %d runs", len(s.Runs), len(s.Findings), s.Coverage.Runs)
	}
	for _, want := range []string{"findings: none", "coverage after 4 run(s)", "pairs of drawable kinds explored", "load shapes explored"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	out2 := filepath.Join(dir, "b")
	if code, text := cli(t, append(args, "--runs", "1", "--out", out2)...); code != exitPass || !strings.Contains(text, "coverage after 5 run(s) in all (2 invocation(s))") {
		t.Fatalf("second invocation: exit %d\n%s", code, text)
	}
}

func TestExploreBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explore", "--out", dir}, "--budget"},
		{[]string{"explore", "--runs", "1", "--max-faults", "5", "--out", dir}, "--max-faults"},
		{[]string{"explore", "--runs", "1", "--path", "nope", "--out", dir}, "valid paths"},
		{[]string{"explore", "--runs", "1", "--min-duration", "5s", "--max-duration", "2s", "--out", dir}, "--max-duration"},
	} {
		if code, out := cli(t, c.args...); code != exitHarnessError || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 naming %q", c.args, code, out, c.want)
		}
	}
}
