// Package runner is the load engine: it paces operations open-loop with a
// vegeta Pacer (or runs closed-loop workers), executes the flash-sale
// workload against the system under test (a sut.System, selling a
// sut.Sale), records every operation in a compact history, and samples
// the stock the system exposes during the run. It judges nothing: the
// checks are in checks, which read the history and the system's
// state after the run.
//
// Latency is coordinated-omission free: every operation has an intended
// start time fixed by the schedule, and latency is measured from it (as wrk2
// does), whatever happened to the operations before it. Service time is
// measured from the actual send. The schedule is never slowed down: an
// operation that cannot start on time starts late (and is counted), and one
// that would exceed the in-flight cap is dropped (and counted).
package runner
