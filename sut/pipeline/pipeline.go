package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

// Pipeline runs the background stages of one activity: a dispatcher and an
// expiry checker per bucket, the order service and the release stage.
// Each stage's state is a struct of its own, with the lock that guards it;
// the fields at the top are shared by every stage.
type Pipeline struct {
	cfg Config
	st  *lua.Store
	a   *lua.Activity

	c     counters
	mq    *broker
	log   eventLog
	rec   reconciler
	locks [256]sync.Mutex // per reservation (striped): dispatcher send vs expiry check+fence

	run    runState        // Start and Stop
	disp   dispatcherState // the dispatchers (StopDispatcher/StartDispatcher)
	orders orderStage      // the order service
	rel    releaseQueue    // the release stage's queue
	comp   compensator     // the release workers (CrashCompensator)
	svc    service         // the order service's own process (service.go)
	expiry expiryStage     // the expiry checker
	drain  drainResult     // what Drain found
}

// runState is the pipeline's life: mu guards started and stopped, and
// orders Start, Stop and the restarts of stages against each other (it is
// held while a stage starts: take it before disp.mu and comp.mu). ctx,
// cancel and wg are set once, by Start under mu.
type runState struct {
	mu      sync.Mutex
	started bool
	stopped bool
	ctx     context.Context // every stage's; cancelled by Stop
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the stages started by Start (goRun)
}

// dispatcherState is the running dispatchers: mu guards every field.
type dispatcherState struct {
	mu   sync.Mutex
	stop context.CancelFunc // stops the dispatchers started last
	wg   *sync.WaitGroup    // the dispatchers started last
	on   bool
}

// orderStage is the order service's state: mu guards lastErr; log has
// its own lock; commitHooks is atomic.
type orderStage struct {
	// commitHooks are a test's hooks around the order transaction's COMMIT
	// (nil in production): see orderTx.
	commitHooks atomic.Pointer[commitHooks]
	log         orderLog
	mu          sync.Mutex
	lastErr     string // the last order transaction error, for the evidence
}

// releaseQueue is the release stage's queue of rejected reservations: mu
// guards queue; wake (buffered, 1) tells a worker there is work; busy
// counts the items queued or being handled (atomic).
type releaseQueue struct {
	mu    sync.Mutex
	queue []releaseItem
	wake  chan struct{}
	busy  atomic.Int64
}

// expiryStage is the expiry checker's state (a sync.Map: no lock).
type expiryStage struct {
	directTried sync.Map // Defects.ExpiryDirectCompensate: rids already tried
}

// drainResult is what the last Drain found: mu guards every field.
type drainResult struct {
	mu    sync.Mutex
	done  bool // Drain returned
	err   string
	stuck []Stuck // the reservations left when it timed out
}

// counters are the pipeline's counts, a struct per stage (atomics: no
// lock); Stats reads them.
type counters struct {
	send     sendCounts
	delivery deliveryCounts
	order    orderCounts
	release  releaseCounts
	expiry   expiryCounts
	script   scriptCounts
	drain    drainCounts
}

// sendCounts are the dispatcher's: its sends to the MQ and their outcomes,
// and its crashes and restarts.
type sendCounts struct {
	sends, resends, acked, unknownSends, sendErrors, timeoutsStored, lostByMQ, abandoned atomic.Int64
	dispStops, dispStarts                                                                atomic.Int64
}

// deliveryCounts are the MQ's deliveries to the order stage.
type deliveryCounts struct {
	deliveries, duplicateDeliveries, redeliveries atomic.Int64
}

// orderCounts are the order stage's outcomes.
type orderCounts struct {
	orders, rejected, refused, dupSkipped                              atomic.Int64
	noStock, userAlreadyOrdered, duplicateResv, dropped, orderTxErrors atomic.Int64
}

// releaseCounts are the units given back (by the release stage or the
// expiry checker).
type releaseCounts struct {
	releases, releasesRejected, releasesExpired atomic.Int64
}

// expiryCounts are the expiry checker's.
type expiryCounts struct {
	expiriesChecked, expiryHeldByOrder, expiryHeldByMQ atomic.Int64
}

// scriptCounts are the calls of transition.lua and compensate.lua.
type scriptCounts struct {
	transitions, illegal, redisErrors atomic.Int64
}

// drainCounts are Drain's.
type drainCounts struct {
	stuck, drainMs, drainSwept, drainExtendedMs atomic.Int64
}

