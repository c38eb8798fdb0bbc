package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seckill-harness/history"
	"seckill-harness/internal/sleep"
	"seckill-harness/lua"
	"seckill-harness/samplers/stock"
	"seckill-harness/sut"
)

// Result is what a run produced: the history and the run's clock.
type Result struct {
	Config   Config                // the first phase's configuration
	Phases   []PhaseResult         // every load phase, in order
	Began    time.Time             // wall clock of offset 0
	Elapsed  time.Duration         // from offset 0 to the last answer
	History  *history.History      // the operations that were sent (dropped ones are in Drops)
	Drops    Drops                 // the operations that were dropped, counted by time
	Samples  []history.StockSample // the I1 sampler's readings, if it ran
	Observed Observed
	// ErrorTexts holds, per error class (CLUSTERDOWN, OTHER, …), the first
	// distinct error texts the path answered: the evidence behind ERROR outcomes.
	ErrorTexts map[string][]string
}

// Phase is one load phase of a run: its own shape, rate, mode, concurrency
// and mix, run after the previous one on the same clock and op-id sequence.
type Phase struct {
	Name   string
	Config Config
}

// PhaseResult is when a phase ran, as offsets from the run's start, and the
// operation ids it scheduled ([FirstOp, EndOp)).
type PhaseResult struct {
	Name           string
	Config         Config
	Start, End     time.Duration
	FirstOp, EndOp uint64
}

// Observed counts what the engine saw besides outcomes.
type Observed struct {
	Scheduled  int64 // operations the schedule produced (sent + dropped)
	Dropped    int64 // over the in-flight cap (Result.Drops.Total)
	LateStarts int64 // started more than LateThreshold after their intended time
	MaxLateBy  time.Duration
	// PacerClock is what the open-loop pacer slept on ("timerfd" or
	// "go-timer", see internal/sleep); empty when no phase was open-loop.
	PacerClock string
	// CutAtTail counts the operations still unfinished Config.Tail after
	// their phase's end: their context was cancelled, so a send on the
	// wire ended UNKNOWN and one not yet sent was not sent (see Config.Tail).
	CutAtTail int64
}

// LateShare is the share of the scheduled operations that started more
// than LateThreshold after their intended time or were dropped: the
// pacing measure of the open-loop headroom (at most 1% is "paced").
func (o Observed) LateShare() float64 {
	return float64(o.LateStarts+o.Dropped) / float64(max(o.Scheduled, 1))
}

// Option adjusts a run.
type Option func(*options)

type options struct {
	onStart       func(began time.Time)
	progress      func(Progress)
	progressEvery time.Duration
	opObserver    func(*history.Op)
	stockObserver func(history.StockSample)
	spool         bool
	spoolDir      string
	onAccepted    func(ctx context.Context, bucket uint32, rid string)
}

// WithHistorySpool streams the history to a file in dir (the system's
// temporary directory when empty) as the run goes, instead of holding it:
// the run keeps a few chunks of operations in memory whatever its length,
// and Result.History reads them back from the file (History.All). The
// file is unlinked as soon as it is created, so nothing is left on disk.
// A spool that cannot be created or written fails the run.
func WithHistorySpool(dir string) Option {
	return func(o *options) { o.spool, o.spoolDir = true, dir }
}

// WithAccepted calls fn, from the worker that ran it, after every reserve
// answered ACCEPTED for the first time (not a replay), once its answer is
// recorded (its latency does not include fn): the access service's own
// send of the reservation's message (pipeline.Pipeline.ServiceSend).
func WithAccepted(fn func(ctx context.Context, bucket uint32, rid string)) Option {
	return func(o *options) { o.onAccepted = fn }
}

// WithOpObserver calls fn with every operation that was sent, once it
// finished (dropped ones are not), from the worker that ran it: fn must be cheap and safe for
// concurrent use (live metrics counters), and must not keep the pointer
// after it returns (the worker reuses the Op).
func WithOpObserver(fn func(*history.Op)) Option { return func(o *options) { o.opObserver = fn } }

// WithStockObserver calls fn with every stock reading of the I1 sampler
// (see Config.SampleEvery), from the sampler's goroutine.
func WithStockObserver(fn func(history.StockSample)) Option {
	return func(o *options) { o.stockObserver = fn }
}

