package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"seckill-harness/internal/sleep"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// reserveRequest is the body of POST /v1/reserve.
type reserveRequest struct {
	ActivityID string `json:"activity_id"`
	UserID     string `json:"user_id"`
	RequestID  string `json:"request_id"`
	Amount     *int   `json:"amount"`
}

// validate checks the ids and the amount (the scripts reserve one unit).
func (r reserveRequest) validate() error {
	for _, f := range []struct{ name, v string }{{"request_id", r.RequestID}, {"activity_id", r.ActivityID}, {"user_id", r.UserID}} {
		if err := lua.ValidateID(f.name, f.v); err != nil {
			return err
		}
	}
	if r.Amount != nil && *r.Amount != 1 {
		return fmt.Errorf("amount %d: this service reserves one unit per request (amount 1, or omit it)", *r.Amount)
	}
	return nil
}

// sendInfo is what the bounded send did, for the answer: the call last
// sent (a defect may have changed its ids), whether any send's outcome
// was unknown, and the last failure.
type sendInfo struct {
	call    lua.ReserveCall
	sends   int
	unknown bool
	last    failure
}

type sendInfoKey struct{}

// reserve answers one validated request along the degradation table.
func (s *Service) reserve(ctx context.Context, req reserveRequest) Answer {
	act, err := s.activityOf(ctx, req.ActivityID)
	if errors.Is(err, errNoActivity) {
		return Answer{Code: lua.ConfigMissing.String(), RequestID: req.RequestID, Message: err.Error(), status: http.StatusOK}
	}
	if err != nil {
		if s.cfg.Defects.Has(DefectFailOpen) && reachability(classify(err)) {
			return s.failOpen(nil, req.ActivityID, req.UserID, req.RequestID)
		}
		return busy(req.RequestID, "cannot read the activity from Redis: "+err.Error())
	}
	call, err := s.store.NewReserveCall(act.a, req.UserID, req.RequestID, s.cfg.ReservationTTL)
	if err != nil {
		return invalid(req.RequestID, err.Error())
	}
	b := call.Scope.Bucket
	node, sku := s.nodeOf(ctx, call), act.a.ID+"/"+act.a.SKU
	if why, nodeDown := s.brk.open(node, sku, time.Now()); why != "" {
		if nodeDown && s.cfg.Defects.Has(DefectFailOpen) {
			return s.failOpen(act, req.ActivityID, req.UserID, req.RequestID)
		}
		if nodeDown && s.cfg.Defects.Has(DefectBypassToDB) {
			return s.bypassToDB(act, call)
		}
		s.m.answeredOpen.Inc()
		return busy(req.RequestID, why)
	}
	info := &sendInfo{call: call}
	ctx = context.WithValue(ctx, sendInfoKey{}, info)
	var res lua.ReserveResult
	if flag := s.soldOutFlag(act); flag != nil {
		res, err = flag.Reserve(ctx, call)
	} else {
		res, err = s.sendBounded(ctx, act, call)
	}
	if errors.Is(err, sut.ErrAnsweredLocally) {
		s.m.localSoldOut.Inc()
		a := business(req.RequestID, lua.SoldOut, "", b)
		a.Source = SourceLocalFlag
		return a
	}
	final := info.call
	if err == nil {
		if res.Remaining >= 0 {
			act.left[b].Store(res.Remaining)
		}
		return business(final.RequestID, res.Code, res.ReservationID, b)
	}
	f := info.last
	if info.unknown {
		f = failUnknown
	}
	s.brk.trip(f, node, sku, s.cfg, time.Now())
	return s.degraded(act, req, final, f, info.sends, err)
}

// degraded is the answer to a reserve whose sends all failed with f.
func (s *Service) degraded(act *activity, req reserveRequest, final lua.ReserveCall, f failure, sends int, err error) Answer {
	why := fmt.Sprintf("%s after %d send(s): %v", f, sends, err)
	switch {
	case f == failUnknown && s.cfg.Defects.Has(DefectTimeoutIsFailure):
		s.compensateNow(final)
		return Answer{Code: CodeFailed, RequestID: final.RequestID, Message: why, status: http.StatusOK}
	case f == failUnknown:
		return unknown(final.RequestID, why)
	case reachability(f) && s.cfg.Defects.Has(DefectFailOpen):
		return s.failOpen(act, req.ActivityID, req.UserID, req.RequestID)
	case reachability(f) && s.cfg.Defects.Has(DefectBypassToDB):
		return s.bypassToDB(act, final)
	}
	a := busy(final.RequestID, why)
	a.Bucket = &final.Scope.Bucket
	return a
}

// reachability reports failures that mean Redis cannot be reached for the
// slot: what the fail-open defect answers ACCEPTED to.
func reachability(f failure) bool { return f == failConn || f == failClusterDown }

