package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"seckill-harness/internal/sleep"
)

// Timeline runs planned faults against env at offsets from began.
type Timeline struct {
	Env   *Env
	Items []*Planned

	began time.Time
	wg    sync.WaitGroup

	stopMu sync.Mutex
	stop   context.CancelFunc // ends the waits of Start's goroutines
}

// Start schedules every item relative to began (the load's offset 0) and
// returns at once. Each item is injected at At and healed at At+For (For 0:
// left for HealAll). Cancelling ctx (an interrupted run) stops pending
// injections and cuts one under way short; Stop (the load's end) stops
// only the pending ones.
func (t *Timeline) Start(ctx context.Context, began time.Time) {
	t.began = began
	wctx, stop := context.WithCancel(ctx)
	t.stopMu.Lock()
	t.stop = stop
	t.stopMu.Unlock()
	for _, p := range t.Items {
		t.wg.Add(1)
		go func(p *Planned) {
			defer t.wg.Done()
			if !sleep.Until(wctx, began.Add(p.At)) {
				return
			}
			t.inject(ctx, p)
			if p.For > 0 && sleep.Until(wctx, began.Add(p.At+p.For)) {
				t.heal(context.WithoutCancel(ctx), p)
			}
		}(p)
	}
}

// Stop ends the schedule: no injection or timed heal that has not begun
// will, while an injection under way runs to its end (bounded by the
// fault's own waits) so that HealAll, which waits for it, heals a fault
// that really happened rather than one cut off half way (slot-down's
// AOF rewrite before its kill may outlast a short load on a busy
// machine). Safe before Start and more than once.
func (t *Timeline) Stop() {
	t.stopMu.Lock()
	defer t.stopMu.Unlock()
	if t.stop != nil {
		t.stop()
	}
}

func (t *Timeline) inject(ctx context.Context, p *Planned) {
	p.mu.Lock()
	p.injected, p.injectedAt = true, time.Since(t.began)
	p.mu.Unlock()
	t.Env.logf("fault %s: inject at %.2fs", p.Spec, time.Since(t.began).Seconds())
	err := p.Fault.Inject(ctx, t.Env)
	if err != nil {
		t.Env.warnf("fault %s: inject failed: %v", p.Spec, err)
	}
	p.mu.Lock()
	p.injectErr = err
	p.injectDone = time.Since(t.began)
	p.mu.Unlock()
}

func (t *Timeline) heal(ctx context.Context, p *Planned) {
	p.mu.Lock()
	if p.healed {
		p.mu.Unlock()
		return
	}
	p.healFrom = time.Since(t.began)
	p.mu.Unlock()
	err := p.Fault.Heal(ctx, t.Env)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.healErr = err
	if err == nil {
		p.healed, p.healedAt = true, time.Since(t.began)
		t.Env.logf("fault %s: healed at %.2fs", p.Spec, p.healedAt.Seconds())
	} else {
		t.Env.warnf("fault %s: heal failed: %v", p.Spec, err)
	}
}

// HealAll waits for the scheduled goroutines (Stop first, or cancel their
// ctx, to cut pending injections short) and heals every item that is not healed yet, in
// reverse order. Safe to call more than once; returns the heal errors.
func (t *Timeline) HealAll(ctx context.Context) error {
	t.wg.Wait()
	var errs []string
	for i := len(t.Items) - 1; i >= 0; i-- {
		p := t.Items[i]
		t.heal(ctx, p)
		if w := p.Window(); w.HealErr != nil && !w.Healed {
			errs = append(errs, fmt.Sprintf("%s: %v", p.Spec, w.HealErr))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("faults not healed: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Active lists the faults in force now (injected, effect not ended), by their spec text.
func (t *Timeline) Active() []string {
	var out []string
	for _, p := range t.Items {
		w := p.Window()
		if !w.Injected {
			continue
		}
		if _, ended := p.EffectEnd(); !ended {
			out = append(out, p.Kind)
		}
	}
	return out
}

// ExpiryDrifts collects the expiry drifts of every item whose fault is an
// ExpiryDrifter, in item order (a slot moved twice appears twice: its keys
// may have drifted twice).
func (t *Timeline) ExpiryDrifts() []ExpiryDrift {
	var out []ExpiryDrift
	for _, p := range t.Items {
		if d, ok := p.Fault.(ExpiryDrifter); ok {
			out = append(out, d.ExpiryDrifts()...)
		}
	}
	return out
}
