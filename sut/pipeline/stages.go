package pipeline

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/sleep"
	"seckill-harness/lua"
)

// ---- dispatcher -----------------------------------------------------------

// dispatchLoop polls bucket b's send_pending for due members (ZRANGEBYSCORE
// -inf now LIMIT 0 N: never a scan) and sends each one.
func (p *Pipeline) dispatchLoop(ctx context.Context, b uint32) {
	sc := p.a.Scope(b)
	rdb := p.st.Client()
	cfg := p.cfg.Dispatcher
	for ctx.Err() == nil {
		if p.cfg.Defects.DispatcherNeverSends {
			// It polls, finds its work, and never sends (nor reads a record).
			_ = rdb.ZCard(ctx, sc.SendPendingKey()).Err()
			sleep.For(ctx, cfg.Every)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
		due := time.Now().Add(-cfg.ScanAfter).UnixMilli() // ScanAfter 0: every member due now
		ids, err := rdb.ZRangeByScore(cctx, sc.SendPendingKey(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(due, 10), Offset: 0, Count: int64(cfg.Batch)}).Result()
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				p.c.script.redisErrors.Add(1)
			}
			sleep.For(ctx, cfg.Every)
			continue
		}
		var progress sync.WaitGroup
		sem := make(chan struct{}, cfg.Workers)
		var moved int64
		var mu sync.Mutex
		for _, rid := range ids {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			progress.Add(1)
			go func() {
				defer func() { <-sem; progress.Done() }()
				if p.sendOne(ctx, sc, rid) {
					p.scannerSent(rid)
					mu.Lock()
					moved++
					mu.Unlock()
				}
			}()
		}
		progress.Wait()
		if len(ids) < cfg.Batch || moved == 0 {
			sleep.For(ctx, cfg.Every)
		}
	}
}

// sendOne sends reservation rid's message with its fixed message_id and
// records the outcome through transition.lua: ack -> ENQUEUED, error or
// timeout -> SEND_UNKNOWN due again after RetryAfter. It reports whether
// the reservation left the due range.
func (p *Pipeline) sendOne(ctx context.Context, sc lua.Scope, rid string) bool {
	l := p.lock(rid)
	l.Lock()
	defer l.Unlock()
	rec, err := p.readRecord(ctx, sc, rid)
	if err != nil || !rec.found {
		return false
	}
	if rec.status != lua.StatusReserved && rec.status != lua.StatusSendUnknown {
		return false // not ours to send (only a broken script leaves it in send_pending)
	}
	mid := rec.msgID
	if mid == "" {
		mid = lua.MessageID(rid)
	}
	sent := p.mq.send(message{ID: mid, RID: rid, Bucket: sc.Bucket, User: rec.user})
	if sent.outcome == SendTimeout {
		sleep.For(ctx, p.cfg.MQ.TimeoutAfter)
	}
	if ctx.Err() != nil {
		// Crashed between the MQ and Redis: the reservation is still due
		// and will be sent again, with the same message_id.
		p.mq.markAbandoned(sent.seq)
		p.c.send.abandoned.Add(1)
		return false
	}
	args := lua.TransitionArgs{Target: lua.StatusEnqueued, MessageID: mid}
	note := "mq-" + sent.outcome
	if sent.outcome != SendAck {
		args.Target = lua.StatusSendUnknown
		args.NextRetryAtMs = time.Now().Add(p.cfg.Dispatcher.RetryAfter).UnixMilli()
	}
	res, err := p.transition(ctx, StageDispatcher, sc, rid, rec.user, args, 0, note)
	if err != nil {
		return false
	}
	if p.cfg.Defects.ReleaseOnSendTimeout && sent.outcome == SendTimeout && res.Code == lua.TransitionUpdated {
		p.releaseOnTimeout(ctx, sc, rid, rec.user)
	}
	return true
}

// releaseOnTimeout is Defects.ReleaseOnSendTimeout: the send timed out, so
// the faulty dispatcher gives the unit back at once — a legal fence
// (SEND_UNKNOWN -> RELEASE_PENDING) and compensate — without asking the
// order DB or the MQ, although the message may have been stored and will
// still be delivered.
func (p *Pipeline) releaseOnTimeout(ctx context.Context, sc lua.Scope, rid, user string) {
	res, err := p.transition(ctx, StageDispatcher, sc, rid, user, lua.TransitionArgs{Target: lua.StatusReleasePending}, 0, "fence:defect:send-timeout")
	if err != nil || (res.Code != lua.TransitionUpdated && res.Code != lua.TransitionIdempotent) {
		return
	}
	_, _ = p.compensate(ctx, StageDispatcher, sc, rid, user, "send-timeout", "defect:release-on-send-timeout")
}

