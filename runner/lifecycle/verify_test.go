package lifecycle

import (
	"strings"
	"testing"

	"seckill-harness/checks"
	"seckill-harness/reports"
)

// genRunExpectingI6 is one generator's saved run of a scenario that
// expects I6 to fail at least once; lost is what its own share lost.
func genRunExpectingI6(dir string, lost int) *reports.Run {
	rep := reportWithI6(reports.StatusPass, lost)
	if lost > 0 {
		rep.Invariants[0].Status = reports.StatusFail
	}
	rep.Assertions = expectFailures(rep, map[string]int64{"I6": 1})
	return &reports.Run{Dir: dir, Report: rep}
}

// mergedOf is what MergeRuns makes of the runs' invariants and assertions
// (labelled by directory).
func mergedOf(runs []*reports.Run) *reports.Report {
	rep := &reports.Report{}
	for _, r := range runs {
		rep.Invariants = append(rep.Invariants, r.Report.Invariants...)
		for _, a := range r.Report.Assertions {
			a.Name = "[" + r.Dir + "] " + a.Name
			rep.Assertions = append(rep.Assertions, a)
		}
	}
	return rep
}

func judgedI6(lost int) *checks.CheckReport {
	c := checks.Check{ID: "I6", Name: "no_lost_acks", Status: checks.StatusPass, Evidence: map[string]any{"lost": lost}}
	if lost > 0 {
		c.Status = checks.StatusFail
	}
	chk := &checks.CheckReport{Checks: []checks.Check{c}}
	for i := 0; i < lost; i++ {
		chk.LostAcks = append(chk.LostAcks, "rid"+string(rune('a'+i)))
	}
	return chk
}

// verify carries an invariant's expected failure through the merge and
// judges it on the union: the loss one generator reproduced makes the
// merged demonstration green (even though the other generator's share lost
// nothing), and a union that lost nothing is red.
func TestVerifyCarriesExpectedFailures(t *testing.T) {
	runs := []*reports.Run{genRunExpectingI6("gen-0", 3), genRunExpectingI6("gen-1", 0)}
	rep := mergedOf(runs)
	applyVerification(rep, judgedI6(3), runs)
	i6 := findInvariant(rep, "I6")
	if i6 == nil || i6.Status != reports.StatusFail || i6.Expected == nil || !i6.Expected.Met || i6.Expected.Min != 1 || i6.Expected.Count != 3 {
		t.Fatalf("merged I6 = %+v (expected %+v), want failed as expected with 3", i6, i6.Expected)
	}
	var expectAssertions []reports.Assertion
	for _, a := range rep.Assertions {
		if strings.Contains(a.Name, "fails as expected") {
			expectAssertions = append(expectAssertions, a)
		}
	}
	if len(expectAssertions) != 1 || expectAssertions[0].Status != reports.StatusPass || strings.HasPrefix(expectAssertions[0].Name, "[") {
		t.Fatalf("expectation assertions %+v: want the union's one, passed", expectAssertions)
	}
	if !rep.Passed {
		t.Fatalf("merged report failed %v: the expected loss was reproduced", rep.FailedChecks())
	}

	runs = []*reports.Run{genRunExpectingI6("gen-0", 0), genRunExpectingI6("gen-1", 0)}
	rep = mergedOf(runs)
	applyVerification(rep, judgedI6(0), runs)
	if i6 := findInvariant(rep, "I6"); i6 == nil || i6.Expected == nil || i6.Expected.Met {
		t.Fatalf("merged I6 = %+v, want an expectation not met", i6)
	}
	if rep.Passed || len(rep.FailedChecks()) != 1 {
		t.Fatalf("passed %v, failed %v: want red with one failed expectation", rep.Passed, rep.FailedChecks())
	}
}
