package planner

import (
	"slices"
	"strings"
	"testing"

	"seckill-harness/reports"
)

// Each example of docs/adapters/ gets its verdict on a short smoke run
// (mixed load with replays and same-user requests) on a local cluster:
//   - cluster-safe: every invariant holds and A1 passes;
//   - keys-from-argv: refused before the load (A1 fails, naming the buyers
//     key and script line 11; no operation sent; the report not passed,
//     the CLI's exit 1);
//   - no-per-user-check: one-per-user (I4) fails, and idempotency (I5):
//     it keeps no request id, so a replay reserves again; and H1: a user
//     holding a reservation answered ACCEPTED is explained by no order;
//   - different-idempotency: idempotency (I5) fails (the replays are
//     answered DUPLICATE_REQUEST instead of their first answer).
//
// The failed invariants are exactly the expected ones; besides them only
// the latency and throughput assertions may fail (the host may be
// starved, the verdicts may not).
func TestAdapterExamplesVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four loads on local clusters")
	}
	short := []string{"phases.0.duration=1s", "phases.1.duration=2s"}
	for _, tc := range []struct {
		file  string
		fails []string
	}{
		{"cluster-safe", nil}, {"keys-from-argv", []string{"A1"}}, {"no-per-user-check", []string{"I4", "I5", "H1"}},
		{"different-idempotency", []string{"I5"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rep := runPlan(t, "smoke", short, "../../docs/adapters/"+tc.file+".yaml")
			var failed []string
			for _, inv := range rep.Invariants {
				if inv.Status == reports.StatusFail {
					failed = append(failed, inv.ID)
				}
				if inv.ID == "A1" || slices.Contains(tc.fails, inv.ID) {
					t.Logf("%s %s: %s", inv.ID, inv.Status, inv.Detail)
				}
			}
			if !slices.Equal(failed, tc.fails) {
				t.Fatalf("failed checks %v, want exactly %v", failed, tc.fails)
			}
			for _, a := range rep.Assertions {
				if a.Status == reports.StatusFail && !strings.Contains(a.Name, "p99") && !strings.Contains(a.Name, "throughput") &&
					(tc.fails == nil || !strings.HasPrefix(a.Name, "invariants pass")) {
					t.Errorf("assertion %q failed: %s", a.Name, a.Detail)
				}
			}
			a1 := invariant(rep, "A1")
			switch {
			case slices.Equal(tc.fails, []string{"A1"}):
				if rep.Totals.Ops != 0 || rep.Passed {
					t.Errorf("refused before the load, yet %d ops sent, passed %v", rep.Totals.Ops, rep.Passed)
				}
				if !strings.Contains(a1.Detail, "keys-from-argv.lua:11: not cluster-safe") || !strings.Contains(a1.Detail, `"buyers:`) {
					t.Errorf("A1 does not name the buyers key at script line 11: %s", a1.Detail)
				}
			default:
				if a1.Status != reports.StatusPass || rep.Totals.Ops == 0 {
					t.Errorf("A1 %s (%s), %d ops: the pre-flight let a cluster-safe script through to the load", a1.Status, a1.Detail, rep.Totals.Ops)
				}
			}
		})
	}
}

// A scenario that lists the invariants it requires (failover-kill lists
// I1–I8) cannot waive A1: a script the pre-flight refused fails the run
// whatever the scenario requires.
func TestRefusedPreflightFailsAScenarioThatListsItsInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	rep := runPlan(t, "failover-kill", nil, "../../docs/adapters/keys-from-argv.yaml")
	a1 := invariant(rep, "A1")
	if a1.Status != reports.StatusFail || a1.Waived || rep.Passed || rep.Totals.Ops != 0 {
		t.Fatalf("A1 %s waived=%v, passed %v, %d ops: a refused pre-flight must fail the run", a1.Status, a1.Waived, rep.Passed, rep.Totals.Ops)
	}
}

func invariant(rep *reports.Report, id string) reports.Invariant {
	for _, inv := range rep.Invariants {
		if inv.ID == id {
			return inv
		}
	}
	return reports.Invariant{}
}