// WithOnStart calls fn with the run's offset 0 just before the first
// operation is scheduled (e.g. to start a fault timeline on the same clock).
func WithOnStart(fn func(began time.Time)) Option { return func(o *options) { o.onStart = fn } }

// Run drives sys with cfg, selling sale until the duration ends (or MaxOps is reached, or
// ctx is cancelled: then it stops scheduling, lets the operations in flight
// finish, and returns what it has with ctx's error). Every sent operation
// is in the history; dropped ones are counted in Result.Drops.
func Run(ctx context.Context, cfg Config, sale sut.Sale, sys sut.System, opts ...Option) (*Result, error) {
	return RunPhases(ctx, []Phase{{Name: "load", Config: cfg}}, sale, sys, opts...)
}

// RunPhases runs the phases back to back on one clock: latency offsets, op
// ids, the workload (its users and request ids) and the I1 sampler continue
// across them. Users, Seed, Generator, SampleEvery and LateThreshold come
// from the first phase. Errors are as for Run; a cancelled ctx skips the remaining phases.
func RunPhases(ctx context.Context, phases []Phase, sale sut.Sale, sys sut.System, opts ...Option) (*Result, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	pacers, err := preparePhases(phases, sale.Activity)
	if err != nil {
		return nil, err
	}
	first := phases[0].Config
	a := sale.Activity
	e := &engine{sale: sale, sys: sys, wl: NewGeneratorWorkload(first.Seed, first.Users, first.Mix, func(u uint32) uint32 { return history.UserBucket(a, u) }, first.Generator)}
	e.ctx = ctx
	for _, ph := range phases {
		if ph.Config.Mode != ModeClosed {
			// One precise sleeper for the scheduling goroutine (phases run
			// one after another), opened before offset 0. Without a
			// timerfd it sleeps on Go timers, and the run says so.
			e.sleep, _ = sleep.New()
			defer e.sleep.Close()
			break
		}
	}
	if o.spool {
		if err := e.store.SpoolTo(o.spoolDir); err != nil {
			return nil, err
		}
	}
	// The first phase's workers are running (parked on their gate) before
	// offset 0: no goroutine is spawned on the load's clock.
	e.cfg = phases[0].Config
	firstLoop := e.startPhase(ctx, pacers[0])
	// The history's first chunk is allocated, and the heap collected, before
	// offset 0: the first operations neither zero megabytes nor meet a
	// collection started by the run's own set-up garbage.
	e.store.Grow(0)
	runtime.GC()
	e.began = time.Now()
	e.observe = o.opObserver
	e.onAccepted = o.onAccepted
	stopSampler := e.startSampler(first.SampleEvery, o.stockObserver)
	if o.onStart != nil {
		o.onStart(e.began)
	}
	res := &Result{Config: first, Began: e.began}
	e.runPhases(ctx, phases, pacers, firstLoop, res, &o)
	res.Samples = stopSampler()
	if err := e.finish(res); err != nil {
		return nil, err
	}
	return res, ctx.Err()
}

// preparePhases validates the phases (Users, Seed, LateThreshold and
// Generator come from the first) and makes the open-loop ones' pacers.
func preparePhases(phases []Phase, a *lua.Activity) ([]vegeta.Pacer, error) {
	if len(phases) == 0 {
		return nil, fmt.Errorf("no load phase")
	}
	pacers := make([]vegeta.Pacer, len(phases))
	first := &phases[0].Config
	if first.LateThreshold <= 0 {
		first.LateThreshold = time.Millisecond
	}
	for i := range phases {
		cfg := &phases[i].Config
		cfg.Users, cfg.Seed, cfg.LateThreshold, cfg.Generator = first.Users, first.Seed, first.LateThreshold, first.Generator
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("phase %q: %w", phases[i].Name, err)
		}
		if cfg.Mode == ModeOpen {
			p, err := NewPacer(cfg.Shape)
			if err != nil {
				return nil, fmt.Errorf("phase %q: %w", phases[i].Name, err)
			}
			pacers[i] = p
		}
	}
	if a.Buckets > lua.MaxBuckets {
		return nil, fmt.Errorf("activity %s has %d buckets: at most %d (the history stores a bucket index in 16 bits)", a.ID, a.Buckets, lua.MaxBuckets)
	}
	return pacers, nil
}

