// Package trend judges a scenario's figures across nights: it finds change
// points in a series of nightly values (E-divisive means with a permutation
// test) and renders the series, their verdicts and their change points as a
// text/Markdown table or a self-contained HTML page.
package trend

import "time"

// Series is one figure of one scenario over nights, oldest first.
//
// Contract for producers (the results history converts its records into
// Series):
//   - Scenario names the scenario (as in report.json's scenario name);
//     Figure names the trended figure (e.g. "reserve.p99", "throughput");
//     Unit is how Value is expressed ("ms", "ops/s", "count", ...). Together
//     Scenario and Figure identify a Series; a producer emits at most one
//     Series per pair.
//   - Points are in ascending At order, one per night (run). Values are
//     finite; a night that did not measure the figure is left out, never
//     written as 0 or NaN.
//   - A consumer never mutates a Series it was given.
type Series struct {
	Scenario string  `json:"scenario"`
	Figure   string  `json:"figure"`
	Unit     string  `json:"unit"`
	Points   []Point `json:"points"`
}

// Point is one night's value of a figure.
//
//   - At is when the run started (UTC).
//   - Value is the night's figure (e.g. the phase's p99 in Unit).
//   - Verdict is the run's verdict as report.json states it ("pass",
//     "fail", ...); empty when unknown.
//   - Run identifies the run (its run ID or report path), shown on the page.
//   - Samples optionally holds the night's per-second samples of the figure;
//     nil when not recorded. Detection uses Value; Samples only enrich the
//     rendering.
type Point struct {
	At      time.Time `json:"at"`
	Value   float64   `json:"value"`
	Verdict string    `json:"verdict,omitempty"`
	Run     string    `json:"run,omitempty"`
	Samples []float64 `json:"samples,omitempty"`
}

// Source yields the series to judge. `trend --series FILE` uses FileSource;
// the results history provides its own Source (a directory of JSON lines or
// PostgreSQL). An error names the problem and its fix; the caller exits 2.
type Source func() ([]Series, error)
