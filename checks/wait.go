package checks

import (
	"fmt"
	"sort"
	"time"

	"seckill-harness/history"
	"seckill-harness/reports"
	"seckill-harness/sut"
)

// waitConfirmed lists the reservation ids some ACCEPTED answer of which
// was confirmed by WAIT (Op.WaitConfirmed), sorted, and counts the
// ACCEPTED answers that were and were not confirmed.
func waitConfirmed(f *Facts) (rids []string, confirmedAnswers, otherAnswers int) {
	seen := map[string]bool{}
	for _, o := range f.all() {
		if !o.Accepted() || o.RID == "" {
			continue
		}
		if !o.WaitConfirmed() {
			otherAnswers++
			continue
		}
		confirmedAnswers++
		if !seen[o.RID] {
			seen[o.RID] = true
			rids = append(rids, o.RID)
		}
	}
	sort.Strings(rids)
	return rids, confirmedAnswers, otherAnswers
}

// judgeI10: every reservation whose ACCEPTED answer the replicas confirmed
// with WAIT still exists in Redis. A confirmed write was in the replica's
// memory before the client was answered, so a failover that promotes that
// replica keeps it; a path that claims confirmations it never waited for,
// or a WAIT on another connection than the write's, fails here. The
// evidence names each lost one.
func judgeI10(f *Facts) Verdict {
	confirmed, answers, others := waitConfirmed(f)
	var lost []string
	for _, rid := range confirmed {
		if _, ok := f.Records[rid]; !ok {
			lost = append(lost, rid)
		}
	}
	named := namedLostAcks(f, lost)
	detail := fmt.Sprintf("all %d WAIT-confirmed reservations exist in Redis", len(confirmed))
	if len(lost) > 0 {
		detail = fmt.Sprintf("%d of %d WAIT-confirmed reservations are gone from Redis", len(lost), len(confirmed))
	}
	return Verdict{len(lost) > 0, detail, map[string]any{
		"confirmed": len(confirmed), "confirmed_answers": answers, "unconfirmed_answers": others,
		"lost_confirmed": len(lost), "lost_confirmed_ids": listed(append([]string(nil), lost...)), "lost_confirmed_acks": named}}
}

// noWaitConfirmation: no ACCEPTED answer was confirmed by WAIT (the run
// sent none, or the replicas never confirmed one): nothing for I10.
func noWaitConfirmation(f *Facts, v Verdict) string {
	if n, _ := v.Evidence["confirmed"].(int); n > 0 {
		return ""
	}
	return "no ACCEPTED answer was confirmed by WAIT (no --wait-replicas, or the replicas never confirmed one)"
}

// WaitSummaryOf is report.json's "wait" for a history run with policy
// (nil when the policy is off and no operation sent WAIT): the ACCEPTED
// answers WAIT confirmed and not, the lost acknowledged reservations
// (lost, from the checks) in total and among the confirmed ones, and
// WAIT's round-trip percentiles.
func WaitSummaryOf(h *history.History, lost []string, policy sut.WaitPolicy) *reports.WaitSummary {
	hist := reports.NewHistogram()
	confirmed := map[string]bool{}
	s := &reports.WaitSummary{Replicas: policy.Replicas, TimeoutMs: float64(policy.Timeout.Microseconds()) / 1000}
	for _, o := range h.All() {
		if o.WaitSent() {
			s.WaitsSent++
			reports.RecordDuration(hist, time.Duration(o.WaitUs)*time.Microsecond)
		}
		if !o.Accepted() {
			continue
		}
		if o.WaitConfirmed() {
			s.AcksConfirmed++
			confirmed[o.RID] = true
		} else {
			s.AcksNotConfirmed++
		}
	}
	if !policy.Enabled() && s.WaitsSent == 0 {
		return nil
	}
	s.LostAcks = int64(len(lost))
	for _, rid := range lost {
		if confirmed[rid] {
			s.LostConfirmed++
		}
	}
	s.LostNotConfirmed = s.LostAcks - s.LostConfirmed
	if s.WaitsSent > 0 {
		s.LatencyMs = reports.PercentilesOf(hist)
	}
	return s
}
