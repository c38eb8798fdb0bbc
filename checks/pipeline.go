package checks

import (
	"fmt"
	"sort"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut/pipeline"
)

// The pipeline checks judge the asynchronous half of the path —
// dispatcher, MQ, order service, release stage, expiry checker — from the
// pipeline's event log (every script call with its answer, every MQ send
// and delivery, every order row), the load's history and the final records
// read back from Redis (CollectFacts: ids from the history, the log and the
// two zsets of each bucket). Their contracts are in the table
// (invariants.go); their judges are here.
//
// I3 needs no change for resale: it counts distinct ACCEPTED ids less those
// RELEASED in Redis, which is what P1 restates per bucket. I4, I8 and I9
// must see the pipeline's releases: give Judge WithPipelineReleases(h, …).

// PipelineEvidence is what the background pipeline recorded (pipeline.Evidence).
type PipelineEvidence = pipeline.Evidence

// FlagPipelineRelease marks the release operations WithPipelineReleases adds
// to a history (compensate calls of the pipeline, not operations of the load).
const FlagPipelineRelease uint8 = 1 << 5

// WithPipelineReleases returns a copy of h with one release operation per
// compensate call of the pipeline (outcome: its answer, or UNKNOWN when the
// call failed), placed on the run's clock (began = Result.Began). Pass it to
// Verify so that I4 (a user may reserve again once released), I8 (released
// at most once) and I9 (released units are sold again; SOLD_OUT is judged
// after the last release) count the pipeline's releases. Keep the original
// history for reports and for the end-to-end facts.
func WithPipelineReleases(h *history.History, ev *PipelineEvidence, began time.Time) *history.History {
	if ev == nil {
		return h.Extended(nil)
	}
	var extra []history.Op
	var next uint32
	for _, o := range h.All() {
		if o.ID >= next {
			next = o.ID + 1
		}
	}
	for i := range ev.Events {
		e := &ev.Events[i]
		if e.Op != pipeline.OpCompensate {
			continue
		}
		o := history.Op{ID: next, Kind: history.KindRelease, RID: e.RID, Bucket: uint16(e.Bucket), Flags: FlagPipelineRelease,
			Intended: e.Start.Sub(began), Start: e.Start.Sub(began), End: e.End.Sub(began), Sends: 1, Attempts: 1}
		next++
		if u, ok := history.ParseUserID(e.User); ok {
			o.User = u
		}
		if e.Failed() {
			o.Outcome, o.Flags = history.OutcomeUnknown, o.Flags|history.FlagHadUnknown
		} else {
			o.Outcome = history.Outcome(e.Code)
		}
		extra = append(extra, o)
	}
	return h.Extended(extra)
}

// allowedTransitions is the contract's state machine of a reservation:
// RESERVED→{SEND_UNKNOWN, ENQUEUED, RELEASE_PENDING}, SEND_UNKNOWN→{ENQUEUED,
// RELEASE_PENDING}, ENQUEUED→{ORDER_CREATED, REJECTED, RELEASE_PENDING},
// REJECTED→{RELEASE_PENDING}; RELEASE_PENDING only becomes RELEASED (by
// compensate), ORDER_CREATED and RELEASED are terminal.
var allowedTransitions = map[lua.Status]map[lua.Status]bool{
	lua.StatusReserved:    {lua.StatusSendUnknown: true, lua.StatusEnqueued: true, lua.StatusReleasePending: true},
	lua.StatusSendUnknown: {lua.StatusEnqueued: true, lua.StatusReleasePending: true},
	lua.StatusEnqueued:    {lua.StatusOrderCreated: true, lua.StatusRejected: true, lua.StatusReleasePending: true},
	lua.StatusRejected:    {lua.StatusReleasePending: true},
}

// observation is a status the answer of one call reveals, at its end.
type observation struct {
	status     lua.Status
	start, end time.Time
}

// observe collects, per reservation, the statuses the pipeline's answers
// revealed, in the order they came back.
func observe(ev *PipelineEvidence) map[string][]observation {
	obs := map[string][]observation{}
	for i := range ev.Events {
		e := &ev.Events[i]
		if e.Failed() {
			continue
		}
		add := func(s lua.Status) {
			if s != "" {
				obs[e.RID] = append(obs[e.RID], observation{s, e.Start, e.End})
			}
		}
		if e.Op == pipeline.OpTransition {
			switch lua.TransitionCode(e.Code) {
			case lua.TransitionUpdated, lua.TransitionIdempotent:
				add(e.Target)
			case lua.TransitionIllegal:
				add(e.Status)
			}
			continue
		}
		switch lua.CompensateCode(e.Code) {
		case lua.CompensateReleased, lua.CompensateAlreadyReleased:
			add(lua.StatusReleased)
		case lua.CompensateNotCompensatable:
			add(e.Status)
		}
	}
	for rid := range obs {
		o := obs[rid]
		sort.Slice(o, func(i, j int) bool { return o[i].end.Before(o[j].end) })
	}
	return obs
}

