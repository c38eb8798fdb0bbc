package results_test

import (
	"testing"

	"seckill-harness/reports"
	"seckill-harness/reports/results"
)

func TestFromReportTakesTheTrendedFigures(t *testing.T) {
	rep := &reports.Report{Scenario: "failover-kill", Passed: false, StartedAt: t0, DurationS: 10,
		Totals:            reports.Totals{Ops: 100, Outcomes: map[string]int64{"ERROR": 3}},
		ThroughputOpsPerS: 10, LatencyMs: reports.Percentiles{P50: 1, P99: 9, P999: 20},
		Phases:  []reports.Phase{{Name: "baseline", Ops: 40, LatencyMs: reports.Percentiles{P99: 2}}, {Name: "idle", Ops: 0}},
		Faults:  []reports.Fault{{Kind: "failover", Name: "kill", Evidence: map[string]any{"recovery_ms": 1234.5}}},
		Unknown: reports.Unknown{Total: 4}, LostAcks: 2,
		Pipeline: map[string]any{"orders": int64(50)},
		Timeseries: []reports.Second{{TS: 0, Ops: 10, P99Ms: 3, Completed: 9}, {TS: 1, Ops: 0}, {TS: 2, Ops: 10, P99Ms: 4, Completed: 11},
			{TS: 10, Ops: 1, P99Ms: 5, Completed: 1}}, // past the load's 10 s: a partial second
		Assertions: []reports.Assertion{{Name: "p99 <= 5ms", Status: reports.StatusFail}},
		SystemUnderTest: &reports.SystemUnderTest{Name: "slow", Kind: "adapter", Adapter: "slow.yaml",
			Scripts: []reports.SUTScript{{Role: "reserve", SHA1: "abc"}}},
		Host:             &reports.Host{Cores: 2, Seconds: []reports.HostSecond{{Load1: 1.5}}},
		ResolvedScenario: map[string]any{"name": "failover-kill", "seed": 1},
	}
	r := results.FromReport(rep, results.KindRun, "out/x")
	want := map[string]float64{"p50_ms": 1, "p99_ms": 9, "p999_ms": 20, "throughput_ops_per_s": 10, "errors": 3, "unknowns": 4,
		"lost_acks": 2, "phase.baseline.p99_ms": 2, "fault.kill.recovery_ms": 1234.5, "orders_per_s": 5}
	for k, v := range want {
		if r.Figures[k] != v {
			t.Errorf("figure %s = %v, want %v", k, r.Figures[k], v)
		}
	}
	if _, ok := r.Figures["phase.idle.p99_ms"]; ok {
		t.Errorf("a phase without operations has no figures")
	}
	if got := r.Samples[results.SampleP99]; len(got) != 2 || got[1] != 4 || r.Samples[results.SampleThroughput][0] != 9 {
		t.Errorf("samples %v: want the whole seconds with operations", r.Samples)
	}
	if r.Verdict != "FAIL" || r.Exit != 1 || len(r.Failed) != 1 || r.Machine.Cores != 2 || r.Machine.Load1 != 1.5 ||
		r.System.Scripts["reserve"] != "abc" || r.System.Adapter != "slow.yaml" || r.At != t0 || r.ScenarioHash == "" {
		t.Errorf("record %+v", r)
	}
}

// The content hash ignores the system under test (a changed script keeps
// its baseline) and follows the load.
func TestContentHashIgnoresTheSystemUnderTest(t *testing.T) {
	a := results.ContentHash(map[string]any{"name": "s", "phases": []any{map[string]any{"rate": 2000}}})
	b := results.ContentHash(map[string]any{"name": "s", "phases": []any{map[string]any{"rate": 2000}}, "adapter": "slow.yaml", "path": "reference"})
	c := results.ContentHash(map[string]any{"name": "s", "phases": []any{map[string]any{"rate": 3000}}})
	if a != b || a == c || len(a) != 16 {
		t.Fatalf("hashes %s %s %s", a, b, c)
	}
}
