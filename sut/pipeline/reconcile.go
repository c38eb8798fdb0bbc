package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/sleep"
	"seckill-harness/lua"
)

// Reconciliation (对账) compares the Redis reservations of the activity with
// the PostgreSQL orders. It runs every ReconcileConfig.Every during the load
// (passes whose findings may be transient: a message still being handled
// sits between its COMMIT and its Redis fence) and once more after the
// drain (Pipeline.Reconcile; the final pass is what the end-to-end checks
// judge).
//
// One pass reads PostgreSQL, then Redis, and judges the Redis records
// against a PostgreSQL snapshot taken after them: the order stage commits
// before it fences ORDER_CREATED, so every ORDER_CREATED read in Redis has
// its order in that snapshot, and a message handled while the pass runs
// shows at worst as the repairable order_not_fenced, never as a lost order.
// (The snapshot is re-read only when the first one lacks the order of an
// ORDER_CREATED record.)
//
// The reservations compared are those it can name without a scan: every
// reservation_id in the orders, the inbox, the MQ's sends, the two zsets of
// each bucket and the reservations the load was told ACCEPTED
// (Pipeline.Acknowledged: the gateway's answers, the only record of a
// reservation Redis lost before anything else saw it). Each divergence is
// classified:
//
//	order_created_without_order  Redis ORDER_CREATED, no CREATED order in PostgreSQL (a lost order)
//	order_reservation_lost       a CREATED order whose reservation record Redis no longer has
//	accepted_reservation_lost    a reservation acknowledged ACCEPTED that Redis no longer has and that
//	                             has no CREATED order (lost before its order: the user holds nothing)
//	released_with_order          a CREATED order whose reservation is RELEASED, RELEASE_PENDING or
//	                             REJECTED in Redis (the unit was, or will be, given back while the order stands)
//	order_not_fenced             a CREATED order whose reservation is still RESERVED, SEND_UNKNOWN or
//	                             ENQUEUED (Redis lost the ORDER_CREATED write) — the one repairable class
//	stock_vs_ledger              stock.sold, Σ ledger.delta and the CREATED orders disagree in PostgreSQL
//	redis_reserved_vs_records    final pass only: Redis' Σ reserved over the buckets differs from the number
//	                             of its records that hold a unit (every found status but RELEASED)
//
// Repairs, precisely: only order_not_fenced, only in the final pass, and
// only through transition.lua (-> ENQUEUED when needed, then -> ORDER_CREATED
// with the order's order_id): Redis' status is rebuilt from PostgreSQL's
// fact. Nothing else is touched: no stock counter is ever incremented or
// decremented, no record is recreated, no order is cancelled — a lost
// reservation, a lost order or a released unit with an order is reported
// with its ids for a person to repair.
type Reconciliation struct {
	Passes int `json:"passes"`
	// DuringLoad counts the distinct reservation ids per class seen by the
	// passes before the final one (transient ones included).
	DuringLoad map[string]int `json:"during_load"`
	// Final is the final pass's findings (nil before it ran).
	Final *ReconcilePass `json:"final,omitempty"`
	Err   string         `json:"error,omitempty"`
}

// ReconcilePass is one comparison.
type ReconcilePass struct {
	At           time.Time         `json:"at"`
	Reservations int               `json:"reservations_compared"`
	Orders       int64             `json:"orders"`
	Divergences  []Divergence      `json:"divergences"`
	Counts       map[string]int    `json:"counts"`
	Repaired     int               `json:"repaired"`
	Stock        map[string]int64  `json:"stock"` // pg_total, pg_sold, ledger_sold, orders, redis_reserved, redis_records_holding, redis_lost_with_order, redis_lost_without_order
	RedisStatus  map[string]string `json:"-"`     // rid -> status ("" = no record)
}

// Divergence is one finding.
type Divergence struct {
	Class       string `json:"class"`
	RID         string `json:"reservation_id,omitempty"`
	OrderID     string `json:"order_id,omitempty"`
	RedisStatus string `json:"redis_status,omitempty"`
	Detail      string `json:"detail"`
	Repaired    bool   `json:"repaired,omitempty"`
}

// Divergence classes.
const (
	DivOrderCreatedWithoutOrder = "order_created_without_order"
	DivOrderReservationLost     = "order_reservation_lost"
	DivAcceptedReservationLost  = "accepted_reservation_lost"
	DivReleasedWithOrder        = "released_with_order"
	DivOrderNotFenced           = "order_not_fenced"
	DivStockVsLedger            = "stock_vs_ledger"
	DivRedisReservedVsRecords   = "redis_reserved_vs_records"
)

// ResvState is what reconciliation reads of a reservation record.
type ResvState struct {
	Found                                   bool
	Status                                  lua.Status
	User, OrderID, ReleaseReason, ErrorCode string
}

