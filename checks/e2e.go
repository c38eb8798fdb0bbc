package checks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut/pipeline"
)

// The end-to-end checks judge the whole path down to PostgreSQL,
// the final defence, as pure functions over facts collected first
// (CollectEndToEnd: the load's history, the pipeline's evidence, one
// consistent snapshot of the order database, the Redis records):
//
//	E1 orders_within_stock       PostgreSQL never oversells, whatever Redis did: CREATED orders ≤ stock.total and
//	                             stock.sold ≤ stock.total
//	E2 one_valid_order_per_user  no user holds two CREATED orders of the activity
//	E3 one_order_per_resv_msg    no reservation_id and no message_id has two orders
//	E4 divergences_explained     every divergence the final reconciliation pass found is explained: an order whose
//	                             reservation Redis lost (the reservation was ACCEPTED: Redis lost it, PostgreSQL kept
//	                             the order), an ACCEPTED reservation Redis lost before its order (I6 judges the loss;
//	                             reconciliation names it), or a status it repaired; any other (a lost order, a released unit with an
//	                             order, an unrepaired status, stock vs ledger, Redis counters vs its records) fails
//	E5 end_to_end_liveness       after the drain every ACCEPTED reservation ended as an order, a recorded rejection
//	                             (inbox), or a release with a stated reason that the facts support: a user's cancel; the
//	                             expiry checker's release only after at least one send attempt and never of a message
//	                             the order stage received without recording a decision. Never dispatched, dropped,
//	                             lost, or not terminal is a failure with its ids; so is a sale whose order service
//	                             decided none of the ACCEPTED not cancelled by their users (skip when no drain ran)
//
// Their ids, names and one-line contracts are in the table (table.go,
// EndToEnd: true); the judges below are ordinary table judges over Facts
// (Facts.EndToEnd).

// EndToEndFacts are the facts the E-checks judge.
type EndToEndFacts struct {
	Stock    int64                // the activity's stock (all buckets)
	PG       *pipeline.OrderFacts // the order database's rows of the activity
	Accepted map[string]uint32    // distinct ACCEPTED reservation ids -> bucket
	Redis    map[string]pipeline.ResvState
	Sends    map[string]int  // rid -> send attempts
	Received map[string]int  // rid -> deliveries handed to the order stage
	Canceled map[string]bool // rid -> the load released it (a user's cancel)
	Recon    pipeline.Reconciliation
	Drained  bool
	rids     map[string]uint32 // the reservations whose records Redis holds: ACCEPTED ones and every order's
}

// endToEnd gathers the end-to-end facts when the run had a pipeline with
// an order database (CheckInput.Orders): the load's answers (the
// pipeline's own releases are not a user's cancel), the pipeline's
// evidence, one snapshot of the order database; the Redis records of the
// ACCEPTED reservations and of every order's are read with the others
// (records).
func (c *collector) endToEnd(ctx context.Context) error {
	in, a := c.in, c.sale.Activity
	if in.Pipeline == nil || in.Orders == nil {
		return nil
	}
	ev := in.Pipeline
	e := &EndToEndFacts{Stock: a.Stock, Accepted: map[string]uint32{}, Sends: map[string]int{}, Received: map[string]int{},
		Canceled: map[string]bool{}, Recon: ev.Reconciliation, Drained: ev.Drained, rids: map[string]uint32{}}
	for _, o := range c.f.all() {
		switch {
		case o.Accepted() && o.RID != "":
			e.Accepted[o.RID] = uint32(o.Bucket)
		case o.Kind == history.KindRelease && o.RID != "" && o.Flags&FlagPipelineRelease == 0:
			e.Canceled[o.RID] = true
		}
	}
	for _, s := range ev.Sends {
		e.Sends[s.RID]++
	}
	for _, d := range ev.Deliveries {
		e.Received[d.RID]++
	}
	pg, err := in.Orders.Facts(ctx, a)
	if err != nil {
		return fmt.Errorf("end-to-end checks: %w", err)
	}
	e.PG = pg
	for rid, b := range e.Accepted {
		e.rids[rid] = b
	}
	for _, o := range pg.Orders {
		e.rids[o.RID] = o.Bucket
	}
	for rid, b := range e.rids {
		c.cand[rid] = b
	}
	c.f.EndToEnd = e
	return nil
}

// redisStates is the pipeline's view of the records of rids.
func redisStates(recs map[string]ReservationRecord, rids map[string]uint32) map[string]pipeline.ResvState {
	out := make(map[string]pipeline.ResvState, len(rids))
	for rid := range rids {
		if r, ok := recs[rid]; ok {
			out[rid] = pipeline.ResvState{Found: true, Status: r.Status, User: r.User, OrderID: r.OrderID,
				ReleaseReason: r.ReleaseReason, ErrorCode: r.ErrorCode}
		}
	}
	return out
}

