package checks

import (
	"fmt"
	"strings"

	"seckill-harness/history"
	"seckill-harness/lua"
)

// judgeI1Available is I1 for a system that shows each bucket's available
// units but no held counter (sut.Available without sut.Stock): available
// is never below 0, at the end nor at any sample taken during the run,
// and at the end available == initial − (distinct reservations answered
// ACCEPTED − those a release answered RELEASED) when every outcome is
// known (availableUnknowns): a unit taken without an acknowledgement, or
// an acknowledgement without its unit, breaks it. The comparison is per
// bucket, or of the totals for a service (its buckets may not be the
// harness's derivation); it is not made on a generator's share of a split
// load (the other generators' reservations are in the counter, not in
// this history). The detail says what was not compared.
func judgeI1Available(f *Facts) Verdict {
	var negative []string
	for b, s := range f.Stock {
		if s.Available < 0 {
			negative = append(negative, fmt.Sprintf("bucket %d: available=%d at the end", b, s.Available))
		}
	}
	var transient []map[string]any
	readErrs, below := 0, 0
	for _, s := range f.Samples {
		if s.Err != "" {
			readErrs++
			continue
		}
		if s.Stock.Available < 0 {
			below++
			if len(transient) < maxListed {
				transient = append(transient, map[string]any{"t_s": s.At.Seconds(), "bucket": s.Bucket, "available": s.Stock.Available})
			}
		}
	}
	mismatches, expected, notCompared := availableAccounting(f)
	ev := map[string]any{"available_only": true, "final_violations": negative, "samples": len(f.Samples),
		"sample_read_errors": readErrs, "transient_violations": transient, "samples_below_zero": below,
		"expected_available": expected, "accounting_mismatches": mismatches}
	var parts []string
	if len(negative) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d buckets end with available below 0: %v", len(negative), len(f.Stock), negative))
	}
	if below > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d samples during the run read available below 0", below, len(f.Samples)))
	}
	if len(mismatches) > 0 {
		parts = append(parts, fmt.Sprintf("available != initial − (distinct ACCEPTED − RELEASED): %v", mismatches))
	}
	failed := len(parts) > 0
	detail := fmt.Sprintf("available never below 0 in %d buckets (%d samples during the run, none below 0)", len(f.Stock), len(f.Samples))
	if notCompared == "" {
		detail += "; at the end available == initial − (distinct ACCEPTED − RELEASED)"
	}
	if failed {
		detail = strings.Join(parts, "; ")
	}
	if notCompared != "" {
		ev["accounting_not_compared"] = notCompared
		detail += "; available == initial − (distinct ACCEPTED − RELEASED) not compared: " + notCompared
	}
	return Verdict{failed, detail, ev}
}

// availableAccounting compares each bucket's available units at the end
// with initial − (distinct ACCEPTED − RELEASED) from the answers (the
// totals for a service), and returns the mismatches and the expected
// values; notCompared says why it compared nothing ("" when it did).
func availableAccounting(f *Facts) (mismatches []string, expected []int64, notCompared string) {
	if f.Generator.Split() {
		return nil, nil, fmt.Sprintf("generator %s holds a share of the history, the counter all of the load's", f.Generator)
	}
	if n, example := availableUnknowns(f); n > 0 {
		return nil, nil, fmt.Sprintf("the outcome of %d operations is not known (%s), so the units they took are not", n, example)
	}
	held := make([]int64, f.Buckets())
	acked := f.derive().ackedByBucket
	released := map[string]bool{}
	for _, o := range f.all() {
		if o.Kind == history.KindRelease && o.Outcome == history.Outcome(lua.CompensateReleased) {
			released[o.RID] = true
		}
	}
	for b := range acked {
		for rid := range acked[b] {
			if !released[rid] {
				held[b]++
			}
		}
	}
	expected = make([]int64, len(f.Stock))
	var avail, want int64
	for b, s := range f.Stock {
		if b < len(held) {
			expected[b] = s.Initial - held[b]
		}
		avail, want = avail+s.Available, want+expected[b]
		if f.Answers == nil && s.Available != expected[b] {
			mismatches = append(mismatches, fmt.Sprintf("bucket %d: available=%d, want %d − %d held = %d",
				b, s.Available, s.Initial, s.Initial-expected[b], expected[b]))
		}
	}
	if f.Answers != nil && avail != want {
		mismatches = append(mismatches, fmt.Sprintf("total: available=%d, want %d (a service: its buckets may not be the harness's, so the totals are compared)", avail, want))
	}
	return mismatches, expected, ""
}

// availableUnknowns counts the operations whose effect on the stock the
// answers do not tell: a lost reply (UNKNOWN, or a send of a re-sent
// operation), an error that may have run part of a script (OTHER) or a
// service's FAILED (check S4 says it may have reserved), an ACCEPTED
// without a reservation id (not counted as a distinct reservation). It
// names the first.
func availableUnknowns(f *Facts) (n int, first string) {
	for _, o := range f.all() {
		why := ""
		switch {
		case o.Outcome == history.OutcomeUnknown:
			why = "UNKNOWN"
		case o.HadUnknown():
			why = "a lost reply, then re-sent"
		case o.Outcome == history.OutcomeError && (o.ErrClass == history.ErrOther || o.ErrClass == history.ErrFailed):
			why = "ERROR " + o.ErrClass.String()
		case o.Accepted() && o.RID == "":
			why = "ACCEPTED without a reservation id"
		}
		if why == "" {
			continue
		}
		if n == 0 {
			first = fmt.Sprintf("op %d: %s", o.ID, why)
		}
		n++
	}
	return n, first
}