// ReadReservations reads status, user_id, order_id, release_reason and
// error_code of each reservation (pipelined HMGETs; rid -> bucket).
func ReadReservations(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, rids map[string]uint32) (map[string]ResvState, error) {
	ids := make([]string, 0, len(rids))
	for id := range rids {
		if lua.ValidateID("reservation_id", id) == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make(map[string]ResvState, len(ids))
	for start := 0; start < len(ids); start += 1000 {
		end := min(start+1000, len(ids))
		cmds := make([]*redis.SliceCmd, 0, end-start)
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids[start:end] {
				cmds = append(cmds, p.HMGet(ctx, a.Scope(rids[id]).ResvKey(id), "status", "user_id", "order_id", "release_reason", "error_code"))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read reservation records: %w", err)
		}
		for i, c := range cmds {
			v := c.Val()
			s := func(k int) string {
				if k < len(v) {
					x, _ := v[k].(string)
					return x
				}
				return ""
			}
			st := ResvState{}
			if len(v) == 5 && v[0] != nil {
				st = ResvState{Found: true, Status: lua.Status(s(0)), User: s(1), OrderID: s(2), ReleaseReason: s(3), ErrorCode: s(4)}
			}
			out[ids[start+i]] = st
		}
	}
	return out, nil
}

// reconciler is the stage's state.
type reconciler struct {
	mu     sync.Mutex
	passes int
	during map[string]map[string]bool
	final  *ReconcilePass
	err    string
	acked  map[string]uint32 // Acknowledged: rid -> bucket
	// afterOrders is a test's hook, run in every pass between its first
	// PostgreSQL read and its Redis read (nil in production).
	afterOrders func(final bool)
}

// Acknowledged adds reservations the load was told ACCEPTED (rid ->
// bucket) to those every later pass compares: one Redis no longer has is
// order_reservation_lost when its order stands, accepted_reservation_lost
// when it has none. Call it before Reconcile with the load's answers.
func (p *Pipeline) Acknowledged(rids map[string]uint32) {
	p.rec.mu.Lock()
	defer p.rec.mu.Unlock()
	if p.rec.acked == nil {
		p.rec.acked = make(map[string]uint32, len(rids))
	}
	for rid, b := range rids {
		p.rec.acked[rid] = b
	}
}

func (p *Pipeline) reconcileLoop(ctx context.Context) {
	for sleep.For(ctx, p.cfg.Reconcile.Every) {
		pass, err := p.reconcilePass(ctx, false, false)
		p.rec.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				p.rec.err = err.Error()
			}
		} else {
			p.rec.passes++
			for _, d := range pass.Divergences {
				if p.rec.during[d.Class] == nil {
					p.rec.during[d.Class] = map[string]bool{}
				}
				p.rec.during[d.Class][d.RID+d.OrderID] = true
			}
		}
		p.rec.mu.Unlock()
	}
}

// Reconcile runs the final pass: call it after Drain (the stages may still
// run). With repairs on (not ReconcileConfig.NoRepair) it repairs the
// order_not_fenced class and compares again, so Final shows what is left.
func (p *Pipeline) Reconcile(ctx context.Context) (*ReconcilePass, error) {
	pass, err := p.reconcilePass(ctx, true, !p.cfg.Reconcile.NoRepair)
	p.rec.mu.Lock()
	defer p.rec.mu.Unlock()
	if err != nil {
		p.rec.err = err.Error()
		return nil, err
	}
	p.rec.passes++
	p.rec.final = pass
	return pass, nil
}

// Reconciliation returns the stage's record so far.
func (p *Pipeline) Reconciliation() Reconciliation {
	p.rec.mu.Lock()
	defer p.rec.mu.Unlock()
	r := Reconciliation{Passes: p.rec.passes, DuringLoad: map[string]int{}, Final: p.rec.final, Err: p.rec.err}
	for c, ids := range p.rec.during {
		r.DuringLoad[c] = len(ids)
	}
	return r
}

// reconcileRead is what a pass compared: PostgreSQL's orders, the
// reservations it looked up (id -> bucket), those the queue acknowledged,
// and the sum of the buckets' reserved counters.
type reconcileRead struct {
	facts    *OrderFacts
	rids     map[string]uint32
	acked    map[string]bool
	reserved int64
}