// AcceptedReservations lists the distinct reservation ids h's answers
// acknowledged ACCEPTED, with their buckets.
func AcceptedReservations(h *history.History) map[string]uint32 {
	out := map[string]uint32{}
	for _, o := range h.All() {
		if o.Accepted() && o.RID != "" {
			out[o.RID] = uint32(o.Bucket)
		}
	}
	return out
}

// appliesE4: E4 judges the reconciliation's final pass, when it ran.
func appliesE4(f *Facts, _ Verdict) string {
	if f.EndToEnd.Recon.Final == nil {
		return "reconciliation did not run its final pass (Pipeline.Reconcile after the drain)"
	}
	return ""
}

// appliesE5: E5 judges the ends after a drain.
func appliesE5(f *Facts, v Verdict) string {
	if !f.EndToEnd.Drained {
		return v.Detail
	}
	return ""
}

func judgeE1(facts *Facts) Verdict {
	f := facts.EndToEnd
	valid := f.PG.ValidOrders()
	var bad []string
	if valid > f.PG.Total {
		bad = append(bad, fmt.Sprintf("%d CREATED orders > stock.total %d", valid, f.PG.Total))
	}
	if f.PG.Sold > f.PG.Total {
		bad = append(bad, fmt.Sprintf("stock.sold %d > stock.total %d", f.PG.Sold, f.PG.Total))
	}
	if !f.PG.StockFound && valid > 0 {
		bad = append(bad, fmt.Sprintf("%d orders and no stock row", valid))
	}
	ev := map[string]any{"orders": valid, "pg_total": f.PG.Total, "pg_sold": f.PG.Sold, "activity_stock": f.Stock,
		"accepted_distinct": len(f.Accepted), "oversold_by": max(0, valid-f.PG.Total), "violations": bad}
	detail := fmt.Sprintf("%d CREATED orders ≤ stock %d (sold %d) for %d distinct ACCEPTED", valid, f.PG.Total, f.PG.Sold, len(f.Accepted))
	if len(bad) > 0 {
		detail = "PostgreSQL oversold: " + bad[0]
	}
	return Verdict{len(bad) > 0, detail, ev}
}

func judgeE2(facts *Facts) Verdict {
	f := facts.EndToEnd
	per := map[string][]string{}
	for _, o := range f.PG.Orders {
		if o.Status == "CREATED" {
			per[o.User] = append(per[o.User], o.OrderID)
		}
	}
	var bad []string
	for u, ids := range per {
		if len(ids) > 1 {
			bad = append(bad, fmt.Sprintf("%s: %d orders %v", u, len(ids), ids))
		}
	}
	ev := map[string]any{"users_with_orders": len(per), "users_with_two_or_more": len(bad), "violations": listed(bad)}
	detail := fmt.Sprintf("%d users with a CREATED order, none with two", len(per))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d users hold two or more valid orders, e.g. %s", len(bad), listed(bad)[0])
	}
	return Verdict{len(bad) > 0, detail, ev}
}

func judgeE3(facts *Facts) Verdict {
	f := facts.EndToEnd
	byRID, byMsg := map[string]int{}, map[string]int{}
	for _, o := range f.PG.Orders {
		byRID[o.RID]++
		byMsg[o.MessageID]++
	}
	var bad []string
	for rid, n := range byRID {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("reservation %s: %d orders", rid, n))
		}
	}
	for m, n := range byMsg {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("message %s: %d orders", m, n))
		}
	}
	ev := map[string]any{"orders": len(f.PG.Orders), "inbox_rows": len(f.PG.Inbox), "violations": listed(bad), "violation_count": len(bad)}
	detail := fmt.Sprintf("%d orders, each on its own reservation and message; %d inbox rows", len(f.PG.Orders), len(f.PG.Inbox))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d duplicates, e.g. %s", len(bad), listed(bad)[0])
	}
	return Verdict{len(bad) > 0, detail, ev}
}

func judgeE4(facts *Facts) Verdict {
	f := facts.EndToEnd
	fin := f.Recon.Final
	if fin == nil {
		return Verdict{Evidence: map[string]any{"error": f.Recon.Err}} // appliesE4 skips it
	}
	explained := map[string]int{}
	var bad []string
	for _, d := range fin.Divergences {
		_, accepted := f.Accepted[d.RID]
		switch {
		case d.Repaired:
			explained["repaired:"+d.Class]++
		case d.Class == pipeline.DivOrderReservationLost && accepted:
			explained["redis_lost_accepted_reservation"]++
		case d.Class == pipeline.DivAcceptedReservationLost && accepted:
			explained["redis_lost_accepted_reservation_without_order"]++
		default:
			bad = append(bad, fmt.Sprintf("%s %s: %s", d.Class, d.RID, d.Detail))
		}
	}
	ev := map[string]any{"counts": fin.Counts, "explained": explained, "unexplained": len(bad), "violations": listed(bad),
		"during_load": f.Recon.DuringLoad, "passes": f.Recon.Passes, "stock": fin.Stock, "repaired": fin.Repaired}
	detail := fmt.Sprintf("%d reservations compared with %d orders: %d divergences, all explained %v", fin.Reservations, fin.Orders,
		len(fin.Divergences), explained)
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d unexplained divergences, e.g. %s", len(bad), listed(bad)[0])
	}
	return Verdict{len(bad) > 0, detail, ev}
}

