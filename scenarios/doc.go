// Package scenarios will hold the scenario schema (YAML), its validation with
// file:line positions, and the embedded built-in library (smoke, stock-one,
// failover-*, slot-migration, slow-aof, nightly, …).
package scenarios
