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
	// SloP99Ms is the SLO of a compare --capacity (0: a fixed-load compare).
	SloP99Ms float64 `json:"slo_p99_ms,omitempty"`
	// Note qualifies the figures (e.g. how many cores the servers shared).
	Note string `json:"note,omitempty"`
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
	// Path is the reserve path the variant measured ("accept",
	// "sold-out", "scenario"); "" for a fixed-load compare.
	Path string `json:"path,omitempty"`
	// Capacity is the variant's capacity search (compare --capacity):
	// then the headline figures above are those of the step at the
	// capacity rate.
	Capacity *VariantCapacity `json:"capacity,omitempty"`
}

// VariantCapacity is one variant of a compare --capacity: what was
// measured, where its buckets live, and a projection that is computed,
// not measured.
type VariantCapacity struct {
	// OpsPerS is the highest rate that held the SLO; BrokeOpsPerS the
	// lowest that broke above it (0: none broke, the search ran out of
	// steps).
	OpsPerS      float64 `json:"ops_per_s"`
	BrokeOpsPerS float64 `json:"broke_ops_per_s"`
	// Confirmations of OpsPerS run after the search, and how many held.
	Confirmations     int `json:"confirmations"`
	ConfirmationsHeld int `json:"confirmations_held"`
	// P99Ms, ErrorRatio and SoldOutShare are those of the step at OpsPerS.
	P99Ms        float64 `json:"p99_ms"`
	ErrorRatio   float64 `json:"error_ratio"`
	SoldOutShare float64 `json:"sold_out_share"`
	// MasterCores is each master's CPU at OpsPerS, in cores (CPU seconds
	// per second of load), keyed by address.
	MasterCores map[string]float64 `json:"master_cores"`
	// BucketsPerMaster and Ceiling: the placement (buckets per master
	// address) and the speed-up it allows over one slot (1 / the busiest
	// master's share of the buckets).
	BucketsPerMaster map[string]int `json:"buckets_per_master"`
	Spread           string         `json:"spread"` // buckets per master, busiest first, e.g. "2/1/1"
	Ceiling          float64        `json:"ceiling"`
	// Speedup is OpsPerS over the first variant's (of the same path);
	// CeilingSpeedup is Ceiling over the first variant's.
	Speedup        float64 `json:"speedup"`
	CeilingSpeedup float64 `json:"ceiling_speedup"`
	// Projection is computed from the measured figures; never measured.
	Projection *CapacityProjection `json:"projection,omitempty"`
	// BoundBy says what ended the search: "system: hot master at N
	// cores" (a step broke while the system had the CPU), "stand:
	// generator late M%" (StandBound: the load generator fell behind; the
	// system's limit was not reached and OpsPerS is a lower bound), "" when
	// no step broke.
	BoundBy    string `json:"bound_by,omitempty"`
	StandBound bool   `json:"stand_bound"`
}

// CapacityProjection is a computed capacity: the measured server CPU per
// operation gives the rate one master serves with a core of its own
// (PerMasterOpsPerS); times the placement's ceiling, the rate the
// activity would hold with every master on its own core (OpsPerS). The
// client's CPU per operation says how many client cores that rate needs.
// Latency is not modelled: it is an upper bound of throughput, not a
// prediction of p99.
type CapacityProjection struct {
	ServerCPUPerOpUs float64 `json:"server_cpu_per_op_us"`
	ClientCPUPerOpUs float64 `json:"client_cpu_per_op_us"`
	PerMasterOpsPerS float64 `json:"per_master_ops_per_s"`
	OpsPerS          float64 `json:"ops_per_s"`
	ClientCores      float64 `json:"client_cores"`
	Speedup          float64 `json:"speedup"`
	// LowerBound: the step it is computed from was paced by a stand that
	// fell behind at the next rate, so the system's limit was not reached
	// and the figures are at least this.
	LowerBound bool `json:"lower_bound,omitempty"`
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
	// LowestBrokeOpsPerS is the lowest offered rate above MaxRateOpsPerS
	// that failed (0: none failed): the answer lies between the two.
	LowestBrokeOpsPerS float64 `json:"lowest_broke_ops_per_s,omitempty"`
	// Confirmations is how many times MaxRateOpsPerS was run again after
	// the search, and ConfirmationsHeld how many of those passed.
	Confirmations     int `json:"confirmations,omitempty"`
	ConfirmationsHeld int `json:"confirmations_held,omitempty"`
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
	// Phase is why the step ran: "ramp", "bisect" or "confirm" ("" when
	// the producer does not say).
	Phase string `json:"phase,omitempty"`
	// StandBound: the step did not hold and the load generator, not the
	// system, is why; BoundBy names what bound a step that did not hold
	// ("system: hot master at 0.97 cores, service p99 4.10 ms", "stand:
	// generator late 40%"), as in compare.json's steps.
	StandBound bool   `json:"stand_bound"`
	BoundBy    string `json:"bound_by,omitempty"`
}
