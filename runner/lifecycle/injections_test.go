package lifecycle

import (
	"strings"
	"testing"

	"seckill-harness/faults"
)

// A fault that took effect though its Inject failed (a slot migration
// stuck midway and finished by the heal) counts as injected, and the
// verdict says what it did; one never injected still fails the rule,
// with why.
func TestPlannedFaultsJudgementCountsAFaultThatActedDespiteItsError(t *testing.T) {
	acted := "slot-migration: took effect though inject failed (MIGRATE: OOM): slot 7485 stopped at phase migrating with 0 of 60 keys moved; the heal finished the move"
	f := good()
	f.actedDespite = []string{acted}
	var got string
	for _, a := range judgeEvidence(f, Bounds{}) {
		if a.Name == "every planned fault injected" {
			got = a.Detail
			if a.Status != "pass" || a.Observed != 1 {
				t.Errorf("%s %v: want pass with 1 of 1", a.Status, a.Observed)
			}
		}
	}
	if !strings.Contains(got, "1 of 1 planned faults took effect") || !strings.Contains(got, acted) {
		t.Fatalf("detail %q: want 1 of 1 and the fault's outcome", got)
	}

	never, err := faults.Parse("slot-migration")
	if err != nil {
		t.Fatal(err)
	}
	not, despite := injections([]*faults.Planned{never})
	if len(not) != 1 || len(despite) != 0 || !strings.Contains(not[0], "slot-migration: never injected") {
		t.Fatalf("not injected %q, acted despite an error %q: want the fault never injected, with why", not, despite)
	}
	f.notInjected = not
	if st := statusOf(t, judgeEvidence(f, Bounds{}), "every planned fault injected"); st != "fail" {
		t.Fatalf("a fault never injected: %s, want fail", st)
	}
}
