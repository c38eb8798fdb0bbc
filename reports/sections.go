package reports

import "time"

// Optional report sections (all additive to the report.json contract):
// a report carries one only when its run produced it, and every writer
// (text, Markdown, HTML) renders a section only when it is present.

// Source is one run of a merged report (see MergeRuns).
type Source struct {
	// Label names the run in the merged report: the base name of its
	// directory, or the whole path when two base names are the same.
	Label             string      `json:"label"`
	Dir               string      `json:"dir"`
	Scenario          string      `json:"scenario"`
	Seed              int64       `json:"seed"`
	Passed            bool        `json:"passed"`
	StartedAt         time.Time   `json:"started_at"`
	DurationS         float64     `json:"duration_s"`
	Ops               int64       `json:"ops"`
	ThroughputOpsPerS float64     `json:"throughput_ops_per_s"`
	LatencyMs         Percentiles `json:"latency_ms"`
}

// CompareResult is the "compare" section: the same load run against
// several stock layouts (typically 1 vs 4 vs 16 buckets), one variant each,
// shown side by side.
type CompareResult struct {
	// Dimension names what differs between the variants, e.g. "buckets".
	Dimension string           `json:"dimension"`
	Variants  []CompareVariant `json:"variants"`
}

// CompareVariant is one run of a compare: its headline figures and its
// final stock per bucket (the bucket counts the HTML shows side by side).
type CompareVariant struct {
	Name              string           `json:"name"` // e.g. "4 buckets"
	Buckets           int              `json:"buckets"`
	Passed            bool             `json:"passed"`
	Ops               int64            `json:"ops"`
	ThroughputOpsPerS float64          `json:"throughput_ops_per_s"`
	LatencyMs         Percentiles      `json:"latency_ms"`
	Outcomes          map[string]int64 `json:"outcomes"`
	// Stock is the final stock, with one entry per bucket in Buckets:
	// Reserved is what the bucket sold, Available what it left unsold.
	Stock Stock `json:"stock"`
	// ReportFile is the variant's own report.json, if kept.
	ReportFile string `json:"report_file,omitempty"`
}

// CapacityResult is the "capacity" section: a series of steps at rising
// offered rates, and the highest rate whose p99 met the target.
type CapacityResult struct {
	// TargetP99Ms is the latency objective the search is for (0: none).
	TargetP99Ms float64 `json:"target_p99_ms"`
	// MaxRateOpsPerS is the highest offered rate of a passing step (0:
	// no step passed).
	MaxRateOpsPerS float64        `json:"max_rate_ops_per_s"`
	Steps          []CapacityStep `json:"steps"`
}

// CapacityStep is one offered rate of a capacity run.
type CapacityStep struct {
	RateOpsPerS       float64     `json:"rate_ops_per_s"`       // offered
	ThroughputOpsPerS float64     `json:"throughput_ops_per_s"` // achieved
	DurationS         float64     `json:"duration_s"`
	Ops               int64       `json:"ops"`
	Errors            int64       `json:"errors"` // UNKNOWN + ERROR outcomes
	Dropped           int64       `json:"dropped"`
	LatencyMs         Percentiles `json:"latency_ms"`
	// Passed: p99 within the target, and no errors or drops.
	Passed bool `json:"passed"`
}
