// Package badpaths holds known-bad versions of the reserve path: the
// anti-patterns teams ship (spec §4, §7.4, §13.1, §17; anti-pattern §2.1;
// anti-pattern lock-then-queue), each a faithful sut.System speaking the same contract as
// the reference (same keys under the same hash tag, same reply tuples and
// codes), so the same workload and the same checker run against it.
//
// They are negative controls: a checker that passes them is worthless
// (docs/ARCHITECTURE.md, "Invariants and evidence"). The package is their
// registry (the invariants expected to catch each, the load that exposes
// it: loads.go) and nothing more; runner/selftest runs each one under its
// load, plus its control (the reference path; for a service row, the
// reference service: Info.Reference) under each of those loads, and says
// whether every bad path was caught and the controls passed.
//
// The service rows (servicepaths.go) are the reference access service
// (sut/serve) with one of its defects on, started in-process by the
// run's Setup on the run's cluster and stopped when the run ends.
package badpaths