// New builds a pipeline for activity a; store runs the transition and
// compensate scripts (it may carry other scripts than the load's, e.g. a
// team's own). Nothing runs before Start.
func New(cfg Config, store *lua.Store, a *lua.Activity) *Pipeline {
	cfg = cfg.withDefaults()
	p := &Pipeline{cfg: cfg, st: store, a: a}
	p.rel.wake = make(chan struct{}, 1)
	p.rec.during = map[string]map[string]bool{}
	p.mq = newBroker(cfg.MQ, cfg.Order.Delay, cfg.Seed, &p.c)
	return p
}

// Config is the configuration in force (defaults filled in).
func (p *Pipeline) Config() Config { return p.cfg }

// Start starts every stage; they run until Stop (or ctx ends). It fails on
// an invalid configuration or a second Start.
func (p *Pipeline) Start(ctx context.Context) error {
	if err := p.cfg.Validate(); err != nil {
		return err
	}
	if p.st == nil || p.a == nil {
		return errors.New("pipeline: New needs a store and an activity")
	}
	if p.cfg.Orders == nil {
		return errors.New("pipeline: Config.Orders is nil: the order stage needs its PostgreSQL database (pipeline.OpenOrders on compose.StartPostgresDB or compose.OpenPostgres)")
	}
	p.run.mu.Lock()
	defer p.run.mu.Unlock()
	if p.run.started {
		return errors.New("pipeline: already started")
	}
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	err := p.cfg.Orders.setup(sctx, p.cfg.Defects)
	if err == nil {
		err = p.cfg.Orders.prepareActivity(sctx, p.a)
	}
	scancel()
	if err != nil {
		return err
	}
	p.run.started = true
	p.run.ctx, p.run.cancel = context.WithCancel(ctx)
	for b := uint32(0); b < p.a.Buckets; b++ {
		p.goRun(func() { p.expiryLoop(p.run.ctx, b) })
	}
	for i := 0; i < p.cfg.Order.Workers; i++ {
		p.goRun(func() { p.orderWorker(p.run.ctx) })
	}
	p.startCompensatorLocked()
	p.goRun(func() { p.reconcileLoop(p.run.ctx) })
	p.startDispatcherLocked()
	return nil
}

func (p *Pipeline) goRun(f func()) {
	p.run.wg.Add(1)
	go func() {
		defer p.run.wg.Done()
		f()
	}()
}

// StopDispatcher stops the dispatchers as a crash would: sends between the
// MQ and their Redis transition are abandoned (the message may be in the MQ
// while the reservation is still RESERVED). It returns once they are gone.
// The other stages keep running. Implements faults.PipelineControl.
func (p *Pipeline) StopDispatcher() {
	if p != nil {
		p.stopDispatcher(true)
	}
}

// stopDispatcher stops the dispatchers; crash says whether it counts as one
// (Stop's own shutdown does not).
func (p *Pipeline) stopDispatcher(crash bool) {
	p.disp.mu.Lock()
	defer p.disp.mu.Unlock()
	if !p.disp.on {
		return
	}
	p.disp.stop()
	p.disp.wg.Wait()
	p.disp.on = false
	if crash {
		p.c.send.dispStops.Add(1)
	}
}

// StartDispatcher starts the dispatchers again after StopDispatcher (a
// restarted process: it finds its work in send_pending). No-op while they
// run, before Start or after Stop.
func (p *Pipeline) StartDispatcher() {
	if p == nil {
		return
	}
	p.run.mu.Lock()
	defer p.run.mu.Unlock()
	if !p.run.started || p.run.stopped {
		return
	}
	p.startDispatcherLocked()
}

func (p *Pipeline) startDispatcherLocked() {
	p.disp.mu.Lock()
	defer p.disp.mu.Unlock()
	if p.disp.on {
		return
	}
	ctx, cancel := context.WithCancel(p.run.ctx)
	wg := &sync.WaitGroup{}
	for b := uint32(0); b < p.a.Buckets; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.dispatchLoop(ctx, b)
		}()
	}
	p.disp.stop, p.disp.wg, p.disp.on = cancel, wg, true
	p.c.send.dispStarts.Add(1)
}

// DispatcherRunning reports whether the dispatchers run.
func (p *Pipeline) DispatcherRunning() bool {
	p.disp.mu.Lock()
	defer p.disp.mu.Unlock()
	return p.disp.on
}

