// Package history is the results history: one compact Record per run
// (and per suite, compare, capacity and explore), appended to a Store
// that a CI job keeps between nights, and the baseline judgement of `run
// --baseline`: tonight's figures against the same scenario's recent runs
// on comparable machines.
//
// # Records
//
// A Record is built from a run's report in one place (FromReport): the
// scenario and its content hash (ContentHash: the resolved scenario
// without the system under test), the system under test (its scripts'
// SHA1, the adapter file), the harness build, the machine (cores, load1
// when the load started, host name), the verdict and exit code, the
// figures worth trending (Record.Figures, named by FigureUnit's suffix
// rule: "p99_ms", "phase.sold-out.p99_ms", "throughput_ops_per_s",
// "errors", "unknowns", "lost_acks", "fault.<name>.recovery_ms",
// "orders_per_s", "capacity_ops_per_s") and per-second samples of the
// figures a rank test compares (Record.Samples: "p50_ms", "p99_ms",
// "p999_ms", "throughput_ops_per_s").
//
// # Stores
//
// DirStore (the default, --results-history DIR) keeps one file of JSON
// lines per scenario, DIR/<scenario>.jsonl. An append takes an exclusive
// flock on DIR/.lock, writes its line with one write(2) on an O_APPEND
// descriptor (a newline first when a crash left a partial last line), and
// when the file holds more than Keep records rewrites it with the newest
// Keep to a temporary file that is fsynced and renamed over it: a crash
// leaves either the old file or the new one, never less. A line that does
// not parse is skipped with a warning naming file:line.
//
// PGStore (--results-db URL) keeps the same records in PostgreSQL, in its
// own table (Table, created if missing), the newest Keep per scenario.
//
// # Baseline
//
// Judge compares tonight's record with the comparable records of the
// history (Comparable: same scenario name, same content hash, same
// cores), the newest Window of them. Each figure with a threshold
// (Thresholds; a scenario's regressions: section over
// DefaultThresholds) regresses when both hold: the one-sided
// Mann-Whitney U test of tonight's per-second samples against the
// window's pooled samples gives p < Alpha, and tonight's figure is worse
// than the median of the window's figures by more than the threshold.
// With fewer than MinRuns comparable records the comparison is not made
// and says so.
package results
