package lifecycle

import (
	"fmt"
	"sort"
	"strings"

	"seckill-harness/checks"
	"seckill-harness/reports"
)

// expectFailures marks each invariant the plan expects to fail
// (Plan.Judging.ExpectFail: id -> fewest counted failures) with its expectation
// and returns one assertion per id, in id order: "I6 fails as expected
// (acknowledged reservations lost >= 1)". It passes when the invariant
// failed and its evidence counts at least the minimum; it fails when the
// invariant passed, was skipped, counted fewer, or is not in the report: a
// demonstration that did not reproduce its window is red.
func expectFailures(rep *reports.Report, expect map[string]int64) []reports.Assertion {
	ids := make([]string, 0, len(expect))
	for id := range expect {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []reports.Assertion
	for _, id := range ids {
		minCount := expect[id]
		inv := findInvariant(rep, id)
		name := fmt.Sprintf("%s fails as expected", strings.ToUpper(id))
		if inv == nil {
			out = append(out, assertion(name, false, 0, ptr(float64(minCount)), id+" is not in the report: it was not judged"))
			continue
		}
		n, of, ok := checks.FailureCount(inv.ID, inv.Evidence)
		name = fmt.Sprintf("%s %s fails as expected (%s >= %d)", inv.ID, inv.Name, of, minCount)
		met := ok && inv.Status == reports.StatusFail && n >= minCount
		inv.Expected = &reports.ExpectedFailure{Min: minCount, Count: n, CountOf: of, Met: met}
		var detail string
		switch {
		case met:
			detail = fmt.Sprintf("reproduced: %d %s; %s", n, of, inv.Detail)
		case inv.Status == reports.StatusFail:
			detail = fmt.Sprintf("failed with %d %s, fewer than the %d expected; %s", n, of, minCount, inv.Detail)
		case !ok && inv.Status != reports.StatusSkip:
			detail = fmt.Sprintf("its evidence holds no count of %s", of)
		default:
			detail = fmt.Sprintf("not reproduced: %s %s (%s)", inv.ID, inv.Status, inv.Detail)
		}
		out = append(out, assertion(name, met, float64(n), ptr(float64(minCount)), detail))
	}
	return out
}

func findInvariant(rep *reports.Report, id string) *reports.Invariant {
	for i := range rep.Invariants {
		if strings.EqualFold(rep.Invariants[i].ID, id) {
			return &rep.Invariants[i]
		}
	}
	return nil
}
