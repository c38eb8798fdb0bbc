package reports

import (
	"os"
	"path/filepath"
)

// RunSummary is one run's key figures for scripts (run --json): the
// verdict, the load's size and speed, its latency, the outcomes, the
// server side's hottest node and the paths of the files the run wrote. It
// is derived from a Report; report.json has everything else.
type RunSummary struct {
	Scenario string `json:"scenario"`
	Passed   bool   `json:"passed"`
	// Verdict is the human verdict: "PASS" or "FAIL (… failed: I3, …)".
	Verdict      string   `json:"verdict"`
	FailedChecks []string `json:"failed_checks,omitempty"`
	Seed         int64    `json:"seed"`
	DurationS    float64  `json:"duration_s"`
	Ops          int64    `json:"ops"`
	Dropped      int64    `json:"dropped"`
	// ThroughputOpsPerS is completed operations per second of load.
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
	// LatencyMs is completion − intended send (coordinated-omission free).
	LatencyMs Percentiles      `json:"latency_ms"`
	Outcomes  map[string]int64 `json:"outcomes"`
	// UnknownRate and ErrorRate are the shares of Ops whose final outcome
	// is UNKNOWN or ERROR.
	UnknownRate float64 `json:"unknown_rate"`
	ErrorRate   float64 `json:"error_rate"`
	LostAcks    int64   `json:"lost_acks"`
	Stock       struct {
		Initial   int64 `json:"initial"`
		Available int64 `json:"available"`
		Reserved  int64 `json:"reserved"`
	} `json:"stock"`
	// HottestNode names the node with the highest CPU peak ("" when the
	// servers were not sampled).
	HottestNode string `json:"hottest_node,omitempty"`
	// Interrupted says why the load stopped early (nil: it ran out).
	Interrupted *Interruption `json:"interrupted,omitempty"`
	// Dir is the run directory; Files maps each artifact written there
	// (report.json, report.html, summary.md, junit.xml, latency.hgrm,
	// latency.hlog, the history) to its path.
	Dir   string            `json:"dir"`
	Files map[string]string `json:"files"`
}

// SummaryOf summarises r, written to dir (Files lists the artifacts that
// exist there now).
func SummaryOf(r *Report, dir string) RunSummary {
	s := RunSummary{Scenario: r.Scenario, Passed: r.Passed, Verdict: r.Verdict(), FailedChecks: r.FailedChecks(),
		Seed: r.Seed, DurationS: r.DurationS, Ops: r.Totals.Ops, Dropped: r.Totals.Dropped,
		ThroughputOpsPerS: r.ThroughputOpsPerS, LatencyMs: r.LatencyMs, Outcomes: r.Totals.Outcomes,
		LostAcks: r.LostAcks, Interrupted: r.Interrupted, Dir: dir, Files: map[string]string{}}
	if r.Totals.Ops > 0 {
		s.UnknownRate = float64(r.Totals.Outcomes["UNKNOWN"]) / float64(r.Totals.Ops)
		s.ErrorRate = float64(r.Totals.Outcomes["ERROR"]) / float64(r.Totals.Ops)
	}
	s.Stock.Initial, s.Stock.Available, s.Stock.Reserved = r.Stock.Initial, r.Stock.Available, r.Stock.Reserved
	if cpu := r.Servers.CPUByNode(); len(cpu) > 0 {
		s.HottestNode = cpu[0].Addr
	}
	for _, a := range artifactTable {
		p := filepath.Join(dir, a.Name)
		if a.Name == HistoryFileName && r.HistoryFile != "" {
			p = resolveOutput(dir, r.HistoryFile)
		}
		if _, err := os.Stat(p); err == nil {
			s.Files[a.Name] = p
		}
	}
	return s
}
