// Package checks is the checker: the table of checks (table.go: each
// check's id, name, one-line contract, the facts of the system under test
// it needs, and its pure judge), the collection of those facts from what
// the system exposes (collect.go, through sut.StateReader), and one file
// per family of judges: core.go (I1–I9), wait.go (I10), keys.go (K1,
// K2), localsoldout.go (L1), pipeline.go (P1–P5), e2e.go (E1–E5). Judge
// is the entry point: one read of the state, every check that applies.
// A check whose facts the system does not expose skips, saying so.
package checks
