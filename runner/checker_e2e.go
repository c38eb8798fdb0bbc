package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"seckill-harness/lua"
	"seckill-harness/runner/pipeline"
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
// Their ids, names and one-line contracts are in the table (invariants.go,
// EndToEnd: true); the judges below are wrapped by e2eJudge / e2eApplies.

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
}

// CollectEndToEnd gathers the facts: h is the load's history (without the
// pipeline's releases), ev the pipeline's evidence after Reconcile and Stop.
func CollectEndToEnd(ctx context.Context, tgt Target, h *History, ev *pipeline.Evidence, orders *pipeline.Orders) (*EndToEndFacts, error) {
	a := tgt.Activity
	f := &EndToEndFacts{Stock: a.Stock, Accepted: map[string]uint32{}, Sends: map[string]int{}, Received: map[string]int{},
		Canceled: map[string]bool{}, Recon: ev.Reconciliation, Drained: ev.Drained}
	f.Accepted = AcceptedReservations(h)
	for _, o := range h.All() {
		if o.Kind == KindRelease && o.RID != "" {
			f.Canceled[o.RID] = true
		}
	}
	for _, s := range ev.Sends {
		f.Sends[s.RID]++
	}
	for _, d := range ev.Deliveries {
		f.Received[d.RID]++
	}
	pg, err := orders.Facts(ctx, a)
	if err != nil {
		return nil, err
	}
	f.PG = pg
	rids := map[string]uint32{}
	for rid, b := range f.Accepted {
		rids[rid] = b
	}
	for _, o := range pg.Orders {
		rids[o.RID] = o.Bucket
	}
	f.Redis, err = pipeline.ReadReservations(ctx, tgt.Store.Client(), a, rids)
	if err != nil {
		return nil, fmt.Errorf("end-to-end checks: %w", err)
	}
	return f, nil
}

// AcceptedReservations lists the distinct reservation ids h's answers
// acknowledged ACCEPTED, with their buckets.
func AcceptedReservations(h *History) map[string]uint32 {
	out := map[string]uint32{}
	for _, o := range h.All() {
		if o.Accepted() && o.RID != "" {
			out[o.RID] = uint32(o.Bucket)
		}
	}
	return out
}

// EndToEndChecks judges the table's end-to-end checks on the facts
// (pure), in table order.
func EndToEndChecks(f *EndToEndFacts) []Check {
	facts := &Facts{EndToEnd: f}
	var out []Check
	for i := range invariants {
		if inv := &invariants[i]; inv.EndToEnd {
			out = append(out, inv.judge(facts))
		}
	}
	return out
}

// e2eJudge adapts an end-to-end judge to the table's Judge.
func e2eJudge(check func(*EndToEndFacts) Check) func(*Facts) Verdict {
	return func(f *Facts) Verdict {
		c := check(f.EndToEnd)
		return Verdict{c.Status == StatusFail, c.Detail, c.Evidence}
	}
}

// e2eApplies adapts an end-to-end judge that skips by itself (its facts
// say it does not apply, e.g. no drain ran) to the table's Applies.
func e2eApplies(check func(*EndToEndFacts) Check) func(*Facts, Verdict) string {
	return func(f *Facts, _ Verdict) string {
		if c := check(f.EndToEnd); c.Status == StatusSkip {
			return c.Detail
		}
		return ""
	}
}

// e2eUnnamed is the name the judges below give their checks: the table
// (invariants.go) names them when it judges them (Invariant.judge).
const e2eUnnamed = ""

func verdict(id, name string, failed bool, detail string, ev map[string]any) Check {
	c := Check{ID: id, Name: name, Status: StatusPass, Detail: detail, Evidence: ev}
	if failed {
		c.Status = StatusFail
	}
	return c
}

func checkE1(f *EndToEndFacts) Check {
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
	return verdict("E1", e2eUnnamed, len(bad) > 0, detail, ev)
}

func checkE2(f *EndToEndFacts) Check {
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
	return verdict("E2", e2eUnnamed, len(bad) > 0, detail, ev)
}

func checkE3(f *EndToEndFacts) Check {
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
	return verdict("E3", e2eUnnamed, len(bad) > 0, detail, ev)
}

func checkE4(f *EndToEndFacts) Check {
	fin := f.Recon.Final
	if fin == nil {
		return Check{ID: "E4", Name: e2eUnnamed, Status: StatusSkip,
			Detail: "reconciliation did not run its final pass (Pipeline.Reconcile after the drain)", Evidence: map[string]any{"error": f.Recon.Err}}
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
	return verdict("E4", e2eUnnamed, len(bad) > 0, detail, ev)
}

func checkE5(f *EndToEndFacts) Check {
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
	ends := map[string]int{}
	lostByRedis := 0 // of the failures: reservations Redis lost (I6's loss)
	var bad []string
	rids := make([]string, 0, len(f.Accepted))
	for rid := range f.Accepted {
		rids = append(rids, rid)
	}
	sort.Strings(rids)
	for _, rid := range rids {
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
		return Check{ID: "E5", Name: e2eUnnamed, Status: StatusSkip,
			Detail: fmt.Sprintf("no drain phase ran; %d of %d ACCEPTED not ended yet", len(bad), len(f.Accepted)), Evidence: ev}
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
	return verdict("E5", e2eUnnamed, len(bad) > 0 || noDecision, detail, ev)
}