// DispatcherState is what the dispatcher-crash fault reports as evidence.
func (p *Pipeline) DispatcherState() map[string]any {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pending, _ := p.zcard(ctx, func(sc lua.Scope) string { return sc.SendPendingKey() })
	return map[string]any{
		"running":            p.DispatcherRunning(),
		"stops":              p.c.send.dispStops.Load(),
		"starts":             p.c.send.dispStarts.Load(),
		"abandoned_sends":    p.c.send.abandoned.Load(),
		"send_pending":       pending,
		"sends":              p.c.send.sends.Load(),
		"duplicate_delivery": p.c.delivery.duplicateDeliveries.Load(),
	}
}

// Stop stops every stage and waits for them. Idempotent.
func (p *Pipeline) Stop() {
	p.run.mu.Lock()
	if !p.run.started || p.run.stopped {
		p.run.stopped = true
		p.run.mu.Unlock()
		return
	}
	p.run.stopped = true
	p.run.mu.Unlock()
	p.stopDispatcher(false)
	p.stopCompensator()
	p.run.cancel()
	p.run.wg.Wait()
}

// ErrDrainTimeout is wrapped by Drain's error when reservations were left.
var ErrDrainTimeout = errors.New("pipeline: drain timed out")

// DrainCapFactor bounds a drain that keeps making progress: at most this
// many times its timeout in all (see Drain). It was 6: on a CI host whose
// harness threads waited for a CPU 94% of the time, the order stage made
// about 130 orders/s (345 on a quiet one: the single stock row's commits
// are serial) and a dispatcher-crash run's backlog of about 8,000 orders
// still had 354 to go at 60 s, still falling, and P2 failed reservations
// that were moving. A drain only runs this long while it keeps finishing
// reservations; a stuck one still ends it after one timeout.
const DrainCapFactor = 30

// Drain waits, with the stages running, until every reservation of the
// activity is terminal (ORDER_CREATED or RELEASED: both zsets of every
// bucket are empty — reserve.lua puts each reservation in
// reservation_expiry and only ORDER_CREATED and compensate take it out),
// the MQ holds nothing and the release stage is idle. On timeout it lists
// the reservations left (Stats().Drain.Stuck, Evidence().Stuck) and returns an
// error wrapping ErrDrainTimeout. Call it after the load, with the
// dispatcher running (heal a dispatcher-crash first).
//
// timeout is how long the pipeline may go without bringing one more
// reservation to an end: while the count of reservations left keeps
// falling, the deadline moves to timeout after the last fall, up to
// DrainCapFactor × timeout in all. A slow stand (a starved host working
// through its backlog) is given the time to finish; a stuck reservation
// (nothing falls any more) still ends the drain after timeout. The time
// the drain ran past timeout is Stats().Drain.DrainExtendedMs.
func (p *Pipeline) Drain(ctx context.Context, timeout time.Duration) error {
	began := time.Now()
	hardStop := began.Add(DrainCapFactor * timeout)
	dctx, cancel := context.WithDeadline(ctx, hardStop)
	defer cancel()
	deadline, fewest := began.Add(timeout), int64(-1)
	finish := func(err error) error {
		p.c.drain.drainMs.Store(time.Since(began).Milliseconds())
		p.c.drain.drainExtendedMs.Store(max(0, time.Since(began)-timeout).Milliseconds())
		p.drain.mu.Lock()
		p.drain.done = true
		p.drain.err = ""
		if err != nil {
			p.drain.err = err.Error()
		}
		p.drain.mu.Unlock()
		return err
	}
	var swept time.Time
	for {
		left, err := p.zcard(dctx, func(sc lua.Scope) string { return sc.ExpiryKey() })
		pend, err2 := p.zcard(dctx, func(sc lua.Scope) string { return sc.SendPendingKey() })
		idle := err == nil && err2 == nil && pend == 0 && p.mq.idle() && p.rel.busy.Load() == 0
		if idle && left == 0 {
			p.c.drain.stuck.Store(0)
			p.drain.mu.Lock()
			p.drain.stuck = nil
			p.drain.mu.Unlock()
			return finish(nil)
		}
		if n := left + pend; err == nil && err2 == nil && (fewest < 0 || n < fewest) {
			// One more reservation came to an end: the stand is working.
			fewest = n
			if deadline = time.Now().Add(timeout); deadline.After(hardStop) {
				deadline = hardStop
			}
		}
		if idle && time.Since(swept) >= p.cfg.Expiry.Every {
			swept = time.Now()
			p.sweepFenced(dctx)
		}
		t := time.NewTimer(20 * time.Millisecond)
		var stop <-chan time.Time
		if d := time.Until(deadline); d <= 0 {
			t.Stop()
			stop = closedTimeChan
		} else if d < 20*time.Millisecond {
			t.Reset(d)
		}
		select {
		case <-dctx.Done():
		case <-stop:
		case <-t.C:
			continue
		}
		t.Stop()
		return finish(p.drainTimedOut(ctx, time.Since(began), timeout, pend))
	}
}

