package checks

import (
	"context"
	"errors"
	"fmt"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// CollectFacts reads back, once, everything the checks of in need about
// sale's activity, through what sys exposes (sut.StateReader): the stock
// of every bucket (its available units alone when that is all sys
// exposes: sut.Available), the two queues, the record of every
// reservation id the history, the pipeline, the order database or the
// queues name, the
// cached result of every request judged against the system, and the
// expiry and sizes of the keys the contract names. A fact sys does not
// expose is not read: Facts.Unexposed names it, and the checks that need
// it skip. Never KEYS or SCAN. A Go error means the state could not be
// read (the checks are then unknown, not passed); a request result that
// exists but cannot be read (e.g. a wrong type) is a fact, kept in
// RequestFact.Err.
func CollectFacts(ctx context.Context, sale sut.Sale, sys sut.System, in CheckInput) (*Facts, error) {
	if in.History == nil {
		return nil, errors.New("checker: no history")
	}
	c := newCollector(sale, sys, in)
	f := c.f
	if err := c.stock(ctx); err != nil {
		return nil, err
	}
	c.scanHistory()
	c.pipelineIDs()
	if err := c.queues(ctx); err != nil {
		return nil, err
	}
	if err := in.History.Err(); err != nil {
		return nil, fmt.Errorf("checker: %w", err)
	}
	if err := c.endToEnd(ctx); err != nil {
		return nil, err
	}
	if err := c.records(ctx); err != nil {
		return nil, err
	}
	if err := c.requests(ctx); err != nil {
		return nil, err
	}
	if err := c.keys(ctx); err != nil {
		return nil, err
	}
	if err := c.service(ctx, sys); err != nil {
		return nil, err
	}
	return f, nil
}

// collector is one CollectFacts: the facts being filled, the ids to read.
type collector struct {
	f       *Facts
	sale    sut.Sale
	in      CheckInput
	rd      sut.StateReader // nil when sys reads nothing back
	exposed map[sut.Fact]bool
	cand    map[string]uint32 // reservation ids to read -> bucket
	reqs    []RequestKey      // request results to read, in order
	wantReq map[RequestKey]bool
}

func newCollector(sale sut.Sale, sys sut.System, in CheckInput) *collector {
	a := sale.Activity
	f := &Facts{Samples: in.Samples, FaultsInjected: in.FaultsInjected, LocalSoldOutTTL: in.LocalSoldOutTTL, Generator: in.Generator,
		ClockSkew: in.ClockSkew, Pipeline: in.Pipeline, Evictions: in.Evictions, Preflight: in.Preflight, Service: in.Service, Masterless: in.Masterless, Requests: map[RequestKey]RequestFact{},
		OwnReservation:  map[UserRequest]string{},
		SendPendingLeft: make([]int64, a.Buckets), ExpiryLeft: make([]int64, a.Buckets), Unexposed: map[sut.Fact]bool{}}
	if in.History.Spooled() {
		f.spooled = in.History
	} else {
		f.Ops = in.History.Ops
	}
	for b := uint32(0); b < a.Buckets; b++ {
		f.Planned = append(f.Planned, a.BucketStock(b))
	}
	c := &collector{f: f, sale: sale, in: in, exposed: sut.Exposed(sys), cand: map[string]uint32{}, wantReq: map[RequestKey]bool{}}
	c.rd, _ = sut.Ability[sut.StateReader](sys)
	for _, fact := range sut.AllFacts() {
		if !c.exposed[fact] {
			f.Unexposed[fact] = true
		}
	}
	return c
}

// has reports whether the system exposes fact (and so can be asked for it).
func (c *collector) has(fact sut.Fact) bool { return c.rd != nil && c.exposed[fact] }

func (c *collector) stock(ctx context.Context) error {
	if !c.has(sut.Available) {
		c.f.Samples = nil // sampled through the same reader: none without it
		return nil
	}
	a := c.sale.Activity
	for b := uint32(0); b < a.Buckets; b++ {
		s, err := c.rd.ReadStock(ctx, a, b)
		if err != nil {
			return fmt.Errorf("checker: %w", err)
		}
		c.f.Stock = append(c.f.Stock, s)
	}
	return nil
}

func (c *collector) needReq(k RequestKey) {
	if !c.wantReq[k] {
		c.wantReq[k] = true
		c.reqs = append(c.reqs, k)
	}
}

// scanHistory names the reservation ids the history names or may have
// created (an UNKNOWN reserve's derived id), the request results to read,
// and the reservation id each re-sent or USER_ALREADY_RESERVED request
// derives (I5), or each request answered FAILED (S4).
func (c *collector) scanHistory() {
	a, ids, f := c.sale.Activity, c.sale.IDs, c.f
	for _, o := range f.all() {
		if o.RID != "" {
			c.cand[o.RID] = uint32(o.Bucket)
		}
		if !o.Kind.IsReserve() {
			continue
		}
		failed := o.Outcome == history.OutcomeError && o.ErrClass == history.ErrFailed // S4
		if o.Outcome == history.OutcomeUnknown || o.HadUnknown() || failed {
			c.cand[ids.ReservationIDFor(a, o.UserID(), o.RequestID())] = uint32(o.Bucket)
		}
		code := lua.ReserveCode(o.Outcome)
		switch {
		case o.Outcome == history.OutcomeUnknown || failed:
			c.needReq(RequestKey{o.Bucket, o.Req})
		case o.Outcome >= 0 && (o.Sends >= 2 || code == lua.RequestIDConflict):
			c.needReq(RequestKey{o.Bucket, o.Req})
		}
		if failed || o.Outcome >= 0 && (o.Sends >= 2 || code == lua.UserAlreadyReserved) {
			k := UserRequest{o.User, o.Req}
			if _, ok := f.OwnReservation[k]; !ok {
				f.OwnReservation[k] = ids.ReservationIDFor(a, o.UserID(), o.RequestID())
			}
		}
	}
}

// pipelineIDs names every reservation id the pipeline's log names.
func (c *collector) pipelineIDs() {
	ev := c.in.Pipeline
	if ev == nil {
		return
	}
	for i := range ev.Events {
		c.cand[ev.Events[i].RID] = ev.Events[i].Bucket
	}
	for i := range ev.Sends {
		c.cand[ev.Sends[i].RID] = ev.Sends[i].Bucket
	}
	for i := range ev.Orders {
		c.cand[ev.Orders[i].RID] = ev.Orders[i].Bucket
	}
}

// queues reads both queues of every bucket: their sizes, and their
// members as reservation ids to read.
func (c *collector) queues(ctx context.Context) error {
	if !c.has(sut.Queues) {
		return nil
	}
	a := c.sale.Activity
	for b := uint32(0); b < a.Buckets; b++ {
		sp, ex, err := c.rd.ReadQueues(ctx, a, b)
		if err != nil {
			return err
		}
		for _, m := range append(sp, ex...) {
			c.cand[m] = b
		}
		c.f.SendPendingLeft[b], c.f.ExpiryLeft[b] = int64(len(sp)), int64(len(ex))
	}
	return nil
}

func (c *collector) records(ctx context.Context) error {
	if !c.has(sut.Records) {
		return nil
	}
	recs, err := c.rd.ReadRecords(ctx, c.sale.Activity, c.cand)
	if err != nil {
		return err
	}
	c.f.Records = recs
	if e := c.f.EndToEnd; e != nil {
		e.Redis = redisStates(recs, e.rids)
	}
	return nil
}

func (c *collector) requests(ctx context.Context) error {
	if !c.has(sut.Requests) || len(c.reqs) == 0 {
		return nil
	}
	refs := make([]sut.RequestRef, len(c.reqs))
	for i, k := range c.reqs {
		refs[i] = sut.RequestRef{Bucket: uint32(k.Bucket), ID: history.RequestID(k.Req)}
	}
	got, err := c.rd.ReadRequests(ctx, c.sale.Activity, refs)
	if err != nil {
		return err
	}
	for i, k := range c.reqs {
		c.f.Requests[k] = got[i]
	}
	return nil
}

// keys reads the expiry and size of the contract's keys, and of the
// records found and the markers of the users the history names.
func (c *collector) keys(ctx context.Context) error {
	if !c.has(sut.Keys) {
		return nil
	}
	q := sut.KeyQuery{Records: c.f.Records, Allowances: c.in.ExpiryAllowances}
	for _, o := range c.f.all() {
		if !o.Kind.IsReserve() {
			continue
		}
		if o.Accepted() || o.Outcome == history.Outcome(lua.UserAlreadyReserved) || o.Outcome == history.OutcomeUnknown || o.HadUnknown() {
			q.Users = append(q.Users, sut.BucketUser{Bucket: uint32(o.Bucket), User: o.UserID()})
		}
	}
	kf, err := c.rd.ReadKeys(ctx, c.sale.Activity, q)
	if err != nil {
		return err
	}
	c.f.Keys = kf
	return nil
}

// service reads what a service under test's answers showed and, when it
// keeps the reference contract's keys, the request ids it cached.
func (c *collector) service(ctx context.Context, sys sut.System) error {
	svc, ok := sut.Ability[sut.Service](sys)
	if !ok {
		return nil
	}
	c.f.Answers = svc.Answers()
	l, ok := sut.Ability[sut.RequestLister](sys)
	if !ok || !c.has(sut.Requests) {
		return nil
	}
	ids, err := l.ListRequestIDs(ctx, c.sale.Activity)
	if errors.Is(err, sut.ErrNoState) {
		return nil // a service that keeps no state the harness can read
	}
	if err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	c.f.CachedRequestIDs = ids
	return nil
}