// sendBounded sends call and re-sends it while the outcome is unknown or
// a redirect is in progress, at most MaxSends times in all and only while
// a whole call still fits in ctx's deadline. Every re-send is the very
// same call unless a defect says otherwise (resendCall).
func (s *Service) sendBounded(ctx context.Context, act *activity, call lua.ReserveCall) (lua.ReserveResult, error) {
	info, _ := ctx.Value(sendInfoKey{}).(*sendInfo)
	if info == nil {
		info = &sendInfo{}
	}
	for send := 1; ; send++ {
		actx, cancel := context.WithTimeout(ctx, s.cfg.RedisTimeout)
		t0 := time.Now()
		res, err := s.store.Reserve(actx, call)
		cancel()
		s.m.redisCall.Observe(time.Since(t0).Seconds())
		f := classify(err)
		info.call, info.sends, info.last = call, send, f
		info.unknown = info.unknown || f == failUnknown
		s.m.count(res, f)
		if err == nil {
			return res, nil
		}
		if f != failUnknown && f != failRedirect || send >= s.cfg.MaxSends || !s.fits(ctx) {
			return res, err
		}
		call = s.resendCall(act, call, f, send)
		if !sleep.For(ctx, 10*time.Millisecond) {
			return res, err
		}
	}
}

// fits reports whether one more call (and the backoff) fits before ctx's deadline.
func (s *Service) fits(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > s.cfg.RedisTimeout+20*time.Millisecond
}

// resendCall is the call re-sent after send number send failed with f:
// call itself (same request_id, reservation_id, message_id), except
// under the defects that change the ids.
func (s *Service) resendCall(act *activity, call lua.ReserveCall, f failure, send int) lua.ReserveCall {
	fresh := func() string {
		base := call.RequestID
		if len(base) > 100 {
			base = base[:100]
		}
		return fmt.Sprintf("%s-re%d-%d", base, send, s.seq.Add(1))
	}
	switch {
	case s.cfg.Defects.Has(DefectRetryWithoutIDs):
		if n, err := s.store.NewReserveCall(act.a, call.UserID, fresh(), s.cfg.ReservationTTL); err == nil {
			return n
		}
	case f == failUnknown && s.cfg.Defects.Has(DefectNewRequestIDOnTimeout):
		call.RequestID = fresh()
	}
	return call
}

// failOpen is the fail-open defect's answer: ACCEPTED from a local
// counter (the last remaining stock Redis reported for the bucket, taken
// down by one; unknown counts as stock), without Redis.
func (s *Service) failOpen(act *activity, activityID, userID, reqID string) Answer {
	rid := lua.ReservationID(s.cfg.Secret, activityID, s.cfg.SKU, userID, reqID)
	s.m.failOpen.Inc()
	if act == nil {
		return Answer{Code: lua.Accepted.String(), RequestID: reqID, ReservationID: rid, status: http.StatusOK}
	}
	b := act.a.BucketOf(userID)
	for {
		left := act.left[b].Load()
		if left == 0 {
			return business(reqID, lua.SoldOut, "", b)
		}
		next := left - 1
		if left < 0 {
			next = left // unknown stays unknown: accept
		}
		if act.left[b].CompareAndSwap(left, next) {
			return business(reqID, lua.Accepted, rid, b)
		}
	}
}

// bypassToDB is the bypass-to-db defect: Redis cannot be reached for the
// call's slot, so the order is written straight into the pipeline's
// orders table (the run's schema, by the URL's search_path) and the
// request is answered ACCEPTED. When the write fails too the answer is
// SYSTEM_BUSY, as the reference's.
func (s *Service) bypassToDB(act *activity, call lua.ReserveCall) Answer {
	ctx, cancel := context.WithTimeout(s.life, s.cfg.Timeout)
	defer cancel()
	rid := call.ReservationID
	_, err := s.pg.Exec(ctx, `INSERT INTO orders (order_id, activity_id, sku_id, user_id, reservation_id, message_id, bucket)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
		"bypass-"+rid, act.a.ID, act.a.SKU, call.UserID, rid, "bypass:"+rid, int(call.Scope.Bucket))
	if err != nil {
		return busy(call.RequestID, "Redis unreachable and the bypass write failed: "+err.Error())
	}
	s.m.failOpen.Inc()
	return business(call.RequestID, lua.Accepted, rid, call.Scope.Bucket)
}

// compensateNow is the timeout-is-failure defect's compensation: the
// reservation of a call whose outcome is unknown is fenced and
// compensated at once, in the background, tried again until it answers
// (5 s at most).
func (s *Service) compensateNow(call lua.ReserveCall) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(s.life, 5*time.Second)
		defer cancel()
		for {
			actx, acancel := context.WithTimeout(ctx, time.Second)
			_, err := sut.FenceAndCompensate(actx, s.store, call.Scope, call.UserID, call.ReservationID)
			acancel()
			if err == nil || !sleep.For(ctx, 100*time.Millisecond) {
				return
			}
		}
	}()
}

// nodeOf is the address of the master that serves call's slot, as the
// client knows it ("" when it cannot say).
func (s *Service) nodeOf(ctx context.Context, call lua.ReserveCall) string {
	c, err := s.rdb.MasterForKey(ctx, call.Scope.MetaKey())
	if err != nil {
		return ""
	}
	return c.Options().Addr
}