// closedTimeChan is a channel that is always ready: Drain's "deadline
// passed" case.
var closedTimeChan = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// drainTimedOut lists the reservations left when the drain ended after
// ran (timeout without one more reservation finishing, or the cap) and
// returns the error wrapping ErrDrainTimeout.
func (p *Pipeline) drainTimedOut(ctx context.Context, ran, timeout time.Duration, pend int64) error {
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	stuck, rerr := p.readStuck(rctx)
	rcancel()
	p.drain.mu.Lock()
	p.drain.stuck = stuck
	p.drain.mu.Unlock()
	p.c.drain.stuck.Store(int64(len(stuck)))
	why := fmt.Sprintf("none came to an end for %s", timeout)
	if ran >= DrainCapFactor*timeout {
		why = fmt.Sprintf("still finishing at the cap of %d × %s", DrainCapFactor, timeout)
	}
	e := fmt.Errorf("%w after %s (%s): %d reservations not terminal (send_pending %d), mq idle %v, releases pending %d",
		ErrDrainTimeout, ran.Round(time.Millisecond), why, len(stuck), pend, p.mq.idle(), p.rel.busy.Load())
	if rerr != nil {
		e = errors.Join(e, rerr)
	}
	if ctx.Err() != nil {
		e = errors.Join(e, ctx.Err())
	}
	return e
}

// sweepFenced finishes, during the drain, the reservations left
// RELEASE_PENDING (fenced) or REJECTED whose compensate failed past the
// release stage's bounded retries (a partition during the compensate):
// without it they wait for the expiry checker until their TTL, long after
// the drain. Both statuses lead only to RELEASED, so finishing them before
// the TTL is safe; it goes the expiry checker's way (expireOne: the
// reservation's lock, the fence answering IDEMPOTENT on record, compensate,
// which releases at most once). Drain calls it only when nothing else can
// move them (send_pending empty, the MQ idle, the release stage idle); what
// it cannot finish now (Redis still unreachable) is tried again at the next
// sweep, until the drain's deadline.
func (p *Pipeline) sweepFenced(ctx context.Context) {
	for b := uint32(0); b < p.a.Buckets && ctx.Err() == nil; b++ {
		sc := p.a.Scope(b)
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
		ids, err := p.st.Client().ZRange(cctx, sc.ExpiryKey(), 0, -1).Result()
		cancel()
		if err != nil {
			continue
		}
		for _, rid := range ids {
			rec, err := p.readRecord(ctx, sc, rid)
			if err == nil && (rec.status == lua.StatusReleasePending || rec.status == lua.StatusRejected) {
				p.c.drain.drainSwept.Add(1)
				p.expireOne(ctx, sc, rid)
			}
		}
	}
}

// zcard sums ZCARD of one zset over the buckets.
func (p *Pipeline) zcard(ctx context.Context, key func(lua.Scope) string) (int64, error) {
	var n int64
	for b := uint32(0); b < p.a.Buckets; b++ {
		c, err := p.st.Client().ZCard(ctx, key(p.a.Scope(b))).Result()
		if err != nil {
			return n, err
		}
		n += c
	}
	return n, nil
}

