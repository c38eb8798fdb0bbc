package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seckill-harness/history"
	"seckill-harness/internal/sleep"
)

// maxPacedAhead bounds the workers of an open-loop phase that sleep at
// once on an operation they took ahead of its due time, each on a precise
// timer (a file descriptor) of its own; the free workers past it wait for
// a turn. A variable so that tests can lower it.
var maxPacedAhead = 1024

// maxCatchUp bounds the overdue operations one take schedules while it
// holds the schedule (the others wait for it meanwhile).
const maxCatchUp = 256

// openSchedule is an open-loop phase's schedule, shared by its workers.
// No goroutine paces it: a free worker takes the next operation itself,
// one already due (queued, or found overdue) to send at once, or else the
// next one not yet due, on whose intended time it then sleeps on its own
// precise timer. An operation therefore costs no hand-off from a pacer to
// a parked worker (a thread woken per operation) and one timer wake-up,
// and the meaning of every figure is the pacer's: an operation's intended
// time is when the shape makes it due, its start is when a worker sends
// it (a worker busy or asleep late shows as a late start, counted from the
// intended time), and an operation due while MaxInFlight operations are
// scheduled and unfinished (queued ones included) is dropped. One
// difference: an operation taken ahead counts as in flight from when it is
// taken, not from when it is due (earlier by at most the workers' number
// of intervals), which matters only with MaxInFlight near Concurrency.
//
// Operations are scheduled in id order under mu, so the history's slots,
// the drops' intended times and the intended times themselves come in the
// order of the shape, as from a single scheduling goroutine.
type openSchedule struct {
	e    *engine
	p    vegeta.Pacer
	ctx  context.Context // the run's: its end ends the schedule
	base uint64          // the phase's first op id

	mu       sync.Mutex
	n        uint64        // operations scheduled (sent or dropped) so far
	last     time.Duration // intended time of operation n-1 (n > 0)
	done     bool          // nothing after n: the phase, MaxOps or ctx ended
	queue    []scheduled   // due and accepted, not yet taken: queue[head:]
	head     int
	ahead    int                       // workers asleep on an operation taken ahead
	parked   int                       // workers waiting on turn
	turn     chan struct{}             // a token wakes one parked worker
	free     []*sleep.Sleeper          // timers not in use
	sleepers []*sleep.Sleeper          // every timer made, for Close
	inflight atomic.Int64              // accepted and unfinished (queued included)
	endedAt  atomic.Pointer[time.Time] // when the run's context ended; nil: live
}

func (e *engine) runOpen(ctx context.Context, p vegeta.Pacer, gate <-chan struct{}) func() {
	s := &openSchedule{e: e, p: p, ctx: ctx, base: e.nextID, turn: make(chan struct{}, e.cfg.Concurrency)}
	// The timers are made before the gate opens (before offset 0 for the
	// first phase), as many as may sleep at once.
	for range min(e.cfg.Concurrency, maxPacedAhead) {
		s.free = append(s.free, s.newSleeper())
	}
	stop := context.AfterFunc(ctx, func() { now := time.Now(); s.endedAt.Store(&now) })
	e.paced = true
	e.startWorkers(gate, func(wctx context.Context, record func(uint64, history.Op)) {
		for {
			op, sl, ok := s.take()
			if !ok {
				return
			}
			if sl != nil {
				live := sl.Until(e.began.Add(op.intended))
				s.woke(sl)
				if !live {
					// The run ended while it waited: neither sent nor
					// recorded (its slot stays empty, as a drop's id).
					s.inflight.Add(-1)
					continue
				}
			}
			if wctx.Err() != nil && e.tailCut.Load() {
				record(op.slot, e.notSent(op.id, op.intended)) // queued past the tail: never sent
			} else {
				record(op.slot, e.execute(wctx, op.id, op.intended))
			}
			s.inflight.Add(-1)
		}
	})
	return func() {
		e.wait()
		stop()
		s.mu.Lock()
		e.nextID = s.base + s.n
		s.mu.Unlock()
		for _, sl := range s.sleepers {
			if !sl.Precise() {
				e.coarse = true
			}
			sl.Close()
		}
	}
}

// newSleeper makes a precise timer bound to the run's context (one that
// cannot be had sleeps coarsely, and the run reports its pacer clock as
// go-timer).
func (s *openSchedule) newSleeper() *sleep.Sleeper {
	sl, _ := sleep.New()
	sl.Bind(s.ctx)
	s.sleepers = append(s.sleepers, sl)
	return sl
}

