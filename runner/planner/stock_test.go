package planner

import (
	"strings"
	"testing"

	"seckill-harness/reports"
	"seckill-harness/sut"
)

// soldOut90Short is sold-out-90 with its sold-out phase cut to 3 s: the
// first second sells the stock of 2,000, the rest hits the sold-out
// bucket (8,000 fresh users in all).
var soldOut90Short = []string{"phases.1.duration=3s"}

func invariantByID(t *testing.T, rep *reports.Report, id string) reports.Invariant {
	t.Helper()
	for _, inv := range rep.Invariants {
		if inv.ID == id {
			return inv
		}
	}
	t.Fatalf("no invariant %s in the report", id)
	return reports.Invariant{}
}

// An adapter file that declares state.available alone gets I1 and I9
// judged on the available units under sold-out-90: a script that DECRs
// first and never gives the unit back (SOLD_OUT below 0) fails I1, its
// counter far below 0 at the end and at the samples taken during the
// load; the same script giving the unit back passes I1 (at the end
// available == 2,000 − 2,000 ACCEPTED) and I9, each detail saying the
// held counter was not compared. Before, both skipped ("does not expose
// the stock per bucket"). The reference path under the same load is
// judged on its whole stock, as before.
func TestAvailableOnlyAdapterUnderSoldOut90(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two loads on local clusters")
	}
	bad := runPlan(t, "sold-out-90", soldOut90Short, "testdata/stock/decr-first.yaml")
	i1 := invariantByID(t, bad, "I1")
	t.Logf("decr-first: I1 %s: %s", i1.Status, i1.Detail)
	if i1.Status != reports.StatusFail || !strings.Contains(i1.Detail, "end with available below 0") {
		t.Errorf("decr-first: I1 %s (%s), want fail with available below 0", i1.Status, i1.Detail)
	}
	if n, _ := i1.Evidence["samples_below_zero"].(int); n == 0 {
		t.Errorf("decr-first: no sample during the load read available below 0: %v", i1.Evidence)
	}

	good := runPlan(t, "sold-out-90", soldOut90Short, "testdata/stock/decr-restore.yaml")
	for _, id := range []string{"I1", "I9"} {
		inv := invariantByID(t, good, id)
		t.Logf("decr-restore: %s %s: %s", id, inv.Status, inv.Detail)
		if inv.Status != reports.StatusPass {
			t.Errorf("decr-restore: %s %s (%s), want pass", id, inv.Status, inv.Detail)
		}
	}
	i1 = invariantByID(t, good, "I1")
	for _, w := range []string{"available == initial − (distinct ACCEPTED − RELEASED)", "not compared: this system under test does not expose " + string(sut.Stock)} {
		if !strings.Contains(i1.Detail, w) {
			t.Errorf("decr-restore: I1 detail %q does not say %q", i1.Detail, w)
		}
	}
	if n, _ := i1.Evidence["samples"].(int); n == 0 {
		t.Errorf("decr-restore: I1 judged no sample taken during the load: %v", i1.Evidence)
	}

	// The reference path is judged as before: available + reserved ==
	// initial, nothing left uncompared.
	ref := runPlan(t, "sold-out-90", soldOut90Short, "")
	for _, id := range []string{"I1", "I9"} {
		inv := invariantByID(t, ref, id)
		t.Logf("reference: %s %s: %s", id, inv.Status, inv.Detail)
		if inv.Status != reports.StatusPass || strings.Contains(inv.Detail, "not compared") || inv.Evidence["available_only"] != nil {
			t.Errorf("reference: %s %s (%s), want pass on the whole stock", id, inv.Status, inv.Detail)
		}
	}
	if i1 = invariantByID(t, ref, "I1"); !strings.Contains(i1.Detail, "1 buckets conserve stock") {
		t.Errorf("reference: I1 detail %q, want the conservation of available + reserved", i1.Detail)
	}
}