// ---- order service ----------------------------------------------------------

func (p *Pipeline) orderWorker(ctx context.Context) {
	for {
		d, ok := p.mq.consume(ctx)
		if !ok {
			return
		}
		p.handleOrder(ctx, d)
	}
}

// rejects draws the order decision of message id (the same for duplicates).
func (p *Pipeline) rejects(id string) bool {
	return p.cfg.Order.Reject > 0 && unit(uint64(p.cfg.Seed), id, 0, 0x0bde) < p.cfg.Order.Reject
}

// OrderID is the order id the order service gives reservation rid.
func OrderID(rid string) string { return "ord-" + rid }

// drops is Defects.OrderDropsMessages' draw: one message in four.
func (p *Pipeline) drops(id string) bool {
	return p.cfg.Defects.OrderDropsMessages && unit(uint64(p.cfg.Seed), id, 0, 0xd509) < 0.25
}

// handleOrder turns one delivery into one PostgreSQL transaction (Orders):
// the inbox dedupes on message_id; a reservation Redis already released,
// is releasing or rejected is refused before any unit is taken; otherwise
// the decision (created, no_stock, user_already_ordered,
// duplicate_reservation, or the business rejection Config.Order.Reject) is
// committed and then fenced in Redis — ORDER_CREATED for an order,
// REJECTED otherwise (SEND_UNKNOWN/RESERVED -> ENQUEUED first when the
// message beat the dispatcher's own transition). A fence refused after the
// commit cancels the order and records "refused". A rejection then goes to
// the release stage. A failure of PostgreSQL or Redis brings the delivery
// again; a redelivery of a decided message re-applies its recorded fence.
func (p *Pipeline) handleOrder(ctx context.Context, d *delivery) {
	m := d.msg
	if p.drops(m.ID) {
		p.c.order.dropped.Add(1)
		p.mq.ack(d)
		return
	}
	sc := p.a.Scope(m.Bucket)
	x := &orderTx{act: p.a, m: m, delivery: d.Seq, businessNo: p.rejects(m.ID), defects: p.cfg.Defects, orderID: OrderID(m.RID),
		hooks: p.orders.commitHooks.Load()}
	x.fence = func(result string) (bool, string, error) {
		args := lua.TransitionArgs{Target: lua.StatusOrderCreated, MessageID: m.ID, OrderID: x.orderID}
		if result != OrderCreated {
			args = lua.TransitionArgs{Target: lua.StatusRejected, MessageID: m.ID, ErrorCode: errorCode(result)}
		}
		// The decision is committed: a stopping pipeline must not skip its fence.
		return p.fenceOrder(context.WithoutCancel(ctx), sc, m, d.Seq, args)
	}
	x.precheck = func() (bool, string, error) {
		rec, err := p.readRecord(ctx, sc, m.RID)
		if err != nil {
			return false, "", err
		}
		if rec.found && rec.status != lua.StatusReleasePending && rec.status != lua.StatusReleased && rec.status != lua.StatusRejected {
			return false, "", nil
		}
		// No state can lead back from these: the fence is attempted anyway so
		// that transition.lua's refusal is on record, and it answers.
		target := OrderCreated
		if x.businessNo {
			target = OrderRejected
		}
		fenced, reason, err := x.fence(target)
		return !fenced, reason, err
	}
	row, err := p.cfg.Orders.handle(ctx, x)
	if err != nil {
		p.c.order.orderTxErrors.Add(1)
		p.noteOrderError(err)
		p.mq.nack(d, 50*time.Millisecond)
		return
	}
	if x.duplicateMsg {
		p.c.order.dupSkipped.Add(1)
		if IsRejection(row.Result) && x.fencedNow {
			// Still REJECTED (its first fence may have failed): the release is idempotent.
			p.enqueueRelease(releaseItem{rid: m.RID, bucket: m.Bucket, user: m.User})
		}
		p.mq.ack(d)
		return
	}
	p.orders.log.add(row)
	switch {
	case row.Result == OrderCreated:
		p.c.order.orders.Add(1)
	case IsRejection(row.Result):
		p.c.order.rejected.Add(1)
		switch row.Result {
		case OrderNoStock:
			p.c.order.noStock.Add(1)
		case OrderUserAlreadyOrdered:
			p.c.order.userAlreadyOrdered.Add(1)
		case OrderDuplicateResv:
			p.c.order.duplicateResv.Add(1)
		}
		p.enqueueRelease(releaseItem{rid: m.RID, bucket: m.Bucket, user: m.User})
	default:
		p.c.order.refused.Add(1)
	}
	p.mq.ack(d)
}