// take returns the next operation for a free worker: one due now (sl
// nil), or one not due yet with the timer to sleep on until its intended
// time (give sl back with woke). ok is false when the phase has nothing
// left for the worker.
func (s *openSchedule) take() (op scheduled, sl *sleep.Sleeper, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		next, pending := s.advanceLocked()
		if s.done {
			for ; s.parked > 0; s.parked-- {
				s.turn <- struct{}{} // to see that nothing is left
			}
		}
		if s.head < len(s.queue) {
			op = s.queue[s.head]
			if s.head++; s.head == len(s.queue) {
				s.queue, s.head = s.queue[:0], 0
			}
			return op, nil, true
		}
		if s.done {
			return op, nil, false
		}
		if !pending {
			continue // caught up only part of the way
		}
		// Over the bound of sleepers, or with the in-flight cap reached (a
		// cap below the worker count), a free worker waits for a turn: the
		// next operation is not due yet, so it is not dropped now.
		if s.ahead >= maxPacedAhead || s.inflight.Load() >= int64(s.e.cfg.MaxInFlight) {
			s.parked++
			s.mu.Unlock()
			<-s.turn
			s.mu.Lock()
			continue
		}
		op, _ = s.admitLocked(next) // under the cap: admitted
		s.ahead++
		if n := len(s.free); n > 0 {
			sl, s.free = s.free[n-1], s.free[:n-1]
		} else {
			sl = s.newSleeper()
		}
		return op, sl, true
	}
}

// woke gives back the timer of an operation taken ahead, once its worker
// woke up to send it. While the workers asleep on operations ahead are
// fewer than half the bound, it gives a parked worker its turn: the
// schedule stays covered when the workers sending are slow to come back
// (and a worker parked at the in-flight cap looks again).
func (s *openSchedule) woke(sl *sleep.Sleeper) {
	s.mu.Lock()
	s.free = append(s.free, sl)
	s.ahead--
	if s.parked > 0 && s.ahead <= maxPacedAhead/2 {
		s.parked--
		s.turn <- struct{}{}
	}
	s.mu.Unlock()
}

// advanceLocked schedules the operations already due (at most maxCatchUp),
// each queued or, over the in-flight cap, dropped, as the scheduling
// goroutine did when behind: the intended time of one found late is when
// the shape made it due, searched between its predecessor's and now. An
// operation is due by now or by the phase's end, whichever comes first (or
// by the moment the run's context ended): operations that fell due while
// every worker was busy are scheduled when one comes back, even after the
// phase's end, as they were queued on time before, so a stall is never
// omitted from the history. It returns the intended time of the next
// operation when that one is not due yet (pending), and sets done when the
// phase has no operation after n.
func (s *openSchedule) advanceLocked() (next time.Duration, pending bool) {
	e := s.e
	for range maxCatchUp {
		if s.done {
			return 0, false
		}
		if (e.cfg.MaxOps > 0 && s.n >= uint64(e.cfg.MaxOps)) || s.base+s.n >= MaxOpsPerRun {
			s.done = true // op ids are 32 bits: MaxOpsPerRun
			return 0, false
		}
		// The pacer sees time since the phase began; intended times are
		// offsets from the run's start.
		end := e.cfg.Duration
		if at := s.endedAt.Load(); at != nil {
			end = min(end, at.Sub(e.began)-e.phaseStart)
		}
		elapsed := min(e.since()-e.phaseStart, end)
		wait, stop := s.p.Pace(elapsed, s.n)
		if stop {
			s.done = true
			return 0, false
		}
		if wait > 0 {
			if elapsed+wait >= end {
				s.done = true
				return 0, false
			}
			return e.phaseStart + elapsed + wait, true
		}
		from := time.Duration(0) // the phase's start, for its first operation
		if s.n > 0 {
			from = s.last - e.phaseStart
		}
		due := dueTime(s.p, s.n, from, elapsed)
		if due >= end {
			s.done = true
			return 0, false
		}
		if op, ok := s.admitLocked(e.phaseStart + due); ok {
			s.queue = append(s.queue, op)
		}
	}
	return 0, false
}

// admitLocked schedules operation n, intended at intended: dropped (false)
// when the operations scheduled and unfinished are at the in-flight cap,
// otherwise given the history's next slot.
func (s *openSchedule) admitLocked(intended time.Duration) (scheduled, bool) {
	e := s.e
	s.last = intended
	id := uint32(s.base + s.n)
	s.n++
	if e.live != nil {
		e.live.scheduled.Add(1)
	}
	if s.inflight.Load() >= int64(e.cfg.MaxInFlight) {
		// Counted, not kept: the op's id is skipped in the history.
		e.drops.add(intended)
		e.live.drop()
		return scheduled{}, false
	}
	s.inflight.Add(1)
	op := scheduled{id: id, slot: e.sent, intended: intended}
	e.sent++
	return op, true
}