// fencedBefore reports whether some answer that came back before t showed
// rid REJECTED or RELEASE_PENDING (the only statuses compensate may take:
// once there, a reservation can only become RELEASED), and otherwise the
// last status seen before t.
func fencedBefore(obs map[string][]observation, rid string, t time.Time) (bool, lua.Status) {
	var last lua.Status
	for _, o := range obs[rid] {
		if !o.end.Before(t) {
			break
		}
		if o.status == lua.StatusReleasePending || o.status == lua.StatusRejected {
			return true, o.status
		}
		if o.status != lua.StatusReleased {
			last = o.status
		}
	}
	return false, last
}

// loadReleases is, per reservation id, the outcomes of the load's own
// release operations (not the pipeline's).
func loadReleases(f *Facts) map[string][]history.Outcome {
	out := map[string][]history.Outcome{}
	for _, o := range f.all() {
		if o.Kind == history.KindRelease && o.RID != "" && o.Flags&FlagPipelineRelease == 0 {
			out[o.RID] = append(out[o.RID], o.Outcome)
		}
	}
	return out
}

// judgeP1: resale without oversell.
func judgeP1(f *Facts) Verdict {
	n := f.Buckets()
	acked := f.derive().ackedByBucket
	accepted, released, held, resold, orders := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	var bad, soldTwice []string
	var tot struct{ acc, rel, held, ord, initial int64 }
	for b := 0; b < n; b++ {
		for rid := range acked[b] {
			accepted[b]++
			if s, ok := status(f, rid); ok && s == lua.StatusReleased {
				released[b]++
			}
		}
		held[b] = accepted[b] - released[b]
		initial := f.Planned[b]
		resold[b] = max(0, accepted[b]-initial)
		tot.acc += accepted[b]
		tot.rel += released[b]
		tot.held += held[b]
		tot.initial += initial
		if held[b] > initial {
			bad = append(bad, fmt.Sprintf("bucket %d: %d ACCEPTED − %d RELEASED = %d held > initial %d", b, accepted[b], released[b], held[b], initial))
		}
	}
	ordered := map[string]bool{}
	missing := 0
	for _, r := range f.Pipeline.Orders {
		if r.Result != pipeline.OrderCreated || ordered[r.RID] {
			continue
		}
		ordered[r.RID] = true
		if int(r.Bucket) < n {
			orders[r.Bucket]++
		}
		tot.ord++
		s, ok := status(f, r.RID)
		switch {
		case !ok:
			missing++
		case s == lua.StatusReleased:
			soldTwice = append(soldTwice, fmt.Sprintf("%s: order %s but the reservation is RELEASED (its unit was given back and may be sold again)", r.RID, r.OrderID))
		case s != lua.StatusOrderCreated:
			soldTwice = append(soldTwice, fmt.Sprintf("%s: order %s but the reservation is %s", r.RID, r.OrderID, s))
		}
	}
	for b := 0; b < n; b++ {
		if initial := f.Planned[b]; orders[b] > initial {
			bad = append(bad, fmt.Sprintf("bucket %d: %d orders > initial %d", b, orders[b], initial))
		}
	}
	if tot.held > tot.initial {
		bad = append(bad, fmt.Sprintf("total: %d held > %d", tot.held, tot.initial))
	}
	if tot.ord > tot.initial {
		bad = append(bad, fmt.Sprintf("total: %d orders > %d", tot.ord, tot.initial))
	}
	bad = append(bad, soldTwice...)
	ev := map[string]any{"accepted": accepted, "released": released, "held": held, "resold": resold, "orders": orders,
		"accepted_total": tot.acc, "released_total": tot.rel, "held_total": tot.held, "orders_total": tot.ord,
		"initial_total": tot.initial, "orders_on_missing_records": missing, "orders_not_order_created": len(soldTwice),
		"violations": listed(append([]string(nil), bad...))}
	detail := fmt.Sprintf("%d distinct ACCEPTED (%d beyond the stock: resold), %d RELEASED, %d held ≤ %d; %d orders, each on an ORDER_CREATED reservation",
		tot.acc, max(0, tot.acc-tot.initial), tot.rel, tot.held, tot.initial, tot.ord)
	if len(bad) > 0 {
		detail = fmt.Sprintf("oversold with resale: %d violations, e.g. %s", len(bad), bad[0])
	}
	return Verdict{len(bad) > 0, detail, ev}
}

