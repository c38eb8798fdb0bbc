// Package faults will hold one fault per file, named after its kind
// (failover, slot-migration, disconnect-before-reply, slow-aof, latency,
// partition, …), each with Inject, an idempotent Heal and Evidence.
package faults
