package runner

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"seckill-harness/lua"
	"seckill-harness/runner/pipeline"
)

// The pipeline checks (P1–P5) judge the asynchronous half of the path —
// dispatcher, MQ, order service, release stage, expiry checker — from the
// pipeline's event log (every script call with its answer, every MQ send
// and delivery, every order row), the load's history and the final records
// read back from Redis (no SCAN: ids from the history, the log and the two
// zsets of each bucket).
//
//	P1 resale_no_oversell     released stock may be reserved again (ACCEPTED may exceed initial) but per
//	                          bucket: distinct ACCEPTED − RELEASED ≤ initial; orders ≤ initial; every order's
//	                          reservation is ORDER_CREATED in Redis (an order on a RELEASED reservation is a
//	                          unit sold twice)
//	P2 drained_terminal       after the drain phase every ACCEPTED reservation (and every one the pipeline
//	                          touched) is ORDER_CREATED or RELEASED and both zsets are empty; the stuck are
//	                          listed with their status (skip when no drain ran)
//	P3 legal_transitions      every UPDATED answer's previous→target pair is in the machine (RESERVED→
//	                          SEND_UNKNOWN|ENQUEUED|RELEASE_PENDING, SEND_UNKNOWN→ENQUEUED|RELEASE_PENDING,
//	                          ENQUEUED→ORDER_CREATED|REJECTED|RELEASE_PENDING, REJECTED→RELEASE_PENDING), and no
//	                          reservation was seen leaving ORDER_CREATED or RELEASED
//	P4 one_order_per_resv     duplicate deliveries of one message_id are counted and allowed; two orders for one
//	                          reservation, two rows for one message_id (the unique index) or a send/order under
//	                          another message_id than reserve-order:<rid>:v1 are not
//	P5 no_unsafe_release      no RESERVED / SEND_UNKNOWN / ENQUEUED reservation is released (or even sent to
//	                          compensate) without passing RELEASE_PENDING (or REJECTED); every RELEASED record has
//	                          a fenced release on record; no reservation was released while its message was
//	                          still in the MQ (the first consumption of a message never finds it released)
//
// I3 needs no change for resale: it counts distinct ACCEPTED ids less those
// RELEASED in Redis, which is what P1 restates per bucket. I4, I8 and I9
// must see the pipeline's releases: run Verify on WithPipelineReleases(h, …).

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
// history for reports and for VerifyPipeline.
func WithPipelineReleases(h *History, ev *PipelineEvidence, began time.Time) *History {
	out := &History{Ops: append([]Op(nil), h.Ops...)}
	if ev == nil {
		return out
	}
	var next uint32
	for i := range h.Ops {
		if h.Ops[i].ID >= next {
			next = h.Ops[i].ID + 1
		}
	}
	for i := range ev.Events {
		e := &ev.Events[i]
		if e.Op != pipeline.OpCompensate {
			continue
		}
		o := Op{ID: next, Kind: KindRelease, RID: e.RID, Bucket: uint16(e.Bucket), Flags: FlagPipelineRelease,
			Intended: e.Start.Sub(began), Start: e.Start.Sub(began), End: e.End.Sub(began), Sends: 1, Attempts: 1}
		next++
		if n, err := strconv.ParseUint(strings.TrimPrefix(e.User, "u"), 10, 32); err == nil {
			o.User = uint32(n)
		}
		if e.Failed() {
			o.Outcome, o.Flags = OutcomeUnknown, o.Flags|FlagHadUnknown
		} else {
			o.Outcome = Outcome(e.Code)
		}
		out.Ops = append(out.Ops, o)
	}
	return out
}

// allowedTransitions is the contract's machine (DESIGN.md §1).
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

// pipelineFacts is what the P-checks share.
type pipelineFacts struct {
	a        *lua.Activity
	ops      []Op // the load's operations (pipeline releases excluded)
	ev       *PipelineEvidence
	recs     map[string]record
	acked    []map[string]struct{} // per bucket
	histRel  map[string][]Outcome  // history release ops per rid
	obs      map[string][]observation
	pendLeft []int64
	expLeft  []int64
}

