// Package runner is the load engine: it paces operations open-loop with a
// vegeta Pacer (or runs closed-loop workers), executes the flash-sale workload
// against the reserve path, records every operation in a compact history, and
// checks the invariants against the state read back from Redis. Each
// invariant is declared once, in the table of invariants.go (id, name,
// one-line contract, a pure judge); CollectFacts reads what they need from
// Redis once and JudgeFacts judges them without Redis.
//
// Latency is coordinated-omission free: every operation has an intended
// start time fixed by the schedule, and latency is measured from it (as wrk2
// does), whatever happened to the operations before it. Service time is
// measured from the actual send. The schedule is never slowed down: an
// operation that cannot start on time starts late (and is counted), and one
// that would exceed the in-flight cap is dropped (and counted).
package runner
