package catalogue

import (
	"fmt"
	"strings"

	"seckill-harness/reports"
)

// Outcome is how one run of one built-in ended.
type Outcome string

// The outcomes, from best to worst for a suite's roll-up.
const (
	// Pass: every check passed and no failure was expected.
	Pass Outcome = "pass"
	// ExpectedFail: the run passed because every failure it declared
	// (assertions.expect_fail) came with at least its minimum count.
	ExpectedFail Outcome = "expected-fail"
	// Inconclusive: no check failed, but the run could not show a pass:
	// its only shortfalls are inconclusive assertions (the stand could not
	// sustain the plan, or a fault missed the system under test:
	// reports.Report.IsInconclusive; the run exits 3).
	Inconclusive Outcome = "inconclusive"
	// Fail: a check failed that the scenario does not expect to fail, or
	// an expected failure came with fewer than its minimum.
	Fail Outcome = "fail"
	// Error: the run could not be judged (a harness error, an
	// interrupted load, a suite member that never ran).
	Error Outcome = "error"
)

// Held says whether outcome meets the expectation. An inconclusive run
// holds both expectations the catalogue knows: they are about invariants
// (all hold, or the declared ones fail), and an inconclusive run is one
// whose only failures are SLOs.
func Held(outcome, expected Outcome) bool {
	return outcome == expected || outcome == Inconclusive && (expected == Pass || expected == ExpectedFail)
}

// Verdict is one classified run: its outcome and, when it did not pass
// cleanly, the first failing check and the first line of its detail.
type Verdict struct {
	Outcome       Outcome
	Check, Detail string
}

// Classify maps a finished run to its outcome. err is a harness error of
// the run (nil when the run was judged, whether its checks passed or not);
// rep is its report (nil when none was written). A run that did not pass
// only because a declared failure did not happen (the invariant passed) is
// Pass: the unexpected pass of an expected failure.
func Classify(rep *reports.Report, err error) Verdict {
	switch {
	case err != nil:
		return Verdict{Error, "harness error", firstLine(err.Error())}
	case rep == nil:
		return Verdict{Error, "report", "the run wrote no report"}
	case rep.Interrupted != nil:
		return Verdict{Error, "interrupted", rep.Interrupted.Reason}
	case rep.Passed:
		for _, inv := range rep.Invariants {
			if inv.Expected != nil && inv.Expected.Met {
				return Verdict{Outcome: ExpectedFail}
			}
		}
		return Verdict{Outcome: Pass}
	}
	if rep.IsInconclusive() {
		for _, a := range rep.Assertions {
			if a.Status == reports.StatusInconclusive {
				return Verdict{Inconclusive, a.Name, firstLine(a.Detail)}
			}
		}
	}
	check, detail, onlyUnmet := firstFailure(rep)
	switch {
	case onlyUnmet:
		return Verdict{Pass, check, detail}
	}
	return Verdict{Fail, check, detail}
}

// firstFailure names the first failed check of rep (a required invariant
// first, then an assertion) and says whether every failed check is an
// expected failure that did not come because its invariant passed.
func firstFailure(rep *reports.Report) (check, detail string, onlyUnmet bool) {
	for _, inv := range rep.Invariants {
		if inv.Status == reports.StatusFail && !inv.Waived && inv.Expected == nil {
			return inv.ID + " " + inv.Name, firstLine(inv.Detail), false
		}
	}
	onlyUnmet = true
	for _, a := range rep.Assertions {
		if a.Status != reports.StatusFail {
			continue
		}
		if check == "" {
			check, detail = a.Name, firstLine(a.Detail)
			if detail == "" {
				detail = observed(a)
			} else if a.Threshold != nil && !strings.Contains(detail, "observed") {
				detail = observed(a) + "; " + detail
			}
		}
		if !unmetByPass(rep, a.Name) {
			onlyUnmet = false
		}
	}
	if check == "" {
		return "run", "passed=false with no failed check", false
	}
	return check, detail, onlyUnmet
}

// unmetByPass says whether the assertion named name is an expected failure
// ("<id> <name> fails as expected …") whose invariant passed.
func unmetByPass(rep *reports.Report, name string) bool {
	if !strings.Contains(name, "fails as expected") {
		return false
	}
	for _, inv := range rep.Invariants {
		if inv.Expected != nil && strings.HasPrefix(name, inv.ID+" ") {
			return inv.Status == reports.StatusPass
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// observed is an assertion's figures when it has no detail: "observed
// 63.2 ms, threshold 50 ms".
func observed(a reports.Assertion) string {
	s := fmt.Sprintf("observed %g %s", a.Observed, a.Unit)
	if a.Threshold != nil {
		s += fmt.Sprintf(", threshold %g %s", *a.Threshold, a.Unit)
	}
	return strings.Join(strings.Fields(s), " ")
}
