// Package reports turns what a seckill-harness run recorded into the
// artifacts people and CI jobs read afterwards.
//
// It has these parts:
//
//   - The report.json contract (report.go): [Report] and its parts, with
//     the JSON names that CI jobs parse. Names may be added, never renamed.
//     [Report.WriteJSON] and [ReadJSON] write and read the file; nil slices
//     and maps are written as [] and {} so consumers never meet null.
//   - Latency recording (latency.go): HdrHistogram helpers ([NewHistogram],
//     [RecordDuration], [PercentilesOf]) and [Recorder], which aggregates
//     every operation of a run into overall, per-phase and per-second
//     latency and service-time distributions plus outcome counts.
//   - Writers: [WriteHGRM] (the standard HdrHistogram percentile
//     distribution, latency.hgrm), [WriteHlog] (the HdrHistogram interval
//     log, latency.hlog: one latency and one service-time histogram a
//     second plus one per phase, see hlog.go), [WriteText] (the terminal
//     summary), [WriteMarkdown] (summary.md, for a CI job summary),
//     [WriteHTML] (report.html: self-contained, charts by the embedded
//     Apache ECharts, tables readable without JavaScript) and [WriteJUnit].
//   - The artifact table (artifacts.go): every file of a run directory,
//     each a name and a [Writer] with optional abilities ([Artifact]).
//     [WriteArtifacts] writes the whole set of a run (what every command
//     that writes a run's report calls), [WriteViews] re-renders the views
//     of a saved run in place, and [Preflight] finds unwritable outputs
//     before a run starts. Every file is written atomically and never
//     through a symlink ([WriteFileAtomic], atomic.go), and files an
//     earlier run left in the directory are removed.
//   - Saved runs (merge.go): [LoadRun] reads a run directory back
//     (report.json plus latency.hlog, or latency.hgrm for older runs) and
//     [MergeRuns] merges the runs of several load generators into one
//     report whose percentiles come from their histograms added together.
//   - Optional sections (sections.go): [CompareResult] and
//     [CapacityResult], rendered by every writer when a report has them.
//
// Latency is coordinated-omission free: the latency of an operation is its
// completion time minus its INTENDED send time (the time the open-loop pacer
// scheduled it), so queueing inside the harness during a stall is counted.
// Service time is completion minus the ACTUAL send time, i.e. what a closed
// loop benchmark would report. Both are kept; the gap between them is the
// interesting part during faults.
//
// Histograms record whole microseconds in [1 µs, 60 s] at 3 significant
// decimal digits (relative error at most 0.1%): overall and per phase as
// dense histograms, per second as sparse ones (to keep a long run's memory
// small). Percentiles in the report are milliseconds. Values outside the range are clamped and
// counted (Totals.Clamped), never silently lost.
//
// Nothing in this package is goroutine-safe: the runner owns a Recorder and
// feeds it from one goroutine.
package reports