// readStuck lists the members of reservation_expiry (the non-terminal
// reservations) with their status.
func (p *Pipeline) readStuck(ctx context.Context) ([]Stuck, error) {
	var out []Stuck
	rdb := p.st.Client()
	for b := uint32(0); b < p.a.Buckets; b++ {
		sc := p.a.Scope(b)
		ids, err := rdb.ZRange(ctx, sc.ExpiryKey(), 0, -1).Result()
		if err != nil {
			return out, fmt.Errorf("pipeline: read %s: %w", sc.ExpiryKey(), err)
		}
		for _, id := range ids {
			s, _ := rdb.HGet(ctx, sc.ResvKey(id), "status").Result()
			out = append(out, Stuck{RID: id, Bucket: b, Status: lua.Status(s)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RID < out[j].RID })
	return out, nil
}

// OldestSendPendingAge is how long the oldest due entry of send_pending
// (over every bucket) has been waiting: now minus the smallest score
// (reserve.lua scores an entry with its acceptance time, a failed send
// with its next retry time), 0 when send_pending is empty or every entry
// is a retry not due yet. Now is this process's clock, the one the
// dispatcher compares the scores with.
func (p *Pipeline) OldestSendPendingAge(ctx context.Context) (time.Duration, error) {
	oldest := int64(-1)
	for b := uint32(0); b < p.a.Buckets; b++ {
		z, err := p.st.Client().ZRangeWithScores(ctx, p.a.Scope(b).SendPendingKey(), 0, 0).Result()
		if err != nil {
			return 0, err
		}
		if len(z) == 1 && (oldest < 0 || int64(z[0].Score) < oldest) {
			oldest = int64(z[0].Score)
		}
	}
	if oldest < 0 {
		return 0, nil
	}
	return max(0, time.Since(time.UnixMilli(oldest))), nil
}

// Stats returns the counters now.
func (p *Pipeline) Stats() Stats {
	c := &p.c
	return Stats{
		Send: SendStats{Sends: c.send.sends.Load(), Resends: c.send.resends.Load(), Acked: c.send.acked.Load(),
			UnknownSends: c.send.unknownSends.Load(), SendErrors: c.send.sendErrors.Load(), TimeoutsStored: c.send.timeoutsStored.Load(),
			LostByMQ: c.send.lostByMQ.Load(), AbandonedAtCrash: c.send.abandoned.Load(),
			DispatcherStops: c.send.dispStops.Load(), DispatcherStarts: c.send.dispStarts.Load()},
		Delivery: DeliveryStats{Deliveries: c.delivery.deliveries.Load(), DuplicateDeliveries: c.delivery.duplicateDeliveries.Load(),
			Redeliveries: c.delivery.redeliveries.Load()},
		Order: OrderStats{Orders: c.order.orders.Load(), Rejected: c.order.rejected.Load(), Refused: c.order.refused.Load(),
			NoStock: c.order.noStock.Load(), UserAlreadyOrdered: c.order.userAlreadyOrdered.Load(), DuplicateReservations: c.order.duplicateResv.Load(),
			DroppedByDefect: c.order.dropped.Load(), OrderTxErrors: c.order.orderTxErrors.Load(), DuplicatesSkipped: c.order.dupSkipped.Load()},
		Release: ReleaseStats{Releases: c.release.releases.Load(), ReleasesRejected: c.release.releasesRejected.Load(),
			ReleasesExpired: c.release.releasesExpired.Load()},
		Expiry: ExpiryStats{ExpiriesChecked: c.expiry.expiriesChecked.Load(), ExpiryHeldByOrder: c.expiry.expiryHeldByOrder.Load(),
			ExpiryHeldByMQ: c.expiry.expiryHeldByMQ.Load()},
		Script: ScriptStats{Transitions: c.script.transitions.Load(), IllegalAnswers: c.script.illegal.Load(), RedisErrors: c.script.redisErrors.Load()},
		Drain: DrainStats{Stuck: c.drain.stuck.Load(), DrainMs: c.drain.drainMs.Load(), DrainSwept: c.drain.drainSwept.Load(),
			DrainExtendedMs: c.drain.drainExtendedMs.Load()},
		Service: ServiceStats{ServiceSends: p.svc.sends.Load(), ServiceSendsLost: p.svc.lost.Load(), RecoveredByScanner: p.svc.recovered.Load()},
	}
}

// Evidence returns a copy of everything recorded so far (call it after
// Stop for the final picture).
func (p *Pipeline) Evidence() *Evidence {
	sends, dels := p.mq.snapshot()
	p.drain.mu.Lock()
	drained, derr, stuck := p.drain.done, p.drain.err, append([]Stuck(nil), p.drain.stuck...)
	p.drain.mu.Unlock()
	p.orders.mu.Lock()
	lastErr := p.orders.lastErr
	p.orders.mu.Unlock()
	return &Evidence{
		Config: p.cfg, Defects: p.cfg.Defects.Names(), Buckets: p.a.Buckets,
		Events: p.log.snapshot(), Sends: sends, Deliveries: dels, Orders: p.orders.log.snapshot(),
		Stats: p.Stats(), Drained: drained, DrainErr: derr, Stuck: stuck,
		OrderDB: p.cfg.Orders.Schema(), Throughput: p.cfg.Orders.Throughput(), Reconciliation: p.Reconciliation(),
		LastOrderError: lastErr,
	}
}

// noteOrderError keeps the last order transaction error for the evidence.
func (p *Pipeline) noteOrderError(err error) {
	p.orders.mu.Lock()
	p.orders.lastErr = err.Error()
	p.orders.mu.Unlock()
}

// orderLog is the order stage's record of its committed transactions.
type orderLog struct {
	mu   sync.Mutex
	rows []OrderRow
}

func (l *orderLog) add(r OrderRow) {
	l.mu.Lock()
	l.rows = append(l.rows, r)
	l.mu.Unlock()
}

func (l *orderLog) snapshot() []OrderRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]OrderRow(nil), l.rows...)
}