// reconcilePass compares PostgreSQL's orders with Redis's reservations
// once: it reads the orders, gathers every reservation id the stages know
// of (acknowledged sends, orders, queued sends, the send-pending and expiry
// sets), reads those reservations, re-reads the orders when one committed
// in between, and classifies the divergences. With repair it also repairs
// the order_not_fenced class (see repairNotFenced).
func (p *Pipeline) reconcilePass(ctx context.Context, final, repair bool) (*ReconcilePass, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	facts, err := p.cfg.Orders.Facts(cctx, p.a)
	if err != nil {
		return nil, err
	}
	in := &reconcileRead{facts: facts, rids: map[string]uint32{}}
	p.rec.mu.Lock()
	in.acked = make(map[string]bool, len(p.rec.acked))
	for rid, b := range p.rec.acked {
		in.rids[rid], in.acked[rid] = b, true
	}
	hook := p.rec.afterOrders
	p.rec.mu.Unlock()
	for _, o := range facts.Orders {
		in.rids[o.RID] = o.Bucket
	}
	sends, _ := p.mq.snapshot()
	for _, s := range sends {
		in.rids[s.RID] = s.Bucket
	}
	if in.reserved, err = p.scanBuckets(cctx, in.rids); err != nil {
		return nil, err
	}
	if hook != nil {
		hook(final)
	}
	states, err := ReadReservations(cctx, p.st.Client(), p.a, in.rids)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	if orderCommittedSince(in.facts, states) {
		// An order committed (and fenced) between the two reads: judge
		// against a snapshot taken after the Redis read.
		if in.facts, err = p.cfg.Orders.Facts(cctx, p.a); err != nil {
			return nil, err
		}
	}
	pass := classify(in.facts, states, in.acked, in.reserved, final)
	if repair {
		return p.repairNotFenced(cctx, in, pass, states, final)
	}
	return pass, nil
}

// scanBuckets adds every member of each bucket's send-pending and expiry
// sets to rids (with its bucket) and returns the sum of the buckets'
// reserved counters (a missing counter counts 0).
func (p *Pipeline) scanBuckets(ctx context.Context, rids map[string]uint32) (int64, error) {
	rdb := p.st.Client()
	reserved := int64(0)
	for b := uint32(0); b < p.a.Buckets; b++ {
		sc := p.a.Scope(b)
		for _, z := range []string{sc.SendPendingKey(), sc.ExpiryKey()} {
			ms, err := rdb.ZRange(ctx, z, 0, -1).Result()
			if err != nil {
				return 0, fmt.Errorf("reconcile: read %s: %w", z, err)
			}
			for _, m := range ms {
				rids[m] = b
			}
		}
		v, err := rdb.HGet(ctx, sc.StockKey(), "reserved").Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("reconcile: read %s: %w", sc.StockKey(), err)
		}
		reserved += v
	}
	return reserved, nil
}

// repairNotFenced repairs each order_not_fenced divergence of pass (the
// reservation's status rebuilt from its order). When any was repaired it
// compares again, so the result shows what is left plus the repaired ones
// marked Repaired, and counts them; otherwise it returns pass as is.
func (p *Pipeline) repairNotFenced(ctx context.Context, in *reconcileRead, pass *ReconcilePass, states map[string]ResvState, final bool) (*ReconcilePass, error) {
	fixed := 0
	for i := range pass.Divergences {
		d := &pass.Divergences[i]
		if d.Class != DivOrderNotFenced {
			continue
		}
		if p.repairStatus(ctx, p.a.Scope(in.rids[d.RID]), d.RID, states[d.RID], d.OrderID) {
			fixed++
		}
	}
	if fixed == 0 {
		return pass, nil
	}
	// Compare again: Final shows what is left, the repairs marked.
	again, err := ReadReservations(ctx, p.st.Client(), p.a, in.rids)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	before := pass.Divergences
	pass = classify(in.facts, again, in.acked, in.reserved, final)
	for _, d := range before {
		if d.Class == DivOrderNotFenced && again[d.RID].Status == lua.StatusOrderCreated {
			d.Repaired = true
			d.Detail += "; repaired: -> ORDER_CREATED through transition.lua"
			pass.Divergences = append(pass.Divergences, d)
		}
	}
	pass.Repaired = fixed
	return pass, nil
}

// repairStatus rebuilds an ENQUEUED (or RESERVED / SEND_UNKNOWN) status
// from PostgreSQL's order: -> ENQUEUED when needed, then -> ORDER_CREATED.
func (p *Pipeline) repairStatus(ctx context.Context, sc lua.Scope, rid string, st ResvState, orderID string) bool {
	mid := lua.MessageID(rid)
	if st.Status == lua.StatusReserved || st.Status == lua.StatusSendUnknown {
		r, err := p.transition(ctx, StageReconcile, sc, rid, st.User, lua.TransitionArgs{Target: lua.StatusEnqueued, MessageID: mid}, 0, "repair:order-in-postgres")
		if err != nil || (r.Code != lua.TransitionUpdated && r.Code != lua.TransitionIdempotent) {
			return false
		}
	}
	r, err := p.transition(ctx, StageReconcile, sc, rid, st.User, lua.TransitionArgs{Target: lua.StatusOrderCreated, MessageID: mid, OrderID: orderID}, 0, "repair:order-in-postgres")
	return err == nil && (r.Code == lua.TransitionUpdated || r.Code == lua.TransitionIdempotent)
}

// orderCommittedSince reports whether a Redis record says ORDER_CREATED
// while the snapshot f has no CREATED order for it: with the commit-first
// order stage that order was committed after f was read.
func orderCommittedSince(f *OrderFacts, states map[string]ResvState) bool {
	ordered := make(map[string]bool, len(f.Orders))
	for _, o := range f.Orders {
		if o.Status == "CREATED" {
			ordered[o.RID] = true
		}
	}
	for rid, st := range states {
		if st.Found && st.Status == lua.StatusOrderCreated && !ordered[rid] {
			return true
		}
	}
	return false
}

// classify compares one snapshot of PostgreSQL with the Redis records (a
// pure function). acked are the reservations the load was told ACCEPTED;
// redisReserved is Σ reserved of the buckets' stock hashes; the
// redis_reserved_vs_records class is only judged in a final pass.
func classify(f *OrderFacts, states map[string]ResvState, acked map[string]bool, redisReserved int64, final bool) *ReconcilePass {
	pass := &ReconcilePass{At: time.Now(), Reservations: len(states), Counts: map[string]int{}, RedisStatus: map[string]string{}}
	add := func(d Divergence) {
		pass.Divergences = append(pass.Divergences, d)
		pass.Counts[d.Class]++
	}
	ordered := map[string]PGOrder{}
	for _, o := range f.Orders {
		if o.Status == "CREATED" {
			ordered[o.RID] = o
		}
	}
	pass.Orders = f.ValidOrders()
	lost, lostNoOrder, holding := int64(0), int64(0), int64(0)
	rids := make([]string, 0, len(states))
	for rid := range states {
		rids = append(rids, rid)
	}
	sort.Strings(rids)
	for _, rid := range rids {
		st := states[rid]
		pass.RedisStatus[rid] = string(st.Status)
		if st.Found && st.Status != lua.StatusReleased {
			holding++
		}
		o, has := ordered[rid]
		switch {
		case has && !st.Found:
			lost++
			add(Divergence{Class: DivOrderReservationLost, RID: rid, OrderID: o.OrderID,
				Detail: "order " + o.OrderID + " stands; Redis has no record of its reservation"})
		case has && (st.Status == lua.StatusReleased || st.Status == lua.StatusReleasePending || st.Status == lua.StatusRejected):
			add(Divergence{Class: DivReleasedWithOrder, RID: rid, OrderID: o.OrderID, RedisStatus: string(st.Status),
				Detail: fmt.Sprintf("order %s stands while the reservation is %s (release reason %q)", o.OrderID, st.Status, st.ReleaseReason)})
		case has && st.Status != lua.StatusOrderCreated:
			add(Divergence{Class: DivOrderNotFenced, RID: rid, OrderID: o.OrderID, RedisStatus: string(st.Status),
				Detail: fmt.Sprintf("order %s stands while the reservation is %s", o.OrderID, st.Status)})
		case !has && !st.Found && acked[rid]:
			lostNoOrder++
			add(Divergence{Class: DivAcceptedReservationLost, RID: rid,
				Detail: "acknowledged ACCEPTED; Redis has no record of it and PostgreSQL no order (lost before its order)"})
		case !has && st.Found && st.Status == lua.StatusOrderCreated:
			add(Divergence{Class: DivOrderCreatedWithoutOrder, RID: rid, OrderID: st.OrderID, RedisStatus: string(st.Status),
				Detail: fmt.Sprintf("Redis says ORDER_CREATED (order_id %q), PostgreSQL has no order", st.OrderID)})
		}
	}
	ledger := f.LedgerSold()
	pass.Stock = map[string]int64{"pg_total": f.Total, "pg_sold": f.Sold, "ledger_sold": ledger, "orders": pass.Orders,
		"redis_reserved": redisReserved, "redis_records_holding": holding, "redis_lost_with_order": lost,
		"redis_lost_without_order": lostNoOrder}
	if f.Sold != ledger || f.Sold != pass.Orders {
		add(Divergence{Class: DivStockVsLedger,
			Detail: fmt.Sprintf("stock.sold %d, Σ ledger %d, CREATED orders %d", f.Sold, ledger, pass.Orders)})
	}
	if final && redisReserved != holding {
		add(Divergence{Class: DivRedisReservedVsRecords,
			Detail: fmt.Sprintf("Redis Σ reserved %d, but %d of its records hold a unit (%d CREATED orders, %d of them on a reservation Redis lost)",
				redisReserved, holding, pass.Orders, lost)})
	}
	return pass
}