func vacuousP1(_ *Facts, v Verdict) string {
	if v.Evidence["accepted_total"] != int64(0) || v.Evidence["orders_total"] != int64(0) {
		return ""
	}
	return "no operation was answered ACCEPTED and no order was created: nothing could be sold twice"
}

// terminality is P2's census: every reservation acknowledged or read back,
// by status, and those not terminal.
type terminality struct {
	byStatus map[string]int
	stuck    []string
	missing  int
	seen     int
}

func census(f *Facts) terminality {
	t := terminality{byStatus: map[string]int{}}
	seen := map[string]bool{}
	consider := func(rid string) {
		if seen[rid] {
			return
		}
		seen[rid] = true
		s, ok := status(f, rid)
		if !ok {
			t.missing++
			return
		}
		t.byStatus[string(s)]++
		if s != lua.StatusOrderCreated && s != lua.StatusReleased {
			t.stuck = append(t.stuck, rid+":"+string(s))
		}
	}
	for _, acked := range f.derive().ackedByBucket {
		for rid := range acked {
			consider(rid)
		}
	}
	for rid := range f.Records {
		consider(rid)
	}
	t.seen = len(seen)
	return t
}

// judgeP2: after the drain, every reservation is terminal.
func judgeP2(f *Facts) Verdict {
	var sp, ex int64
	for b := range f.SendPendingLeft {
		sp += f.SendPendingLeft[b]
		ex += f.ExpiryLeft[b]
	}
	t := census(f)
	ev := map[string]any{"by_status": t.byStatus, "stuck": len(t.stuck), "stuck_ids": listed(append([]string(nil), t.stuck...)),
		"send_pending_left": sp, "reservation_expiry_left": ex, "missing_records": t.missing, "drain_error": f.Pipeline.DrainErr,
		"drain_ms": f.Pipeline.Stats.Drain.DrainMs}
	failed := len(t.stuck) > 0 || sp > 0 || ex > 0
	detail := fmt.Sprintf("after the drain all %d reservations are terminal (%d ORDER_CREATED, %d RELEASED); send_pending and reservation_expiry empty",
		t.seen-t.missing, t.byStatus[string(lua.StatusOrderCreated)], t.byStatus[string(lua.StatusReleased)])
	if t.missing > 0 {
		detail += fmt.Sprintf("; %d records missing (see I6)", t.missing)
	}
	if failed {
		detail = fmt.Sprintf("%d reservations not terminal after the drain (send_pending %d, reservation_expiry %d left): %v",
			len(t.stuck), sp, ex, listed(append([]string(nil), t.stuck...)))
	}
	return Verdict{failed, detail, ev}
}

// appliesP2: terminality is promised after a drain only.
func appliesP2(f *Facts, v Verdict) string {
	if f.Pipeline.Drained {
		return ""
	}
	return fmt.Sprintf("no drain phase ran; %d reservations not terminal at the end", v.Evidence["stuck"])
}

func vacuousP2(f *Facts, _ Verdict) string {
	if f.derive().acked > 0 || len(f.Records) > 0 {
		return ""
	}
	return "no reservation reached the pipeline: nothing to drain"
}

// judgeP3: only the machine's transitions were ever accepted.
func judgeP3(f *Facts) Verdict {
	pairs := map[string]int{}
	var bad []string
	illegalRefused := 0
	for i := range f.Pipeline.Events {
		e := &f.Pipeline.Events[i]
		if e.Op != pipeline.OpTransition || e.Failed() {
			continue
		}
		switch lua.TransitionCode(e.Code) {
		case lua.TransitionIllegal:
			illegalRefused++
		case lua.TransitionUpdated:
			k := string(e.Status) + "->" + string(e.Target)
			pairs[k]++
			if !allowedTransitions[e.Status][e.Target] {
				bad = append(bad, fmt.Sprintf("%s: %s accepted %s (%s stage)", e.RID, e.Status, k, e.Stage))
			}
		}
	}
	// Terminal statuses stay terminal: after an answer showed ORDER_CREATED
	// or RELEASED, a later call must not find anything else.
	for rid, obs := range f.derive().obs {
		for i, o := range obs {
			if o.status != lua.StatusOrderCreated && o.status != lua.StatusReleased {
				continue
			}
			for _, later := range obs[i+1:] {
				if later.start.After(o.end) && later.status != o.status {
					bad = append(bad, fmt.Sprintf("%s: seen %s, later %s", rid, o.status, later.status))
					break
				}
			}
			break
		}
	}
	ev := map[string]any{"updated_pairs": pairs, "illegal_refused_by_script": illegalRefused, "violations": listed(append([]string(nil), bad...)),
		"violation_count": len(bad)}
	detail := fmt.Sprintf("%d status changes accepted, all in the machine; %d illegal attempts refused by transition.lua", sumInts(pairs), illegalRefused)
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d status changes outside the machine were accepted, e.g. %s", len(bad), bad[0])
	}
	return Verdict{len(bad) > 0, detail, ev}
}

