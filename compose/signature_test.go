package compose

import "testing"

// Views that differ only in whom a failed node replicated agree: the
// failed node no longer gossips, so that part may never converge. A live
// node's master still counts.
func TestViewSignatureLeavesAFailedNodesMasterOut(t *testing.T) {
	view := func(deadMaster, liveMaster string) []nodeEntry {
		return []nodeEntry{
			{id: "m1", addr: "127.0.0.1:1", role: "master", slots: [][2]int{{0, 16383}}},
			{id: "r1", addr: "127.0.0.1:2", role: "replica", masterID: deadMaster, flags: []string{"slave", "fail"}},
			{id: "r2", addr: "127.0.0.1:3", role: "replica", masterID: liveMaster, flags: []string{"slave"}},
		}
	}
	if viewSignature(view("m1", "m1")) != viewSignature(view("", "m1")) {
		t.Error("views that differ only in a failed replica's master disagree")
	}
	if viewSignature(view("m1", "m1")) == viewSignature(view("m1", "")) {
		t.Error("views that differ in a live replica's master agree")
	}
}