func (p *Pipeline) lock(rid string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(rid))
	return &p.locks[h.Sum32()%uint32(len(p.locks))]
}

// transition runs transition.lua and logs the call.
func (p *Pipeline) transition(ctx context.Context, stage Stage, sc lua.Scope, rid, user string, args lua.TransitionArgs, delivery uint64, note string) (lua.TransitionResult, error) {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	start := time.Now()
	res, err := p.st.Transition(cctx, sc, rid, args)
	cancel()
	ev := Event{Start: start, End: time.Now(), Stage: stage, Op: OpTransition, RID: rid, Bucket: sc.Bucket, User: user,
		Target: args.Target, Delivery: delivery, Note: note}
	p.c.script.transitions.Add(1)
	if err != nil {
		ev.Code, ev.Err = -1, err.Error()
		p.c.script.redisErrors.Add(1)
	} else {
		ev.Code, ev.Answer, ev.Status = int64(res.Code), res.Code.String(), res.Previous
		if res.Code == lua.TransitionIllegal {
			p.c.script.illegal.Add(1)
		}
	}
	p.log.add(ev)
	return res, err
}

// compensate runs compensate.lua and logs the call.
func (p *Pipeline) compensate(ctx context.Context, stage Stage, sc lua.Scope, rid, user, reason, note string) (lua.CompensateResult, error) {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	start := time.Now()
	res, err := p.st.Compensate(cctx, sc, user, rid, reason, 0)
	cancel()
	ev := Event{Start: start, End: time.Now(), Stage: stage, Op: OpCompensate, RID: rid, Bucket: sc.Bucket, User: user, Note: note}
	if err != nil {
		ev.Code, ev.Err = -1, err.Error()
		p.c.script.redisErrors.Add(1)
	} else {
		ev.Code, ev.Answer, ev.Status = int64(res.Code), res.Code.String(), lua.Status(res.Status)
		if res.Code == lua.CompensateReleased {
			p.c.release.releases.Add(1)
			switch stage {
			case StageRelease:
				p.c.release.releasesRejected.Add(1)
			case StageExpiry:
				p.c.release.releasesExpired.Add(1)
			}
		}
	}
	p.log.add(ev)
	return res, err
}

// record is what a stage reads of a reservation before acting.
// commitHooks: before runs just before an order transaction's COMMIT (an
// error fails the commit as a lost connection would); after runs between
// the COMMIT and the Redis fence.
type commitHooks struct {
	before func(messageID string) error
	after  func(messageID string)
}

type record struct {
	status lua.Status
	user   string
	msgID  string
	found  bool
}

func (p *Pipeline) readRecord(ctx context.Context, sc lua.Scope, rid string) (record, error) {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	defer cancel()
	v, err := p.st.Client().HMGet(cctx, sc.ResvKey(rid), "status", "user_id", "message_id").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		p.c.script.redisErrors.Add(1)
		return record{}, err
	}
	if len(v) != 3 || v[0] == nil {
		return record{}, nil
	}
	s := func(x any) string { r, _ := x.(string); return r }
	return record{status: lua.Status(s(v[0])), user: s(v[1]), msgID: s(v[2]), found: true}, nil
}

func nowMs() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }
