package faults

import (
	"context"
	"errors"
	"testing"
	"time"
)

// gatedFault is a fault whose Inject takes as long as the test says: it
// signals begun, then returns when release is closed (nil) or its ctx
// ends (ctx's error). It touches nothing.
type gatedFault struct {
	begun, release chan struct{}
	healed         bool
}

func (f *gatedFault) Kind() string   { return "gated" }
func (f *gatedFault) Target() string { return "nothing" }
func (f *gatedFault) Inject(ctx context.Context, _ *Env) error {
	close(f.begun)
	select {
	case <-f.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (f *gatedFault) Heal(context.Context, *Env) error { f.healed = true; return nil }
func (f *gatedFault) Evidence() map[string]any         { return nil }

func gated(spec string, at time.Duration) (*Planned, *gatedFault) {
	f := &gatedFault{begun: make(chan struct{}), release: make(chan struct{})}
	return &Planned{Spec: spec, Kind: f.Kind(), At: at, Fault: f}, f
}

// The load's end (Stop) cuts the injections not yet begun, but one under
// way runs to its end and is healed: a slow inject (slot-down's AOF
// rewrite before its kill on a busy machine) outlasting the load is a
// fault that happened, not one cut off half way and reported as never
// injected. An interrupted run (Start's ctx cancelled) still cuts it.
func TestTimelineStopLetsAnInjectionUnderWayFinish(t *testing.T) {
	under, uf := gated("under-way", 0)
	pending, pf := gated("pending", time.Hour)
	tl := &Timeline{Env: &Env{Logf: t.Logf}, Items: []*Planned{under, pending}}
	tl.Start(context.Background(), time.Now())
	<-uf.begun
	tl.Stop()
	go func() {
		// The inject ends after the stop, on its own.
		time.Sleep(100 * time.Millisecond)
		close(uf.release)
	}()
	if err := tl.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w := under.Window(); !w.Injected || w.InjectErr != nil || !w.Healed || !uf.healed {
		t.Errorf("the injection under way at Stop: window %+v, healed %v; want injected without error and healed", w, uf.healed)
	}
	if w := pending.Window(); w.Injected {
		t.Errorf("the injection due after Stop ran: window %+v", w)
	}
	select {
	case <-pf.begun:
		t.Error("the pending fault's Inject was called after Stop")
	default:
	}

	cut, cf := gated("interrupted", 0)
	tl = &Timeline{Env: &Env{Logf: t.Logf}, Items: []*Planned{cut}}
	ctx, cancel := context.WithCancel(context.Background())
	tl.Start(ctx, time.Now())
	<-cf.begun
	cancel()
	if err := tl.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w := cut.Window(); !errors.Is(w.InjectErr, context.Canceled) || !w.Healed {
		t.Errorf("an injection under way when the run is interrupted: window %+v; want cut short (context canceled) and healed", w)
	}
}