// fenceOrder moves the reservation to args.Target. fenced is false (with
// the answer as reason) when the state machine refused; err is a Redis error
// (the delivery is retried).
func (p *Pipeline) fenceOrder(ctx context.Context, sc lua.Scope, m message, delivery uint64, args lua.TransitionArgs) (fenced bool, reason string, err error) {
	for step := 0; step < 4; step++ {
		res, err := p.transition(ctx, StageOrder, sc, m.RID, m.User, args, delivery, "order-decision")
		if err != nil {
			return false, "", err
		}
		switch res.Code {
		case lua.TransitionUpdated, lua.TransitionIdempotent:
			return true, "", nil
		case lua.TransitionIllegal:
			if res.Previous != lua.StatusReserved && res.Previous != lua.StatusSendUnknown {
				return false, "ILLEGAL_TRANSITION from " + string(res.Previous), nil
			}
			// The message arrived before the dispatcher recorded the send
			// (or its outcome was unknown): the message exists, so ENQUEUED.
			r2, err := p.transition(ctx, StageOrder, sc, m.RID, m.User,
				lua.TransitionArgs{Target: lua.StatusEnqueued, MessageID: m.ID}, delivery, "order-enqueue")
			if err != nil {
				return false, "", err
			}
			if r2.Code != lua.TransitionUpdated && r2.Code != lua.TransitionIdempotent && r2.Code != lua.TransitionIllegal {
				return false, r2.Code.String(), nil
			}
		default:
			return false, res.Code.String(), nil
		}
	}
	return false, "no progress", nil
}

// ---- release stage ----------------------------------------------------------

type releaseItem struct {
	rid    string
	bucket uint32
	user   string
	// fenced is the compensator's journal entry: the fence
	// (-> RELEASE_PENDING) succeeded, so a redelivery after a crash resumes
	// at compensate, whose idempotency (ALREADY_RELEASED) makes the redo safe.
	fenced bool
	// redelivered: the item comes again after a crash or stop cut it short.
	redelivered bool
}

// enqueueRelease puts it on the release queue. The queue outlives a crash
// of the compensator (it stands for a durable queue): items wait there for
// the restarted workers.
func (p *Pipeline) enqueueRelease(it releaseItem) {
	p.rel.busy.Add(1)
	p.requeueRelease(it, false)
}

// requeueRelease adds it to the queue (at the front: a redelivery) and
// wakes a worker; relBusy is the caller's.
func (p *Pipeline) requeueRelease(it releaseItem, front bool) {
	p.rel.mu.Lock()
	if front {
		p.rel.queue = append([]releaseItem{it}, p.rel.queue...)
	} else {
		p.rel.queue = append(p.rel.queue, it)
	}
	p.rel.mu.Unlock()
	select {
	case p.rel.wake <- struct{}{}:
	default:
	}
}

func (p *Pipeline) nextRelease(ctx context.Context) (releaseItem, bool) {
	for ctx.Err() == nil {
		p.rel.mu.Lock()
		if len(p.rel.queue) > 0 {
			it := p.rel.queue[0]
			p.rel.queue = p.rel.queue[1:]
			more := len(p.rel.queue) > 0
			p.rel.mu.Unlock()
			if more {
				select {
				case p.rel.wake <- struct{}{}:
				default:
				}
			}
			return it, true
		}
		p.rel.mu.Unlock()
		select {
		case <-ctx.Done():
			return releaseItem{}, false
		case <-p.rel.wake:
		}
	}
	return releaseItem{}, false
}

// releaseWorker is one compensation worker. An item it did not finish — a
// crash (CrashCompensator) or a stop cut it short — goes back to the front
// of the queue with its journal (fenced), to be redelivered to a worker of
// the restarted compensator; a crashed worker ends.
func (p *Pipeline) releaseWorker(ctx context.Context) {
	for {
		it, ok := p.nextRelease(ctx)
		if !ok {
			return
		}
		done, crashed := p.releaseRejected(ctx, &it)
		if !done {
			it.redelivered = true
			p.requeueRelease(it, true)
			if crashed || ctx.Err() != nil {
				return // a crash, or the workers are stopped
			}
			continue
		}
		p.rel.busy.Add(-1)
	}
}

