package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"seckill-harness/lua"
)

// The compensation worker (the release stage) can crash and restart, for
// the compensator-crash fault. A crash is armed, not immediate: each worker
// dies at the next crash point of a release it handles — after its fence
// (the reservation is left RELEASE_PENDING) or after its compensate (the
// unit is back but the item was never acknowledged) — so the crash lands
// in the middle of a release. Unfinished items stay on the release queue
// with their journal and are redelivered after the restart: a fenced item
// resumes at compensate, which must answer ALREADY_RELEASED when the unit
// was already given back. Each release happens exactly once (I8, P5) only
// if compensate is idempotent.

// Crash points of a release, taken in turn by successive crashes.
const (
	crashAfterFence = iota
	crashAfterCompensate
)

// secondCrashWait is how long a crash waits, after a first worker died
// mid-release, for another to die at the other crash point.
const secondCrashWait = 200 * time.Millisecond

type compensator struct {
	mu     sync.Mutex
	on     bool
	cancel context.CancelFunc
	wg     *sync.WaitGroup

	armed                                 atomic.Int32 // crashes still to happen at a crash point
	midRelease                            atomic.Int64 // workers that died in the middle of a release
	crashes, restarts                     atomic.Int64
	redoneReleased, redoneAlreadyReleased atomic.Int64 // compensate answers of redelivered items
	redoneOther                           atomic.Int64
}

// startCompensatorLocked starts the release workers (p.run.mu held).
func (p *Pipeline) startCompensatorLocked() {
	c := &p.comp
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on {
		return
	}
	ctx, cancel := context.WithCancel(p.run.ctx)
	wg := &sync.WaitGroup{}
	for i := 0; i < p.cfg.Release.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.releaseWorker(ctx)
		}()
	}
	c.cancel, c.wg, c.on = cancel, wg, true
}

// stopCompensator stops the release workers (those in a release put their
// item back on the queue) and waits for them.
func (p *Pipeline) stopCompensator() {
	c := &p.comp
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return
	}
	c.cancel()
	c.wg.Wait()
	c.armed.Store(0)
	c.on = false
}

// crashNow reports whether the worker at crash point point dies now: a
// crash is armed and this point is the one the next crash takes.
func (p *Pipeline) crashNow(point int) bool {
	c := &p.comp
	for {
		n := c.armed.Load()
		if n <= 0 || int(c.midRelease.Load()%2) != point {
			return false
		}
		if c.armed.CompareAndSwap(n, n-1) {
			c.midRelease.Add(1)
			return true
		}
	}
}

// noteRedoneRelease counts the compensate answer of a redelivered item.
func (p *Pipeline) noteRedoneRelease(code lua.CompensateCode) {
	switch code {
	case lua.CompensateReleased:
		p.comp.redoneReleased.Add(1)
	case lua.CompensateAlreadyReleased:
		p.comp.redoneAlreadyReleased.Add(1)
	default:
		p.comp.redoneOther.Add(1)
	}
}

// CrashCompensator crashes the compensation worker in the middle of
// releases: it arms a crash for every worker, waits up to wait for one of
// them to die at a crash point of a release (and briefly for a second, at
// the other point), then stops the others wherever they are. It returns how many workers died mid-release (0: no
// release was in progress within wait). No-op while crashed, before Start
// or after Stop.
func (p *Pipeline) CrashCompensator(wait time.Duration) int64 {
	if p == nil {
		return 0
	}
	p.run.mu.Lock()
	live := p.run.started && !p.run.stopped
	p.run.mu.Unlock()
	c := &p.comp
	c.mu.Lock()
	on := c.on
	c.mu.Unlock()
	if !live || !on {
		return 0
	}
	before := c.midRelease.Load()
	c.armed.Store(int32(p.cfg.Release.Workers))
	// The first crash within wait; a second one (the other crash point)
	// if it comes soon after.
	deadline := time.Now().Add(wait)
	for c.midRelease.Load() == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if c.midRelease.Load() > before {
		second := time.Now().Add(secondCrashWait)
		for c.midRelease.Load()-before < 2 && time.Now().Before(second) {
			time.Sleep(time.Millisecond)
		}
	}
	p.stopCompensator()
	c.crashes.Add(1)
	return c.midRelease.Load() - before
}

// RestartCompensator starts the release workers again after
// CrashCompensator (a restarted process: the queue redelivers what the
// crashed one left). No-op while they run, before Start or after Stop.
func (p *Pipeline) RestartCompensator() {
	if p == nil {
		return
	}
	p.run.mu.Lock()
	defer p.run.mu.Unlock()
	if !p.run.started || p.run.stopped {
		return
	}
	c := &p.comp
	c.mu.Lock()
	on := c.on
	c.mu.Unlock()
	if on {
		return
	}
	p.startCompensatorLocked()
	c.restarts.Add(1)
}

// CompensatorState is what the compensator-crash fault reports as
// evidence: crashes and restarts, workers that died mid-release, releases
// waiting in the queue, and how the redelivered releases were answered.
func (p *Pipeline) CompensatorState() map[string]any {
	c := &p.comp
	c.mu.Lock()
	on := c.on
	c.mu.Unlock()
	p.rel.mu.Lock()
	queued := len(p.rel.queue)
	p.rel.mu.Unlock()
	return map[string]any{
		"running":                         on,
		"crashes":                         c.crashes.Load(),
		"restarts":                        c.restarts.Load(),
		"died_mid_release":                c.midRelease.Load(),
		"queued_releases":                 queued,
		"redelivered_released":            c.redoneReleased.Load(),
		"redelivered_already_released":    c.redoneAlreadyReleased.Load(),
		"redelivered_other_answers":       c.redoneOther.Load(),
		"releases_waiting_or_in_progress": p.rel.busy.Load(),
	}
}
