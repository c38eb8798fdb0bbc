package lifecycle

import (
	"testing"

	"seckill-harness/reports"
)

func reportWithI6(status reports.Status, lost int) *reports.Report {
	return &reports.Report{Invariants: []reports.Invariant{
		{ID: "I6", Name: "no_lost_acks", Status: status, Detail: "d", Evidence: map[string]any{"lost": lost}},
	}}
}

// An expected failure that came passes its assertion and no longer fails
// the run; one that did not come (a pass, too few, a skip, absent) fails.
func TestExpectFailuresBothWays(t *testing.T) {
	rep := reportWithI6(reports.StatusFail, 3)
	as := expectFailures(rep, map[string]int64{"I6": 2})
	rep.Assertions = as
	if len(as) != 1 || as[0].Status != reports.StatusPass || as[0].Observed != 3 {
		t.Fatalf("reproduced: %+v", as)
	}
	if e := rep.Invariants[0].Expected; e == nil || !e.Met || e.Count != 3 || e.Min != 2 {
		t.Fatalf("expected = %+v", e)
	}
	if len(rep.FailedChecks()) != 0 {
		t.Fatalf("failed checks %v: an expected failure must not fail the run", rep.FailedChecks())
	}
	for name, rep := range map[string]*reports.Report{
		"passed":    reportWithI6(reports.StatusPass, 0),
		"too few":   reportWithI6(reports.StatusFail, 1),
		"skipped":   reportWithI6(reports.StatusSkip, 0),
		"not there": {},
	} {
		as := expectFailures(rep, map[string]int64{"I6": 2})
		rep.Assertions = as
		if len(as) != 1 || as[0].Status != reports.StatusFail {
			t.Errorf("%s: %+v, want a failed assertion", name, as)
		}
		if len(rep.FailedChecks()) == 0 {
			t.Errorf("%s: the run would pass", name)
		}
	}
}