// startSampler starts the I1 sampler (every > 0) from the run's offset 0;
// stop ends it and returns its readings.
func (e *engine) startSampler(every time.Duration, observe func(history.StockSample)) (stop func() []history.StockSample) {
	sampleCtx, cancel := context.WithCancel(context.Background())
	done := make(chan []history.StockSample, 1)
	if every > 0 {
		go func() { done <- stock.Sample(sampleCtx, e.sale.Activity, e.sys, e.began, every, observe) }()
	} else {
		done <- nil
	}
	return func() []history.StockSample {
		cancel()
		return <-done
	}
}

// runPhases runs the phases in order (the first one's loop already
// started), with progress reports when asked for, until ctx ends.
func (e *engine) runPhases(ctx context.Context, phases []Phase, pacers []vegeta.Pacer, firstLoop func(), res *Result, o *options) {
	var total time.Duration
	for _, ph := range phases {
		total += ph.Config.Duration
	}
	var phaseName atomic.Value
	phaseName.Store(phases[0].Name)
	stopProgress := func() {}
	if o.progress != nil {
		e.live = newLiveStats()
		stopProgress = e.reportProgress(o.progress, o.progressEvery, total, &phaseName)
	}
	for i, ph := range phases {
		if ctx.Err() != nil {
			break
		}
		if i > 0 {
			e.cfg = ph.Config
		}
		e.phaseStart = e.since()
		phaseName.Store(ph.Name)
		if i > 0 {
			e.wl.StartSegment(e.nextID, ph.Config.Mix)
		}
		pr := PhaseResult{Name: ph.Name, Config: ph.Config, Start: e.phaseStart, FirstOp: e.nextID}
		loop := firstLoop
		if i > 0 {
			loop = e.startPhase(ctx, pacers[i])
		}
		loop()
		pr.End, pr.EndOp = e.since(), e.nextID
		res.Phases = append(res.Phases, pr)
	}
	if len(res.Phases) == 0 {
		firstLoop() // cancelled before it began: it releases its workers and schedules nothing
	}
	res.Elapsed = time.Since(e.began)
	stopProgress()
}

// finish fills res with the history, the drops, the error texts and what
// the engine observed; an error is the spool's.
func (e *engine) finish(res *Result) error {
	h, err := e.store.History()
	if err != nil {
		return err
	}
	res.History = h
	res.ErrorTexts = e.errs.snapshot()
	res.Drops = e.drops
	res.Observed = Observed{Scheduled: int64(res.History.Len()) + e.drops.Total, Dropped: e.drops.Total, CutAtTail: e.cutAtTail.Load()}
	if e.sleep != nil {
		// A timer that failed during the run fell back to Go timers: the
		// coarser clock is the one reported.
		res.Observed.PacerClock = "go-timer" // the report's text warns of it
		if e.sleep.Precise() {
			res.Observed.PacerClock = "timerfd"
		}
	}
	for _, o := range res.History.All() {
		if late := o.Start - o.Intended; late > res.Config.LateThreshold {
			res.Observed.LateStarts++
			if late > res.Observed.MaxLateBy {
				res.Observed.MaxLateBy = late
			}
		}
	}
	return nil
}

type engine struct {
	cfg        Config // the current phase's
	sale       sut.Sale
	sys        sut.System
	wl         *Workload
	began      time.Time
	phaseStart time.Duration // offset of the current phase
	nextID     uint64        // first op id of the next phase
	store      history.Store
	drops      Drops  // written by the scheduling goroutine only
	sent       uint64 // operations handed to workers so far: the next Store slot
	wg         *sync.WaitGroup
	ctx        context.Context                                      // the run's context, set by RunPhases
	live       *liveStats                                           // nil unless progress is reported
	observe    func(*history.Op)                                    // WithOpObserver's; nil: none
	onAccepted func(ctx context.Context, bucket uint32, rid string) // WithAccepted's; nil: none
	errs       errorTexts                                           // the first error texts of each class
	sleep      *sleep.Sleeper                                       // the open-loop pacer's; nil for closed-loop runs
	cutTail    context.CancelFunc                                   // cancels the current phase's workers (wait)
	tailCut    *atomic.Bool                                         // the current phase's tail was cut
	cutAtTail  atomic.Int64                                         // operations recorded after a tail was cut
}