// VerifyPipeline runs P1–P5 on the load's history h (as RunPhases returned
// it), the pipeline's evidence (after Stop) and the final state of tgt's
// activity. A Go error means Redis could not be read.
func VerifyPipeline(ctx context.Context, tgt Target, h *History, ev *PipelineEvidence) ([]Check, error) {
	if ev == nil {
		return nil, fmt.Errorf("pipeline checker: no pipeline evidence")
	}
	a := tgt.Activity
	rdb := tgt.Store.Client()
	f := &pipelineFacts{a: a, ev: ev, histRel: map[string][]Outcome{}, obs: map[string][]observation{},
		acked: make([]map[string]struct{}, a.Buckets), pendLeft: make([]int64, a.Buckets), expLeft: make([]int64, a.Buckets)}
	for b := range f.acked {
		f.acked[b] = map[string]struct{}{}
	}
	cand := map[string]uint32{}
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Flags&FlagPipelineRelease != 0 {
			continue
		}
		f.ops = append(f.ops, *o)
		if o.RID != "" {
			cand[o.RID] = uint32(o.Bucket)
		}
		if o.Kind.IsReserve() && (o.Outcome == OutcomeUnknown || o.HadUnknown()) {
			cand[tgt.Store.ReservationIDFor(a, o.UserID(), o.RequestID())] = uint32(o.Bucket)
		}
		if o.Accepted() && o.RID != "" {
			f.acked[o.Bucket][o.RID] = struct{}{}
		}
		if o.Kind == KindRelease && o.RID != "" {
			f.histRel[o.RID] = append(f.histRel[o.RID], o.Outcome)
		}
	}
	for i := range ev.Events {
		cand[ev.Events[i].RID] = ev.Events[i].Bucket
	}
	for i := range ev.Sends {
		cand[ev.Sends[i].RID] = ev.Sends[i].Bucket
	}
	for i := range ev.Orders {
		cand[ev.Orders[i].RID] = ev.Orders[i].Bucket
	}
	for b := uint32(0); b < a.Buckets; b++ {
		sc := a.Scope(b)
		for zi, z := range []string{sc.SendPendingKey(), sc.ExpiryKey()} {
			ms, err := rdb.ZRange(ctx, z, 0, -1).Result()
			if err != nil {
				return nil, fmt.Errorf("pipeline checker: read %s: %w", z, err)
			}
			for _, m := range ms {
				cand[m] = b
			}
			if zi == 0 {
				f.pendLeft[b] = int64(len(ms))
			} else {
				f.expLeft[b] = int64(len(ms))
			}
		}
	}
	recs, err := readRecords(ctx, rdb, a, cand)
	if err != nil {
		return nil, fmt.Errorf("pipeline checker: %w", err)
	}
	f.recs = recs
	f.observe()
	return []Check{f.checkP1(), f.checkP2(), f.checkP3(), f.checkP4(), f.checkP5()}, nil
}

// observe collects, per reservation, the statuses the answers revealed.
func (f *pipelineFacts) observe() {
	for i := range f.ev.Events {
		e := &f.ev.Events[i]
		if e.Failed() {
			continue
		}
		add := func(s lua.Status) {
			if s != "" {
				f.obs[e.RID] = append(f.obs[e.RID], observation{s, e.Start, e.End})
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
	for rid := range f.obs {
		o := f.obs[rid]
		sort.Slice(o, func(i, j int) bool { return o[i].end.Before(o[j].end) })
	}
}

// fencedBefore reports whether some answer that came back before t showed
// rid REJECTED or RELEASE_PENDING (the only statuses compensate may take:
// once there, a reservation can only become RELEASED), and otherwise the
// last status seen before t.
func (f *pipelineFacts) fencedBefore(rid string, t time.Time) (bool, lua.Status) {
	var last lua.Status
	for _, o := range f.obs[rid] {
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

func (f *pipelineFacts) status(rid string) (lua.Status, bool) {
	r, ok := f.recs[rid]
	return r.status, ok
}

// P1: resale without oversell.
func (f *pipelineFacts) checkP1() Check {
	n := int(f.a.Buckets)
	accepted, released, held, resold, orders := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	var bad, soldTwice []string
	var tot struct{ acc, rel, held, ord, initial int64 }
	for b := 0; b < n; b++ {
		for rid := range f.acked[b] {
			accepted[b]++
			if s, ok := f.status(rid); ok && s == lua.StatusReleased {
				released[b]++
			}
		}
		held[b] = accepted[b] - released[b]
		initial := f.a.BucketStock(uint32(b))
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
	for _, r := range f.ev.Orders {
		if r.Result != pipeline.OrderCreated || ordered[r.RID] {
			continue
		}
		ordered[r.RID] = true
		if int(r.Bucket) < n {
			orders[r.Bucket]++
		}
		tot.ord++
		s, ok := f.status(r.RID)
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
		if initial := f.a.BucketStock(uint32(b)); orders[b] > initial {
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
	return verdict("P1", "resale_no_oversell", len(bad) > 0, detail, ev)
}

// P2: after the drain, every reservation is terminal.
func (f *pipelineFacts) checkP2() Check {
	var sp, ex int64
	for b := range f.pendLeft {
		sp += f.pendLeft[b]
		ex += f.expLeft[b]
	}
	byStatus := map[string]int{}
	var stuck []string
	var lost int
	seen := map[string]bool{}
	consider := func(rid string) {
		if seen[rid] {
			return
		}
		seen[rid] = true
		s, ok := f.status(rid)
		if !ok {
			lost++
			return
		}
		byStatus[string(s)]++
		if s != lua.StatusOrderCreated && s != lua.StatusReleased {
			stuck = append(stuck, rid+":"+string(s))
		}
	}
	for b := range f.acked {
		for rid := range f.acked[b] {
			consider(rid)
		}
	}
	for rid := range f.recs {
		consider(rid)
	}
	ev := map[string]any{"by_status": byStatus, "stuck": len(stuck), "stuck_ids": listed(append([]string(nil), stuck...)),
		"send_pending_left": sp, "reservation_expiry_left": ex, "missing_records": lost, "drain_error": f.ev.DrainErr,
		"drain_ms": f.ev.Stats.DrainMs}
	if !f.ev.Drained {
		return Check{ID: "P2", Name: "drained_terminal", Status: StatusSkip,
			Detail: fmt.Sprintf("no drain phase ran; %d reservations not terminal at the end", len(stuck)), Evidence: ev}
	}
	failed := len(stuck) > 0 || sp > 0 || ex > 0
	detail := fmt.Sprintf("after the drain all %d reservations are terminal (%d ORDER_CREATED, %d RELEASED); send_pending and reservation_expiry empty",
		len(seen)-lost, byStatus[string(lua.StatusOrderCreated)], byStatus[string(lua.StatusReleased)])
	if lost > 0 {
		detail += fmt.Sprintf("; %d records missing (see I6)", lost)
	}
	if failed {
		detail = fmt.Sprintf("%d reservations not terminal after the drain (send_pending %d, reservation_expiry %d left): %v",
			len(stuck), sp, ex, listed(append([]string(nil), stuck...)))
	}
	return verdict("P2", "drained_terminal", failed, detail, ev)
}

// P3: only the machine's transitions were ever accepted.
func (f *pipelineFacts) checkP3() Check {
	pairs := map[string]int{}
	var bad []string
	illegalRefused := 0
	for i := range f.ev.Events {
		e := &f.ev.Events[i]
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
	for rid, obs := range f.obs {
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
	return verdict("P3", "legal_transitions", len(bad) > 0, detail, ev)
}

// P4: duplicates allowed, one order per reservation.
func (f *pipelineFacts) checkP4() Check {
	var bad []string
	created := map[string]int{}
	rows := map[string]int{}
	for _, r := range f.ev.Orders {
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
	for _, s := range f.ev.Sends {
		if s.MessageID != lua.MessageID(s.RID) {
			wrongID++
			if wrongID <= maxListed {
				bad = append(bad, fmt.Sprintf("%s: sent as %s, not %s", s.RID, s.MessageID, lua.MessageID(s.RID)))
			}
		}
	}
	copies := map[string]map[uint64]bool{}
	for _, d := range f.ev.Deliveries {
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
	st := f.ev.Stats
	ev := map[string]any{"sends": st.Sends, "resends": st.Resends, "duplicate_deliveries": st.DuplicateDeliveries,
		"messages_delivered_more_than_once": dupMsgs, "max_copies_of_one_message": maxCopies,
		"duplicates_skipped_by_dedupe": st.DuplicatesSkipped, "orders": len(created), "order_rows": len(f.ev.Orders),
		"wrong_message_ids": wrongID, "violations": listed(append([]string(nil), bad...)), "violation_count": len(bad)}
	detail := fmt.Sprintf("%d orders, none twice; %d duplicate deliveries of %d message ids (allowed, deduped on message_id)",
		len(created), st.DuplicateDeliveries, dupMsgs)
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d violations of one order per reservation, e.g. %s", len(bad), bad[0])
	}
	return verdict("P4", "one_order_per_reservation", len(bad) > 0, detail, ev)
}

// P5: releases only through RELEASE_PENDING, never under an undelivered message.
func (f *pipelineFacts) checkP5() Check {
	var bad []string
	live := map[lua.Status]bool{lua.StatusReserved: true, lua.StatusSendUnknown: true, lua.StatusEnqueued: true}
	explained := map[string]bool{}
	unfenced, attempts := 0, 0
	for i := range f.ev.Events {
		e := &f.ev.Events[i]
		if e.Op != pipeline.OpCompensate {
			continue
		}
		fenced, last := f.fencedBefore(e.RID, e.Start)
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
	for rid, outs := range f.histRel {
		for _, o := range outs {
			switch o {
			case Outcome(lua.CompensateReleased), Outcome(lua.CompensateAlreadyReleased), OutcomeUnknown, OutcomeError:
				explained[rid] = true
			}
		}
	}
	unexplained := 0
	for rid, r := range f.recs {
		if r.status == lua.StatusReleased && !explained[rid] {
			unexplained++
			bad = append(bad, fmt.Sprintf("%s: RELEASED in Redis with no fenced release on record", rid))
		}
	}
	// The first consumption of each message must find its reservation not
	// yet released: otherwise it was released while the message was in the MQ.
	type first struct {
		delivery uint64
		hit      string
	}
	firsts := map[string]*first{}
	for i := range f.ev.Events {
		e := &f.ev.Events[i]
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
	late := 0
	for rid, fr := range firsts {
		if fr.hit == "" || len(f.histRel[rid]) > 0 {
			continue // a release operation of the load (a user's cancel) may fence anything
		}
		late++
		bad = append(bad, fmt.Sprintf("%s: its message was first consumed when the reservation was already %s (released while the message was in the MQ)", rid, fr.hit))
	}
	byStage := map[string]int{}
	for i := range f.ev.Events {
		e := &f.ev.Events[i]
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
	return verdict("P5", "no_unsafe_release", len(bad) > 0, detail, ev)
}

func sumInts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
