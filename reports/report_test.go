package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func f64(v float64) *float64 { return &v }

// sampleReport is a filled report like the runner builds after a
// failover scenario where two checks failed.
func sampleReport() *Report {
	return &Report{
		Scenario:  "stock-one",
		Seed:      42,
		Passed:    false,
		StartedAt: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC),
		DurationS: 10,
		Versions:  Versions{Harness: "v0.1.0", Redis: "7.0.15", GoRedis: "v9.23.0"},
		Topology:  Topology{Masters: 3, ReplicasPerMaster: 1, Provider: "local"},
		Load: Load{Mode: "open", Shape: "constant", TargetRate: 2000, Users: 20000, Stock: 1000,
			Buckets: 2, Concurrency: 64},
		Totals: Totals{Ops: 20000, WireAttempts: 20011, LateStarts: 3, Dropped: 0,
			Outcomes:             map[string]int64{"ACCEPTED": 1000, "SOLD_OUT": 18990, "UNKNOWN": 10},
			LateStartThresholdMs: 10,
			Errors:               map[string]int64{"timeout": 10}},
		ThroughputOpsPerS: 1999.1,
		LatencyMs:         Percentiles{P50: 0.4, P95: 0.9, P99: 1.8, P999: 4.2, Max: 9.1},
		ServiceTimeMs:     Percentiles{P50: 0.4, P95: 0.9, P99: 1.7, P999: 4.0, Max: 9.0},
		Phases: []Phase{
			{Name: "baseline", StartS: 0, EndS: 3, Ops: 6000, ThroughputOpsPerS: 2000,
				LatencyMs: Percentiles{P50: 0.4, P99: 1.8}, Outcomes: map[string]int64{"ACCEPTED": 1000}},
			{Name: "failover", StartS: 3, EndS: 8, Ops: 10000, ThroughputOpsPerS: 1990.5,
				LatencyMs: Percentiles{P50: 0.5, P99: 950.25, P999: 1001, Max: 1200}},
		},
		Timeseries: []Second{
			{TS: 0, Ops: 2000, Outcomes: map[string]int64{"SOLD_OUT": 2000}, P50Ms: 0.4, P99Ms: 1.8, MaxMs: 3},
			{TS: 1},
			{TS: 4, Ops: 2000, P99Ms: 950.25, MaxMs: 1200, ServiceP99Ms: 1.5},
		},
		Faults: []Fault{{
			Kind: "failover", Target: "127.0.0.1:7001 (master of slots 0-5460, node 3f2a)",
			Params:      map[string]any{"mode": "FORCE"},
			InjectedAtS: 3, HealedAtS: 8, Healed: true,
			Evidence: map[string]any{"old_master": "127.0.0.1:7001", "new_master": "127.0.0.1:7004",
				"recovery_ms": 1830.0, "slots": []any{"0-5460"}},
		}},
		Stock: Stock{Initial: 1000, Available: 0, Reserved: 1000, ReleasedTotal: 0, Buckets: []BucketStock{
			{Bucket: 0, Initial: 500, Reserved: 500}, {Bucket: 1, Initial: 500, Reserved: 500},
		}},
		Unknown:  Unknown{Total: 10, Executed: 7, NotExecuted: 3},
		LostAcks: 2,
		Invariants: []Invariant{
			{ID: "I1", Name: "stock_conservation", Status: StatusPass, Detail: "2 buckets: available+reserved == initial",
				Evidence: map[string]any{"buckets": 2.0}},
			{ID: "I3", Name: "no_oversell", Status: StatusFail,
				Detail:   "bucket 0: 502 distinct reservation ids acknowledged ACCEPTED, 0 released, initial 500: oversold by 2 units after the failover at 3.0 s",
				Evidence: map[string]any{"oversold": 2.0}},
			{ID: "I6", Name: "no_lost_acks", Status: StatusFail, Detail: "2 acknowledged reservations missing"},
			{ID: "I9", Name: "liveness", Status: StatusSkip, Detail: "faults injected"},
		},
		Assertions: []Assertion{
			{Name: "p99 < 20ms in baseline", Status: StatusPass, Observed: 1.8, Threshold: f64(20), Unit: "ms"},
		},
		HistoryFile: "out/history.jsonl",
	}
}

func TestReportJSONContractNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	want := sampleReport()
	if err := want.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(raw), "}\n") || !strings.Contains(string(raw), "\n  \"scenario\": ") {
		t.Errorf("report.json must be indented with a trailing newline:\n%.200s", raw)
	}

	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	// Every name of the report.json contract (docs/REPORT.md), as a path into the JSON.
	paths := []string{
		"scenario", "seed", "passed", "started_at", "duration_s",
		"versions.harness", "versions.redis", "versions.go_redis",
		"topology.masters", "topology.replicas_per_master", "topology.provider",
		"load.mode", "load.shape", "load.target_rate", "load.users", "load.stock", "load.buckets",
		"totals.ops", "totals.wire_attempts", "totals.late_starts", "totals.dropped",
		"totals.outcomes.ACCEPTED", "totals.outcomes.SOLD_OUT", "totals.outcomes.UNKNOWN", "totals.outcomes.ERROR",
		"throughput_ops_per_s",
		"latency_ms.p50", "latency_ms.p95", "latency_ms.p99", "latency_ms.p999", "latency_ms.max",
		"service_time_ms.p50", "service_time_ms.p95", "service_time_ms.p99", "service_time_ms.p999", "service_time_ms.max",
		"phases.0.name", "phases.0.start_s", "phases.0.end_s", "phases.0.ops", "phases.0.latency_ms.p99",
		"timeseries.0.t_s", "timeseries.0.ops", "timeseries.0.outcomes", "timeseries.0.p50_ms",
		"timeseries.0.p99_ms", "timeseries.0.max_ms",
		"faults.0.kind", "faults.0.target", "faults.0.params", "faults.0.injected_at_s",
		"faults.0.healed_at_s", "faults.0.evidence",
		"stock.initial", "stock.available", "stock.reserved", "stock.released_total",
		"stock.buckets.0.bucket", "stock.buckets.0.initial", "stock.buckets.0.available",
		"stock.buckets.0.reserved", "stock.buckets.0.released_total",
		"unknown.total", "unknown.executed", "unknown.not_executed",
		"lost_acks",
		"invariants.0.id", "invariants.0.name", "invariants.0.status", "invariants.0.detail", "invariants.0.evidence",
		"assertions.0.name", "assertions.0.status", "assertions.0.observed",
	}
	for _, p := range paths {
		if _, ok := lookup(m, p); !ok {
			t.Errorf("report.json lacks %q", p)
		}
	}
	for p, want := range map[string]any{
		"throughput_ops_per_s":         1999.1,
		"latency_ms.p999":              4.2,
		"totals.wire_attempts":         20011.0,
		"totals.outcomes.ERROR":        0.0, // absent in the Go map, present in the file
		"invariants.0.status":          "pass",
		"invariants.1.status":          "fail",
		"assertions.0.threshold":       20.0,
		"started_at":                   "2026-11-03T10:00:00Z",
		"faults.0.evidence.new_master": "127.0.0.1:7004",
	} {
		if got, _ := lookup(m, p); got != want {
			t.Errorf("%s = %#v, want %#v", p, got, want)
		}
	}

	got, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	// The file has ERROR: 0 added; otherwise the round trip is exact.
	want.Totals.Outcomes["ERROR"] = 0
	if !got.StartedAt.Equal(want.StartedAt) {
		t.Errorf("started_at %v, want %v", got.StartedAt, want.StartedAt)
	}
	got.StartedAt = want.StartedAt
	// Empty maps come back as {} where the Go value was nil.
	want.Timeseries[1].Outcomes, want.Timeseries[2].Outcomes = map[string]int64{}, map[string]int64{}
	want.Phases[1].Outcomes = map[string]int64{}
	want.Invariants[2].Evidence, want.Invariants[3].Evidence = map[string]any{}, map[string]any{}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Errorf("round trip differs:\n got %s\nwant %s", gb, wb)
	}
}

// lookup follows a dotted path (numbers index arrays) through decoded JSON.
func lookup(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i := 0
			for _, c := range part {
				if c < '0' || c > '9' {
					return nil, false
				}
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func TestReportJSONEmptyHasNoNulls(t *testing.T) {
	b, err := json.Marshal(&Report{})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Contains(s, "null") {
		t.Errorf("an empty report must have no null: %s", s)
	}
	for _, frag := range []string{`"phases":[]`, `"timeseries":[]`, `"faults":[]`, `"invariants":[]`,
		`"assertions":[]`, `"buckets":[]`, `"errors":{}`, `"UNKNOWN":0`} {
		if !strings.Contains(s, frag) {
			t.Errorf("empty report lacks %s: %s", frag, s)
		}
	}
	// MarshalJSON must not change the caller's report.
	r := sampleReport()
	r.Totals.Outcomes = map[string]int64{"ACCEPTED": 1}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if len(r.Totals.Outcomes) != 1 || r.Timeseries[1].Outcomes != nil {
		t.Errorf("MarshalJSON modified its receiver: %v", r.Totals.Outcomes)
	}
}

func TestReadJSONErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadJSON(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file: no error")
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"seed": "forty-two"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON(bad); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad file: err = %v", err)
	}
	if err := sampleReport().WriteJSON(filepath.Join(dir, "no", "such", "dir", "r.json")); err == nil {
		t.Error("WriteJSON into a missing directory: no error")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestVerdict(t *testing.T) {
	r := sampleReport()
	if got := r.Verdict(); got != "FAIL (2 checks failed: I3, I6)" {
		t.Errorf("verdict %q", got)
	}
	r.Assertions = append(r.Assertions, Assertion{Name: "p99 < 50ms during failover", Status: StatusFail})
	if got := r.FailedChecks(); !reflect.DeepEqual(got, []string{"I3", "I6", "p99 < 50ms during failover"}) {
		t.Errorf("failed checks %v", got)
	}
	ok := &Report{Passed: true, Invariants: []Invariant{{ID: "I1", Status: StatusPass}, {ID: "I9", Status: StatusSkip}}}
	if got := ok.Verdict(); got != "PASS" {
		t.Errorf("verdict %q, want PASS", got)
	}
	ok.Passed = false
	if got := ok.Verdict(); !strings.HasPrefix(got, "FAIL") {
		t.Errorf("passed=false must not say PASS: %q", got)
	}
	one := &Report{Passed: true, Invariants: []Invariant{{ID: "I4", Status: StatusFail}}}
	if got := one.Verdict(); !strings.HasPrefix(got, "FAIL (1 check failed: I4)") {
		t.Errorf("verdict %q", got)
	}
	for _, s := range []Status{StatusPass, StatusFail, StatusSkip} {
		if !s.Valid() {
			t.Errorf("%q not valid", s)
		}
	}
	if Status("PASS").Valid() {
		t.Error(`"PASS" must not be a valid status (lower case in report.json)`)
	}
}