func vacuousP3(f *Facts, _ Verdict) string {
	if len(f.derive().obs) > 0 {
		return ""
	}
	return "the pipeline's calls revealed no status (no transition or compensation answered): no status change to judge"
}

// judgeP4: duplicates allowed, one order per reservation.
func judgeP4(f *Facts) Verdict {
	var bad []string
	created := map[string]int{}
	rows := map[string]int{}
	for _, r := range f.Pipeline.Orders {
		rows[r.MessageID]++
		if r.Result == pipeline.OrderCreated {
			created[r.RID]++
			if r.MessageID != lua.MessageID(r.RID) {
				bad = append(bad, fmt.Sprintf("%s: order under message_id %s", r.RID, r.MessageID))
			}
		}
	}
	for rid, n := range created {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("%s: %d orders", rid, n))
		}
	}
	for id, n := range rows {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("%s: %d order rows (unique index on message_id)", id, n))
		}
	}
	wrongID := 0
	for _, s := range f.Pipeline.Sends {
		if s.MessageID != lua.MessageID(s.RID) {
			wrongID++
			if wrongID <= maxListed {
				bad = append(bad, fmt.Sprintf("%s: sent as %s, not %s", s.RID, s.MessageID, lua.MessageID(s.RID)))
			}
		}
	}
	copies := map[string]map[uint64]bool{}
	for _, d := range f.Pipeline.Deliveries {
		if copies[d.MessageID] == nil {
			copies[d.MessageID] = map[uint64]bool{}
		}
		copies[d.MessageID][d.Send] = true
	}
	dupMsgs, maxCopies := 0, 0
	for _, c := range copies {
		if len(c) > 1 {
			dupMsgs++
		}
		maxCopies = max(maxCopies, len(c))
	}
	st := f.Pipeline.Stats
	ev := map[string]any{"sends": st.Send.Sends, "resends": st.Send.Resends, "duplicate_deliveries": st.Delivery.DuplicateDeliveries,
		"messages_delivered_more_than_once": dupMsgs, "max_copies_of_one_message": maxCopies,
		"duplicates_skipped_by_dedupe": st.Order.DuplicatesSkipped, "orders": len(created), "order_rows": len(f.Pipeline.Orders),
		"wrong_message_ids": wrongID, "violations": listed(append([]string(nil), bad...)), "violation_count": len(bad)}
	detail := fmt.Sprintf("%d orders, none twice; %d duplicate deliveries of %d message ids (allowed, deduped on message_id)",
		len(created), st.Delivery.DuplicateDeliveries, dupMsgs)
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d violations of one order per reservation, e.g. %s", len(bad), bad[0])
	}
	return Verdict{len(bad) > 0, detail, ev}
}

func vacuousP4(f *Facts, _ Verdict) string {
	ev := f.Pipeline
	if len(ev.Sends) > 0 || len(ev.Orders) > 0 || len(ev.Deliveries) > 0 {
		return ""
	}
	return "the pipeline sent no message and wrote no order row: no order to judge"
}

// judgeP5: releases only through RELEASE_PENDING, never under an
// undelivered message.
func judgeP5(f *Facts) Verdict {
	var bad []string
	evs := f.Pipeline.Events
	obs := f.derive().obs
	histRel := loadReleases(f)
	live := map[lua.Status]bool{lua.StatusReserved: true, lua.StatusSendUnknown: true, lua.StatusEnqueued: true}
	explained := map[string]bool{}
	unfenced, attempts := 0, 0
	for i := range evs {
		e := &evs[i]
		if e.Op != pipeline.OpCompensate {
			continue
		}
		fenced, last := fencedBefore(obs, e.RID, e.Start)
		if fenced && (e.Failed() || lua.CompensateCode(e.Code) == lua.CompensateReleased) {
			explained[e.RID] = true
		}
		switch {
		case e.Failed():
		case lua.CompensateCode(e.Code) == lua.CompensateReleased && !fenced:
			unfenced++
			if last == "" {
				last = "an unrecorded status"
			}
			bad = append(bad, fmt.Sprintf("%s: released by %s from %s without RELEASE_PENDING", e.RID, e.Stage, last))
		case lua.CompensateCode(e.Code) == lua.CompensateNotCompensatable && live[e.Status]:
			attempts++
			bad = append(bad, fmt.Sprintf("%s: %s sent a %s reservation to compensate without RELEASE_PENDING (refused by compensate.lua)", e.RID, e.Stage, e.Status))
		}
	}
	// The load's own release operations (the path's Release: fence, then
	// compensate) explain a RELEASED record when they may have released it.
	for rid, outs := range histRel {
		for _, o := range outs {
			switch o {
			case history.Outcome(lua.CompensateReleased), history.Outcome(lua.CompensateAlreadyReleased), history.OutcomeUnknown, history.OutcomeError:
				explained[rid] = true
			}
		}
	}
	unexplained := 0
	for rid, r := range f.Records {
		if r.Status == lua.StatusReleased && !explained[rid] {
			unexplained++
			bad = append(bad, fmt.Sprintf("%s: RELEASED in Redis with no fenced release on record", rid))
		}
	}
	lateBad := releasedUnderMessage(evs, histRel)
	late := len(lateBad)
	bad = append(bad, lateBad...)
	byStage := map[string]int{}
	for i := range evs {
		e := &evs[i]
		if e.Op == pipeline.OpCompensate && !e.Failed() && lua.CompensateCode(e.Code) == lua.CompensateReleased {
			byStage[string(e.Stage)]++
		}
	}
	ev := map[string]any{"releases_by_stage": byStage, "unfenced_releases": unfenced, "unfenced_attempts_refused": attempts,
		"released_without_fence_on_record": unexplained, "released_under_undelivered_message": late,
		"violations": listed(append([]string(nil), bad...)), "violation_count": len(bad)}
	detail := fmt.Sprintf("%d pipeline releases, each after RELEASE_PENDING or REJECTED; no message consumed after its reservation was released", sumInts(byStage))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d unsafe releases, e.g. %s", len(bad), bad[0])
	}
	return Verdict{len(bad) > 0, detail, ev}
}

func vacuousP5(f *Facts, _ Verdict) string {
	for i := range f.Pipeline.Events {
		e := &f.Pipeline.Events[i]
		if e.Op == pipeline.OpCompensate || (e.Stage == pipeline.StageOrder && e.Op == pipeline.OpTransition) {
			return ""
		}
	}
	for _, r := range f.Records {
		if r.Status == lua.StatusReleased {
			return ""
		}
	}
	return "nothing was released or sent to compensate and no message was consumed: no release to judge"
}

func sumInts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// releasedUnderMessage lists the reservations whose message was first
// consumed when they were already RELEASE_PENDING or RELEASED: released
// while the message was in the MQ (unless the load itself released them:
// a user's cancel may fence anything).
func releasedUnderMessage(evs []pipeline.Event, histRel map[string][]history.Outcome) []string {
	// The first consumption of each message must find its reservation not
	// yet released: otherwise it was released while the message was in the MQ.
	type first struct {
		delivery uint64
		hit      string
	}
	firsts := map[string]*first{}
	for i := range evs {
		e := &evs[i]
		if e.Stage != pipeline.StageOrder || e.Op != pipeline.OpTransition || e.Failed() {
			continue
		}
		fr := firsts[e.RID]
		if fr == nil || e.Delivery < fr.delivery {
			fr = &first{delivery: e.Delivery}
			firsts[e.RID] = fr
		}
		if e.Delivery == fr.delivery && lua.TransitionCode(e.Code) == lua.TransitionIllegal &&
			(e.Status == lua.StatusReleasePending || e.Status == lua.StatusReleased) && fr.hit == "" {
			fr.hit = string(e.Status)
		}
	}
	var bad []string
	for rid, fr := range firsts {
		if fr.hit == "" || len(histRel[rid]) > 0 {
			continue // a release operation of the load (a user's cancel) may fence anything
		}
		bad = append(bad, fmt.Sprintf("%s: its message was first consumed when the reservation was already %s (released while the message was in the MQ)", rid, fr.hit))
	}
	return bad
}
