package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// twoGenerators is one failover load split over two load generators:
// each has its own samples (different seeds, rates and interleaved
// schedules); union is one Recorder fed every sample of both.
func twoGenerators(t *testing.T) (dirs []string, union *Recorder) {
	t.Helper()
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	phases := []PhaseSpan{
		{Name: "baseline", End: 3 * time.Second},
		{Name: "during failover", Start: 3 * time.Second, End: 5500 * time.Millisecond},
		{Name: "after failover", Start: 5500 * time.Millisecond},
	}
	union = NewRecorder(start, phases)
	gens := []struct {
		seed   uint64
		rate   float64
		offset time.Duration
	}{{1, 700, 0}, {2, 450, 777 * time.Microsecond}}
	for i, g := range gens {
		rec := NewRecorder(start.Add(time.Duration(i)*150*time.Millisecond), phases)
		for _, s := range syntheticSamples(g.seed, g.rate, 8*time.Second, 3*time.Second, 4500*time.Millisecond, g.offset) {
			rec.Add(s)
			union.Add(s)
		}
		rep := &Report{Scenario: "failover-kill", Seed: int64(g.seed), Passed: true,
			Load:  Load{Mode: "open", Shape: "constant", TargetRate: g.rate, Concurrency: 32, Stock: 100, Buckets: 1},
			Stock: Stock{Initial: 100, Reserved: 100, Buckets: []BucketStock{{Bucket: 0, Initial: 100, Reserved: 100}}},
			Faults: []Fault{{Kind: "failover", Target: "127.0.0.1:7001", InjectedAtS: 3, HealedAtS: 5.5, Healed: true,
				Evidence: map[string]any{"recovery_ms": 1500.0}}},
			Invariants: []Invariant{
				{ID: "I1", Name: "stock_conservation", Status: StatusPass, Detail: fmt.Sprintf("gen %d ok", i)},
				{ID: "I9", Name: "liveness", Status: StatusSkip, Detail: "faults"},
			},
			Assertions: []Assertion{{Name: "every fault healed", Status: StatusPass, Observed: 1}},
		}
		rec.Fill(rep)
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("gen%d", i+1))
		if err := WriteArtifacts(dir, &Inputs{Report: rep, Hists: rec.Histograms()}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs, union
}

func loadRuns(t *testing.T, dirs ...string) []*Run {
	t.Helper()
	var runs []*Run
	for _, d := range dirs {
		r, err := LoadRun(d)
		if err != nil {
			t.Fatal(err)
		}
		if r.HistSource != HlogFileName {
			t.Fatalf("%s: histograms from %q", d, r.HistSource)
		}
		runs = append(runs, r)
	}
	return runs
}

// Merging two runs gives the percentiles of one histogram over the union
// of their values: overall, per phase and per second, latency and service
// time; counts are summed.
func TestMergeRunsEqualsOneHistogramOverTheUnion(t *testing.T) {
	dirs, union := twoGenerators(t)
	runs := loadRuns(t, dirs...)
	got, hs, notes, err := MergeRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes: %v", notes)
	}
	want := &Report{}
	union.Fill(want)

	sameDistribution(t, "merged latency histogram", hs.Latency, union.Latency())
	sameDistribution(t, "merged service histogram", hs.Service, union.Service())
	if got.LatencyMs != want.LatencyMs || got.ServiceTimeMs != want.ServiceTimeMs {
		t.Errorf("merged latency %+v service %+v,\nwant %+v %+v", got.LatencyMs, got.ServiceTimeMs, want.LatencyMs, want.ServiceTimeMs)
	}
	if got.LatencyMs.P99 < 1000 {
		t.Errorf("the failover does not show in the merged p99: %+v", got.LatencyMs)
	}
	if got.Totals.Ops != want.Totals.Ops || !reflect.DeepEqual(got.Totals.Outcomes, want.Totals.Outcomes) ||
		!reflect.DeepEqual(got.Totals.Errors, want.Totals.Errors) {
		t.Errorf("totals %+v, want %+v", got.Totals, want.Totals)
	}

	if len(got.Phases) != len(want.Phases) {
		t.Fatalf("%d phases, want %d", len(got.Phases), len(want.Phases))
	}
	for i, p := range got.Phases {
		w := want.Phases[i]
		if p.Name != w.Name || p.Ops != w.Ops || p.LatencyMs != w.LatencyMs || p.ServiceTimeMs != w.ServiceTimeMs ||
			!reflect.DeepEqual(p.Outcomes, w.Outcomes) {
			t.Errorf("phase %d:\n got %+v\nwant %+v", i, p, w)
		}
		sameDistribution(t, "phase "+p.Name, hs.Phases[i].Latency, union.Histograms().Phases[i].Latency)
	}

	if len(got.Timeseries) != len(want.Timeseries) {
		t.Fatalf("%d seconds, want %d", len(got.Timeseries), len(want.Timeseries))
	}
	for i, s := range got.Timeseries {
		w := want.Timeseries[i]
		if len(w.Outcomes) == 0 {
			w.Outcomes = nil
		}
		if !reflect.DeepEqual(s, w) {
			t.Errorf("second %d:\n got %+v\nwant %+v", i, s, w)
		}
	}

	if len(got.Sources) != 2 || got.Sources[0].Label != "gen1" || got.Sources[1].Label != "gen2" {
		t.Errorf("sources %+v", got.Sources)
	}
	if got.Load.TargetRate != 1150 || got.Load.Concurrency != 64 || !got.Passed {
		t.Errorf("load %+v passed %v", got.Load, got.Passed)
	}
	// One shared cluster: the same final stock is kept, not doubled.
	if got.Stock.Initial != 100 || len(got.Stock.Buckets) != 1 {
		t.Errorf("stock %+v", got.Stock)
	}
	if len(got.Faults) != 2 || got.Faults[1].Evidence["source"] != "gen2" {
		t.Errorf("faults %+v", got.Faults)
	}
	if len(got.Invariants) != 2 || got.Invariants[0].Status != StatusPass || got.Invariants[1].Status != StatusSkip ||
		!strings.Contains(got.Invariants[0].Detail, "gen1: gen 0 ok; gen2: gen 1 ok") {
		t.Errorf("invariants %+v", got.Invariants)
	}
	if len(got.Assertions) != 2 || got.Assertions[1].Name != "[gen2] every fault healed" {
		t.Errorf("assertions %+v", got.Assertions)
	}

	// Written out and read back, the merged run is the same again (and can
	// itself be merged further).
	out := filepath.Join(t.TempDir(), "merged")
	if err := WriteArtifacts(out, &Inputs{Report: got, Hists: hs}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ReportFile, HGRMFileName, HlogFileName, HTMLFileName, SummaryFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	again := loadRuns(t, out)[0]
	sameDistribution(t, "merged, saved and read", again.Hists.Latency, union.Latency())
	if again.Report.LatencyMs != want.LatencyMs {
		t.Errorf("saved merged report latency %+v", again.Report.LatencyMs)
	}
}

func TestMergeRunsVerdictsStockAndPhases(t *testing.T) {
	dirs, _ := twoGenerators(t)
	runs := loadRuns(t, dirs...)
	// Generator 2 failed I1, had its own cluster (other stock), and other phases.
	r2 := runs[1].Report
	r2.Passed = false
	r2.Invariants[0].Status = StatusFail
	r2.Stock = Stock{Initial: 50, Reserved: 40, Available: 10, Buckets: []BucketStock{
		{Bucket: 0, Initial: 25, Reserved: 25}, {Bucket: 1, Initial: 25, Reserved: 15, Available: 10}}}
	r2.Phases[1].Name = "during partition"
	got, hs, notes, err := MergeRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Passed || got.Invariants[0].Status != StatusFail || got.Verdict() == "PASS" {
		t.Errorf("passed %v invariants %+v", got.Passed, got.Invariants)
	}
	if got.Stock.Initial != 150 || got.Stock.Available != 10 || len(got.Stock.Buckets) != 2 ||
		got.Stock.Buckets[0].Initial != 125 || got.Stock.Buckets[1].Available != 10 {
		t.Errorf("separate clusters: stock must be summed: %+v", got.Stock)
	}
	if len(got.Phases) != 0 || len(hs.Phases) != 0 || len(notes) != 1 {
		t.Errorf("phases %v notes %v", got.Phases, notes)
	}

	// A run saved without latency.hlog cannot be merged exactly.
	if err := os.Remove(filepath.Join(dirs[1], HlogFileName)); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRun(dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	if r.HistSource != HGRMFileName || r.Hists.Latency == nil || r.Hists.Service != nil {
		t.Errorf("fallback on latency.hgrm: %q %+v", r.HistSource, r.Hists)
	}
	if _, _, _, err := MergeRuns([]*Run{runs[0], r}); err == nil || !strings.Contains(err.Error(), HlogFileName) {
		t.Errorf("merge without hlog: %v", err)
	}
	if _, _, _, err := MergeRuns(nil); err == nil {
		t.Error("merging nothing must fail")
	}
}

// A scenario that expects an invariant to fail (failover-data-loss: I6)
// passes on each generator; the merge keeps the expectation, so the merged
// verdict is not a FAIL for the failure both expected.
func TestMergeRunsKeepsExpectedFailures(t *testing.T) {
	dirs, _ := twoGenerators(t)
	runs := loadRuns(t, dirs...)
	for i, r := range runs {
		inv := &r.Report.Invariants[0]
		inv.Status = StatusFail
		inv.Expected = &ExpectedFailure{Min: 1, Count: int64(3 + i), CountOf: "acknowledged reservations lost", Met: true}
	}
	got, _, _, err := MergeRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	inv := got.Invariants[0]
	if inv.Expected == nil || inv.Expected.Count != 7 || inv.Expected.Min != 1 || !inv.Expected.Met ||
		inv.Expected.CountOf != "acknowledged reservations lost" {
		t.Fatalf("merged expectation %+v", inv.Expected)
	}
	if len(got.FailedChecks()) != 0 {
		t.Errorf("an expected failure counted as failed: %v", got.FailedChecks())
	}
	// Expected on one generator, and not come on either: not met.
	runs = loadRuns(t, dirs...)
	runs[0].Report.Invariants[0].Expected = &ExpectedFailure{Min: 1, CountOf: "x"}
	got, _, _, err = MergeRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	if e := got.Invariants[0].Expected; e == nil || e.Met {
		t.Fatalf("an expected failure that did not come is met: %+v", e)
	}
}

func TestLoadRunErrors(t *testing.T) {
	if _, err := LoadRun(t.TempDir()); err == nil {
		t.Error("a directory without report.json must fail")
	}
	dir := t.TempDir()
	if err := (&Report{}).WriteJSON(filepath.Join(dir, ReportFile)); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRun(dir)
	if err != nil || r.Hists != nil || r.HistSource != "" {
		t.Errorf("report only: %+v %v", r, err)
	}
	if err := os.WriteFile(filepath.Join(dir, HlogFileName), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRun(dir); err == nil {
		t.Error("a corrupt latency.hlog must fail")
	}
}