// releaseRejected: REJECTED -> RELEASE_PENDING -> compensate, retried on
// Redis errors; leftovers are the expiry checker's. A redelivered item
// whose journal says fenced resumes at compensate. done is false when the
// item was cut short (crashed: by an armed crash; otherwise the workers
// were stopped) and must be redelivered.
func (p *Pipeline) releaseRejected(ctx context.Context, it *releaseItem) (done, crashed bool) {
	sc := p.a.Scope(it.bucket)
	for attempt := 0; attempt < p.cfg.Release.Attempts && ctx.Err() == nil; attempt++ {
		if attempt > 0 && !sleep.For(ctx, p.cfg.Release.Retry) {
			break
		}
		if !it.fenced {
			res, err := p.transition(ctx, StageRelease, sc, it.rid, it.user, lua.TransitionArgs{Target: lua.StatusReleasePending}, 0, "fence")
			if err != nil {
				continue
			}
			if res.Code != lua.TransitionUpdated && res.Code != lua.TransitionIdempotent {
				return true, false // already RELEASED, or not ours to release
			}
			it.fenced = true
		}
		if p.crashNow(crashAfterFence) {
			return false, true
		}
		note := "after-fence"
		if it.redelivered {
			note = "redelivered-after-crash"
		}
		c, err := p.compensate(ctx, StageRelease, sc, it.rid, it.user, "order-rejected", note)
		if err != nil {
			continue
		}
		if it.redelivered {
			p.noteRedoneRelease(c.Code)
		}
		if p.crashNow(crashAfterCompensate) {
			return false, true
		}
		return true, false
	}
	return ctx.Err() == nil, false
}

// ---- expiry checker ---------------------------------------------------------

func (p *Pipeline) expiryLoop(ctx context.Context, b uint32) {
	sc := p.a.Scope(b)
	rdb := p.st.Client()
	cfg := p.cfg.Expiry
	for sleep.For(ctx, cfg.Every) {
		now := nowMs()
		var skip int64
		for page := 0; page < cfg.MaxPages && ctx.Err() == nil; page++ {
			cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
			ids, err := rdb.ZRangeByScore(cctx, sc.ExpiryKey(), &redis.ZRangeBy{Min: "-inf", Max: now, Offset: skip, Count: int64(cfg.Batch)}).Result()
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					p.c.script.redisErrors.Add(1)
				}
				break
			}
			for _, rid := range ids {
				if !p.expireOne(ctx, sc, rid) {
					skip++ // still a member: page past it
				}
			}
			if len(ids) < cfg.Batch {
				break
			}
		}
	}
}

// expireOne examines one expired reservation and reports whether it was
// released. Expiry never releases directly: a reservation that may still
// become an order (RESERVED, SEND_UNKNOWN, ENQUEUED) is released only when
// the order DB has no order for its message_id and the MQ holds no copy of
// it, and only through RELEASE_PENDING (spec §8.3, §8.4, §9.3).
func (p *Pipeline) expireOne(ctx context.Context, sc lua.Scope, rid string) bool {
	l := p.lock(rid)
	l.Lock()
	defer l.Unlock()
	rec, err := p.readRecord(ctx, sc, rid)
	if err != nil || !rec.found {
		return false
	}
	p.c.expiry.expiriesChecked.Add(1)
	mid := rec.msgID
	if mid == "" {
		mid = lua.MessageID(rid)
	}
	fenceAndRelease := func(reason string) bool {
		res, err := p.transition(ctx, StageExpiry, sc, rid, rec.user, lua.TransitionArgs{Target: lua.StatusReleasePending}, 0, "fence:"+reason)
		if err != nil || (res.Code != lua.TransitionUpdated && res.Code != lua.TransitionIdempotent) {
			return false
		}
		c, err := p.compensate(ctx, StageExpiry, sc, rid, rec.user, reason, "after-fence")
		return err == nil && (c.Code == lua.CompensateReleased || c.Code == lua.CompensateAlreadyReleased)
	}
	switch rec.status {
	case lua.StatusReleasePending:
		// A leftover (a release cut short): the fence answers IDEMPOTENT and
		// puts on record that the reservation is fenced before compensate.
		return fenceAndRelease("expired-release-pending")
	case lua.StatusRejected:
		return fenceAndRelease("order-rejected")
	case lua.StatusReserved, lua.StatusSendUnknown, lua.StatusEnqueued:
		if p.cfg.Defects.ExpiryDirectCompensate {
			if _, tried := p.expiry.directTried.LoadOrStore(rid, true); tried {
				return false
			}
			c, err := p.compensate(ctx, StageExpiry, sc, rid, rec.user, "expired", "defect:direct")
			return err == nil && c.Code == lua.CompensateReleased
		}
		if !p.cfg.Defects.ExpiryNoCheck {
			hctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
			held := p.cfg.Orders.holds(hctx, mid, p.cfg.Defects.OrderNoDedupe)
			cancel()
			if held {
				p.c.expiry.expiryHeldByOrder.Add(1)
				return false
			}
			if p.mq.outstanding(mid) {
				p.c.expiry.expiryHeldByMQ.Add(1)
				return false
			}
		}
		return fenceAndRelease("expired-no-order")
	}
	return false // ORDER_CREATED / RELEASED left in the zset by a broken script: not ours
}
