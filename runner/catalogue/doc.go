// Package catalogue runs every built-in scenario and suite as a gate: each
// built-in is held to its own expectation (pass, or the expected failures
// it declares in assertions.expect_fail), the results are printed as one
// table and written as JUnit XML, and any outcome other than the expected
// one fails the gate.
//
// A suite runs through the same code path as `seckill-harness run SUITE`
// (the caller's Runner), and its members' rows are taken from that run: no
// scenario runs twice in one repetition because a suite names it. A suite
// whose members are all covered by a larger suite's run (nightly-ci inside
// nightly) is not run again: its row is made of those member rows. Only the
// built-ins no selected suite covers run on their own.
//
// Execute runs nothing itself: its Runner does. RunGate is the whole
// command with ScenarioRunner, the same plan builder (runner/planner) and
// suite runner (lifecycle.Suite) as `run`; tests give Execute scripted
// Runners. BusyLoops holds every core with spinning child
// processes for a stress run; they are started and ended by PID.
package catalogue