func judgeE5(facts *Facts) Verdict {
	f := facts.EndToEnd
	ordered, decided := orderedAndDecided(f)
	ends := map[string]int{}
	lostByRedis := 0 // of the failures: reservations Redis lost (I6's loss)
	var bad []string
	for _, rid := range slices.Sorted(maps.Keys(f.Accepted)) {
		st := f.Redis[rid]
		in, hasInbox := decided[rid]
		fail := func(why string) {
			ends["failed"]++
			bad = append(bad, rid+": "+why)
		}
		switch {
		case ordered[rid]:
			ends["order"]++
		case hasInbox && pipeline.IsRejection(in.Result):
			ends["rejection:"+in.Result]++
		case !st.Found:
			lostByRedis++
			fail("ACCEPTED, no order, and Redis no longer has the reservation (lost)")
		case st.Status != lua.StatusReleased:
			if f.Sends[rid] == 0 {
				fail(fmt.Sprintf("still %s and never dispatched (no send attempt)", st.Status))
			} else {
				fail(fmt.Sprintf("still %s after the drain (%d sends, %d deliveries)", st.Status, f.Sends[rid], f.Received[rid]))
			}
		case f.Canceled[rid]:
			ends["release:user-cancel"]++
		case hasInbox && in.Result == pipeline.OrderRefused:
			ends["release:"+st.ReleaseReason+" (order refused: "+in.Reason+")"]++
		case st.ReleaseReason == "":
			fail("RELEASED without a stated reason")
		case f.Sends[rid] == 0:
			fail(fmt.Sprintf("released (%s) without any send attempt: never dispatched", st.ReleaseReason))
		case f.Received[rid] > 0 && !hasInbox:
			fail(fmt.Sprintf("released (%s) after its message reached the order stage %d times with no decision recorded (dropped)", st.ReleaseReason, f.Received[rid]))
		case st.ReleaseReason == "order-rejected" && !hasInbox:
			fail("released as order-rejected but no rejection is recorded")
		default:
			ends["release:"+st.ReleaseReason]++
		}
	}
	decisions := ends["order"] // orders and recorded rejections
	for k, n := range ends {
		if strings.HasPrefix(k, "rejection:") {
			decisions += n
		}
	}
	noDecision := len(bad) == 0 && decisions == 0 && len(f.Accepted) > ends["release:user-cancel"]
	ev := map[string]any{"accepted": len(f.Accepted), "ends": ends, "failed": len(bad), "failed_ids": listed(append([]string(nil), bad...)),
		"order_service_decisions": decisions, "lost_by_redis": lostByRedis, "failed_other": len(bad) - lostByRedis}
	if !f.Drained {
		// appliesE5 skips it with this detail.
		return Verdict{Detail: fmt.Sprintf("no drain phase ran; %d of %d ACCEPTED not ended yet", len(bad), len(f.Accepted)), Evidence: ev}
	}
	detail := fmt.Sprintf("all %d ACCEPTED ended: %v", len(f.Accepted), ends)
	switch {
	case len(bad) > 0:
		detail = fmt.Sprintf("%d of %d ACCEPTED did not end as an order, a recorded rejection or a supported release (%d of them lost by Redis), e.g. %s",
			len(bad), len(f.Accepted), lostByRedis, listed(bad)[0])
	case noDecision:
		// A sale that accepted users and whose order service decided none
		// of them (no order, no rejection) is never green.
		detail = fmt.Sprintf("the sale accepted %d reservations and the order service decided none of them: %v", len(f.Accepted), ends)
	}
	return Verdict{len(bad) > 0 || noDecision, detail, ev}
}

// orderedAndDecided are the reservations with a CREATED order, and the
// order service's recorded decision per reservation.
func orderedAndDecided(f *EndToEndFacts) (map[string]bool, map[string]pipeline.InboxRow) {
	ordered := map[string]bool{}
	for _, o := range f.PG.Orders {
		if o.Status == "CREATED" {
			ordered[o.RID] = true
		}
	}
	decided := map[string]pipeline.InboxRow{}
	for _, r := range f.PG.Inbox {
		decided[r.RID] = r
	}
	return ordered, decided
}
