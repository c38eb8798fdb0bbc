package runner

import (
	"fmt"
	"sort"
	"time"

	"seckill-harness/history"
	"seckill-harness/reports"
)

// FaultWindow is when one fault was in force, as offsets from the run's start.
// Healed false means it stayed until the end of the run.
type FaultWindow struct {
	Name       string
	InjectedAt time.Duration
	HealedAt   time.Duration
	Healed     bool
}

// FaultPhases splits the run into "baseline" (before the first fault), and
// for each fault "during <name>" and "after <name>" (until the next fault or
// the end), for per-phase latency in the report.
func FaultPhases(ws []FaultWindow, end time.Duration) []reports.PhaseSpan {
	if len(ws) == 0 {
		return nil
	}
	sorted := append([]FaultWindow(nil), ws...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].InjectedAt < sorted[j].InjectedAt })
	out := []reports.PhaseSpan{{Name: "baseline", Start: 0, End: sorted[0].InjectedAt}}
	for i, w := range sorted {
		heal := end
		if w.Healed {
			heal = w.HealedAt
		}
		out = append(out, reports.PhaseSpan{Name: "during " + w.Name, Start: w.InjectedAt, End: heal})
		next := end
		if i+1 < len(sorted) {
			next = sorted[i+1].InjectedAt
		}
		if next > heal {
			out = append(out, reports.PhaseSpan{Name: "after " + w.Name, Start: heal, End: next})
		}
	}
	return out
}

// WindowEvidence is what the history shows about one fault window: the
// operations intended in it and their answers, replies lost and replayed
// with the same ids, TRYAGAIN/MOVED/ASK answers, the time from the inject to
// the first successful answer, the longest stretch without a successful
// answer on the hot bucket, and acknowledged reservations later lost.
// settle extends the window after the heal (recovery is often after it).
func WindowEvidence(h *history.History, w FaultWindow, end, settle time.Duration, hotBucket uint16, lost map[string]bool) map[string]any {
	from := w.InjectedAt
	to := end
	if w.Healed {
		to = w.HealedAt
	}
	until := min(to+settle, end)
	outcomes := map[string]int{}
	errClasses := map[string]int{}
	var ops, unknown, lostReplies, replayed, tryAgain, redirs, lostAcks int
	firstSuccess := time.Duration(-1)
	var successEnds []time.Duration
	for _, o := range h.All() {
		if o.Outcome == history.OutcomeDropped {
			continue
		}
		success := o.Outcome >= 0 && o.Kind != history.KindQuery // an answer of the reserve path: a read is not one
		if o.Intended >= from && o.Intended < to {
			ops++
			outcomes[o.TallyName()]++
			if o.Outcome == history.OutcomeUnknown {
				unknown++
			}
			if o.Outcome == history.OutcomeError {
				errClasses[o.ErrClass.String()]++
			}
		}
		if o.Start >= from && o.Start < until {
			tryAgain += int(o.TryAgain)
			redirs += int(o.Redirs)
			if o.HadUnknown() {
				lostReplies++
				if success && o.Replay() {
					replayed++
				}
			}
			if o.Accepted() && lost[o.RID] {
				lostAcks++
			}
		}
		if success && o.Start >= from && (firstSuccess < 0 || o.End < firstSuccess) {
			firstSuccess = o.End
		}
		if success && o.Bucket == hotBucket && o.End >= from && o.End <= until {
			successEnds = append(successEnds, o.End)
		}
	}
	sort.Slice(successEnds, func(i, j int) bool { return successEnds[i] < successEnds[j] })
	gap, gapAt := time.Duration(0), from
	prev := from
	for _, t := range append(successEnds, until) {
		if d := t - prev; d > gap {
			gap, gapAt = d, prev
		}
		prev = t
	}
	ev := map[string]any{
		"ops_in_window":                  ops,
		"outcomes_in_window":             outcomes,
		"errors_in_window":               errClasses,
		"unknown_in_window":              unknown,
		"lost_replies":                   lostReplies,
		"lost_replies_replayed_same_id":  replayed,
		"tryagain_answers":               tryAgain,
		"moved_ask_answers":              redirs,
		"lost_acks":                      lostAcks,
		"longest_gap_without_success_ms": ms(gap),
		"longest_gap_starts_at_s":        gapAt.Seconds(),
		"observed_until_s":               until.Seconds(),
	}
	if firstSuccess >= 0 {
		ev["first_success_after_inject_ms"] = ms(firstSuccess - from)
	} else {
		ev["first_success_after_inject_ms"] = nil
		ev["note"] = fmt.Sprintf("no successful answer after the inject (until %.1fs)", end.Seconds())
	}
	return ev
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