// reportProgress calls fn every `every` until the returned stop is called,
// which also delivers a final snapshot.
func (e *engine) reportProgress(fn func(Progress), every time.Duration, total time.Duration, phase *atomic.Value) (stop func()) {
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		var prev int64
		last := time.Now()
		emit := func() {
			now := time.Now()
			p := Progress{Elapsed: e.since(), Total: total, Phase: phase.Load().(string)}
			e.live.snapshot(&p, now.Sub(last), prev)
			prev, last = p.Completed, now
			fn(p)
		}
		for {
			select {
			case <-done:
				emit()
				return
			case <-t.C:
				emit()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

type scheduled struct {
	id       uint32
	slot     uint64 // index among the run's sent operations (Store)
	intended time.Duration
}

func (e *engine) since() time.Duration { return time.Since(e.began) }

// startPhase starts the workers of the phase in e.cfg, parked until the
// returned loop runs; the loop schedules the phase (from e.phaseStart and
// e.nextID as they are then) and returns when its workers are done.
func (e *engine) startPhase(ctx context.Context, p vegeta.Pacer) (loop func()) {
	gate := make(chan struct{})
	var run func()
	if e.cfg.Mode == ModeOpen {
		run = e.runOpen(ctx, p, gate)
	} else {
		run = e.runClosed(ctx, gate)
	}
	return func() {
		close(gate)
		run()
	}
}

func (e *engine) runOpen(ctx context.Context, p vegeta.Pacer, gate <-chan struct{}) func() {
	queue := make(chan scheduled, e.cfg.MaxInFlight)
	var inflight atomic.Int64
	e.startWorkers(gate, func(wctx context.Context, record func(uint64, history.Op)) {
		for s := range queue {
			if wctx.Err() != nil && e.tailCut.Load() {
				record(s.slot, e.notSent(s.id, s.intended)) // queued past the tail: never sent
			} else {
				record(s.slot, e.execute(wctx, s.id, s.intended))
			}
			inflight.Add(-1)
		}
	})
	return func() { e.scheduleOpen(ctx, p, queue, &inflight) }
}

func (e *engine) scheduleOpen(ctx context.Context, p vegeta.Pacer, queue chan<- scheduled, inflight *atomic.Int64) {
	var n uint64
	base := e.nextID
	last := e.phaseStart
	for ctx.Err() == nil {
		if e.cfg.MaxOps > 0 && n >= uint64(e.cfg.MaxOps) {
			break
		}
		// The pacer sees time since the phase began; intended times are
		// offsets from the run's start.
		elapsed := e.since() - e.phaseStart
		if elapsed >= e.cfg.Duration {
			break
		}
		wait, stop := p.Pace(elapsed, n)
		if stop {
			break
		}
		var intended time.Duration
		if wait > 0 {
			if elapsed+wait >= e.cfg.Duration {
				break
			}
			intended = e.phaseStart + elapsed + wait
			if !e.sleep.For(ctx, wait) {
				break
			}
		} else {
			// Behind schedule: the operation was due at some point since the
			// last one; find exactly when, so its latency counts the wait.
			intended = e.phaseStart + dueTime(p, n, last-e.phaseStart, elapsed)
		}
		last = intended
		if base+n >= MaxOpsPerRun {
			break // op ids are 32 bits
		}
		id := uint32(base + n)
		n++
		if e.live != nil {
			e.live.scheduled.Add(1)
		}
		if inflight.Load() >= int64(e.cfg.MaxInFlight) {
			// Counted, not kept: the op's id is skipped in the history.
			e.drops.add(intended)
			e.live.drop()
			continue
		}
		inflight.Add(1)
		queue <- scheduled{id: id, slot: e.sent, intended: intended}
		e.sent++
	}
	e.nextID = base + n
	close(queue)
	e.wait()
}

func (e *engine) runClosed(ctx context.Context, gate <-chan struct{}) func() {
	var next atomic.Uint64
	var base, sentBase, limit uint64 // set when the gate opens
	e.startWorkers(gate, func(wctx context.Context, record func(uint64, history.Op)) {
		for ctx.Err() == nil {
			// The phase's end is checked before an id is claimed, and no id
			// past MaxOps is claimed: every claimed id is sent, so the
			// phase's ids are dense and the next phase's workload never
			// picks an id nobody sent as the original of a replay or a release.
			now := e.since()
			if now-e.phaseStart >= e.cfg.Duration {
				return
			}
			n, ok := claimID(&next, limit)
			if !ok {
				return
			}
			if e.live != nil {
				e.live.scheduled.Add(1)
			}
			record(sentBase+n, e.execute(wctx, uint32(base+n), now))
		}
	})
	base, sentBase = e.nextID, e.sent // before the gate opens: the workers see them
	limit = MaxOpsPerRun - min(base, MaxOpsPerRun)
	if e.cfg.MaxOps > 0 {
		limit = min(limit, uint64(e.cfg.MaxOps))
	}
	return func() {
		e.wait()
		e.nextID = base + next.Load()
		e.sent += next.Load()
	}
}

// claimID takes the next of the ids 0..limit-1 off next; false when they
// are all taken.
func claimID(next *atomic.Uint64, limit uint64) (uint64, bool) {
	for {
		n := next.Load()
		if n >= limit {
			return 0, false
		}
		if next.CompareAndSwap(n, n+1) {
			return n, true
		}
	}
}

// startWorkers starts cfg.Concurrency workers, each parked until gate is
// closed; each gets a context carrying its own lua.WireStats (so
// per-operation wire counts are deltas of it) and its own reusable
// per-send deadline (callCtx).
func (e *engine) startWorkers(gate <-chan struct{}, loop func(wctx context.Context, record func(slot uint64, o history.Op))) {
	e.wg = &sync.WaitGroup{}
	phaseCtx, cut := context.WithCancel(e.ctx)
	e.cutTail, e.tailCut = cut, &atomic.Bool{}
	tailCut := e.tailCut
	for w := 0; w < e.cfg.Concurrency; w++ {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			<-gate
			wctx, release := withCallCtx(lua.WithWireStats(phaseCtx, &lua.WireStats{}))
			defer release()
			// One Op per worker for the observers' pointer: taking &o of
			// the parameter moved every operation to the heap (one
			// allocation per operation).
			cur := new(history.Op)
			loop(wctx, func(slot uint64, o history.Op) {
				if tailCut.Load() {
					e.cutAtTail.Add(1)
				}
				*cur = o
				e.live.record(cur)
				if e.observe != nil {
					e.observe(cur)
				}
				e.store.Put(slot, *cur)
			})
		}()
	}
}

// wait waits for the phase's workers: the operations in flight at the
// phase's end get Config.Tail to finish, then their context is cancelled
// (a service or a node that never answers holds a run no longer than its
// plan plus the tail).
func (e *engine) wait() {
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	t := time.NewTimer(max(e.phaseStart+e.cfg.Duration-e.since(), 0) + e.cfg.Tail())
	select {
	case <-done:
	case <-t.C:
		e.tailCut.Store(true)
		e.cutTail()
		<-done
	}
	t.Stop()
	e.cutTail()
}

// execute runs operation id and returns its record. Errors of the operation
// are data in the record, never a Go error.
func (e *engine) execute(ctx context.Context, id uint32, intended time.Duration) history.Op {
	k, u, r := e.wl.Op(uint64(id))
	op := e.executeOp(ctx, history.Op{ID: id, Kind: k, User: u, Req: r, Intended: intended})
	if op.Outcome == history.OutcomeError && op.ErrClass == history.ErrConnect && op.Kind != history.KindRelease &&
		ctx.Err() != nil && e.tailCut.Load() {
		// Cut at the tail while it waited for a connection: never sent,
		// as the cut promises (DROPPED), not an error of the system. (A
		// reserve's earlier sends, if any, were refused: none ran. A
		// release is two calls, and its fence may have run before the
		// compensation waited: it stays an ERROR, CONNECT, which is not
		// counted against the system either.)
		return e.notSent(id, intended)
	}
	return op
}

// notSent is the record of operation id, scheduled but never sent: its
// phase's tail was cut before a worker took it (Config.Tail).
func (e *engine) notSent(id uint32, intended time.Duration) history.Op {
	k, u, r := e.wl.Op(uint64(id))
	return history.Op{ID: id, Kind: k, User: u, Req: r, Intended: intended, Bucket: uint16(history.UserBucket(e.sale.Activity, u)), Outcome: history.OutcomeDropped}
}

// executeOp runs an operation whose kind, user and request are set.
func (e *engine) executeOp(ctx context.Context, op history.Op) history.Op {
	op.Bucket = uint16(history.UserBucket(e.sale.Activity, op.User))
	op.Start = e.since()
	switch op.Kind {
	case history.KindRelease:
		e.release(ctx, &op)
	case history.KindQuery:
		e.query(ctx, &op)
	default:
		e.reserve(ctx, &op)
	}
	op.End = e.since()
	if e.onAccepted != nil && op.Accepted() && !op.Replay() && op.RID != "" {
		e.onAccepted(ctx, uint32(op.Bucket), op.RID)
	}
	return op
}

// reserve sends reserve.lua and, after an UNKNOWN or a transient refusal,
// re-sends the very same call (same request_id, reservation_id, message_id).
func (e *engine) reserve(ctx context.Context, op *history.Op) {
	uid, reqID := history.UserAndRequestID(op.User, op.Req)
	call, err := e.sale.IDs.NewReserveCall(e.sale.Activity, uid, reqID, e.cfg.TTL)
	if err != nil {
		op.Outcome, op.ErrClass = history.OutcomeError, history.ErrOther
		e.errs.note(history.ErrOther, err)
		return
	}
	attempts := 0
	if ws := lua.WireStatsFrom(ctx); ws != nil {
		ta, mv, ask := ws.TryAgain.Load(), ws.Moved.Load(), ws.Ask.Load()
		defer func() {
			op.TryAgain = history.Sat8(int(ws.TryAgain.Load() - ta))
			op.Redirs = history.Sat8(int(ws.Moved.Load() - mv + ws.Ask.Load() - ask))
		}()
	}
	path := e.sys
	for send := 0; ; send++ {
		if send > 0 {
			call = path.Resend(call, send-1)
		}
		cctx, cancel := callTimeout(ctx, e.cfg.CallTimeout)
		res, err := path.Reserve(cctx, call)
		cancel()
		attempts += res.Attempts
		op.Sends = history.Sat8(send + 1)
		if errors.Is(err, sut.ErrAnsweredLocally) {
			op.Outcome, op.ErrClass = history.OutcomeLocalSoldOut, history.ErrNone
			break
		}
		if res.EvalFallback {
			op.Flags |= history.FlagEvalFallback
		}
		if err == nil {
			op.Outcome, op.ErrClass, op.RID = history.Outcome(res.Code), history.ErrNone, res.ReservationID
			if res.Replay {
				op.Flags |= history.FlagReplay
			}
			setRemaining(op, res.Counted, res.Remaining)
			if w := res.Wait; w.Sent {
				op.Flags |= history.FlagWaitSent
				op.WaitUs = uint32(min(w.Latency.Microseconds(), math.MaxUint32))
				if w.Confirmed {
					op.Flags |= history.FlagWaitConfirmed
				}
			}
			break
		}
		op.Outcome, op.ErrClass = history.Classify(err)
		e.errs.note(op.ErrClass, err)
		if op.Outcome == history.OutcomeUnknown {
			op.Flags |= history.FlagHadUnknown
		}
		if !lua.Retryable(err) || send >= e.cfg.RetrySends || ctx.Err() != nil || !sleep.For(ctx, e.cfg.RetryBackoff) {
			break
		}
	}
	op.Attempts = history.Sat8(attempts)
	// A refusal of the last send says nothing of an earlier send whose reply
	// was lost: that one may have run. The operation's outcome is unknown.
	if op.Outcome == history.OutcomeError && op.HadUnknown() {
		op.Outcome = history.OutcomeUnknown
	}
}

// release fences an earlier reservation (RESERVED/SEND_UNKNOWN/ENQUEUED/REJECTED
// -> RELEASE_PENDING) and compensates it; the outcome is compensate.lua's code.
func (e *engine) release(ctx context.Context, op *history.Op) {
	a := e.sale.Activity
	uid, reqID := history.UserAndRequestID(op.User, op.Req)
	rid := e.sale.IDs.ReservationIDFor(a, uid, reqID)
	sc := a.Scope(uint32(op.Bucket))
	op.RID = rid
	for send := 0; ; send++ {
		cctx, cancel := callTimeout(ctx, e.cfg.CallTimeout)
		res, err := e.sys.Release(cctx, sc, uid, rid)
		cancel()
		op.Sends = history.Sat8(send + 1)
		op.Attempts = history.Sat8(int(op.Attempts) + 2)
		if err == nil {
			op.Outcome, op.ErrClass = history.Outcome(res.Code), history.ErrNone
			setRemaining(op, res.Counted, res.Available)
			return
		}
		op.Outcome, op.ErrClass = history.Classify(err)
		e.errs.note(op.ErrClass, err)
		if op.Outcome == history.OutcomeUnknown {
			op.Flags |= history.FlagHadUnknown
		}
		if !lua.Retryable(err) || send >= e.cfg.RetrySends || ctx.Err() != nil || !sleep.For(ctx, e.cfg.RetryBackoff) {
			if op.Outcome == history.OutcomeError && op.HadUnknown() {
				op.Outcome = history.OutcomeUnknown // an earlier send may have run
			}
			return
		}
	}
}

// query asks the system what became of an earlier request (sut.Querier),
// once: a read changes nothing, so a lost reply is not re-sent. The
// outcome is the reserve code on record (RID its reservation id,
// Remaining its count when it carried one) or OutcomeNotFound; a system
// without the ability answers an error (lifecycle's setUp leaves the
// query share out for those, so only a misuse gets here).
func (e *engine) query(ctx context.Context, op *history.Op) {
	uid, reqID := history.UserAndRequestID(op.User, op.Req)
	op.Sends, op.Attempts = 1, 1
	q, ok := sut.Ability[sut.Querier](e.sys)
	if !ok {
		op.Outcome, op.ErrClass = history.OutcomeError, history.ErrOther
		e.errs.note(history.ErrOther, fmt.Errorf("%s answers no status query: the query share needs a system with one", e.sys.Name()))
		return
	}
	cctx, cancel := callTimeout(ctx, e.cfg.CallTimeout)
	res, found, err := q.Query(cctx, e.sale.Activity, uid, reqID)
	cancel()
	switch {
	case err != nil:
		op.Outcome, op.ErrClass = history.Classify(err)
		e.errs.note(op.ErrClass, err)
	case !found:
		op.Outcome, op.ErrClass = history.OutcomeNotFound, history.ErrNone
	default:
		op.Outcome, op.ErrClass, op.RID = history.Outcome(res.Code), history.ErrNone, res.ReservationID
		setRemaining(op, res.Remaining >= 0, res.Remaining)
	}
}

// setRemaining records the count an answer carried (Op.Remaining) when it
// carried one that fits (the contract's -1 means none).
func setRemaining(op *history.Op, counted bool, n int64) {
	if counted && n >= 0 && n <= math.MaxInt32 {
		op.Remaining = int32(n)
		op.Flags |= history.FlagRemaining
	} else {
		op.Remaining = 0
		op.Flags &^= history.FlagRemaining
	}
}

func (c Config) String() string {
	return fmt.Sprintf("%s %s rate=%g for %s, %d workers, %d users", c.Mode, c.Shape.Kind, c.Shape.Rate, c.Duration, c.Concurrency, c.Users)
}

// Stepper runs operations one at a time, by hand, exactly as a run's
// workers do, on the clock it started: tests build a history step by step
// with it (and corrupt the state behind it).
type Stepper struct{ e *engine }

// NewStepper is a stepper of cfg (its timeouts and retries) on sys, selling sale.
func NewStepper(cfg Config, sale sut.Sale, sys sut.System) *Stepper {
	return &Stepper{&engine{cfg: cfg, sale: sale, sys: sys, began: time.Now(), ctx: context.Background()}}
}

// Do runs op (its kind, user and request set), intended now.
func (s *Stepper) Do(ctx context.Context, op history.Op) history.Op {
	op.Intended = s.e.since()
	return s.e.executeOp(ctx, op)
}
