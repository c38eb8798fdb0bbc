// Package sut is the system under test as the harness sees it: one small
// interface, System, for how the load reaches it (reserve, re-send,
// release), and optional abilities found by type assertion (as
// toxiproxy's toxics are): Provisioner sets the activity up and tears it
// down, StateReader reads its state back for the checks, and Exposes
// (part of StateReader) says which of the facts of Fact it can show.
// A wrapper (Waiting, LocalSoldOut) decorates a system and passes its
// abilities on through Unwrap (Ability walks the chain).
//
// Reference is the first implementation: the project's Lua scripts
// through lua.Store, and the reference contract's keys read back by
// ReferenceState. The known-bad paths of selftest (sut/badpaths) are
// others; a team's own script (through an adapter file) and a running
// access service (through its HTTP API) are meant to be more.
//
// The harness's side of the sale is Sale: the activity and how a call's
// ids are derived. Those belong to the harness, whatever the system.
package sut
