package faults

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePipeline counts the calls the fault makes.
type fakePipeline struct {
	mu             sync.Mutex
	running        bool
	stops, starts  int
	reportedStates int
}

func (f *fakePipeline) StopDispatcher() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running {
		f.running = false
		f.stops++
	}
}

func (f *fakePipeline) StartDispatcher() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		f.running = true
		f.starts++
	}
}

func (f *fakePipeline) DispatcherState() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reportedStates++
	return map[string]any{"running": f.running, "send_pending": 7}
}

func TestDispatcherCrashRefusesWithoutPipeline(t *testing.T) {
	p, err := Parse("dispatcher-crash")
	if err != nil {
		t.Fatal(err)
	}
	err = p.Fault.Inject(context.Background(), &Env{})
	if err == nil || !strings.Contains(err.Error(), "Env.Pipeline is nil") {
		t.Fatalf("inject without a pipeline: %v, want a refusal naming Env.Pipeline", err)
	}
	if err := p.Fault.Inject(context.Background(), nil); err == nil {
		t.Fatal("inject with a nil env was accepted")
	}
	if err := p.Fault.Heal(context.Background(), &Env{}); err != nil {
		t.Fatalf("heal without a pipeline must be a no-op: %v", err)
	}
	if _, err := Parse("dispatcher-crash:target=hot-master"); err == nil {
		t.Fatal("unknown parameter accepted")
	}
}

func TestDispatcherCrashStopsAndRestarts(t *testing.T) {
	fp := &fakePipeline{running: true}
	env := &Env{Pipeline: fp, Logf: t.Logf}
	p, err := Parse("dispatcher-crash:at=20ms,for=60ms")
	if err != nil {
		t.Fatal(err)
	}
	tl := &Timeline{Env: env, Items: []*Planned{p}}
	tl.Start(context.Background(), time.Now())
	time.Sleep(50 * time.Millisecond)
	fp.mu.Lock()
	if fp.running || fp.stops != 1 {
		fp.mu.Unlock()
		t.Fatalf("after inject: running=%v stops=%d, want stopped once", fp.running, fp.stops)
	}
	fp.mu.Unlock()
	if err := tl.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Heal is idempotent: a second one does not start a second dispatcher.
	if err := p.Fault.Heal(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if !fp.running || fp.starts != 1 {
		t.Fatalf("after heal: running=%v starts=%d, want restarted once", fp.running, fp.starts)
	}
	w := p.Window()
	// The heal is planned at at+for (80ms) from the start, whenever the
	// injection ran: a starved machine runs the injection late and shortens
	// the window, never the heal's time.
	if !w.Injected || !w.Healed || w.HealedAt < 80*time.Millisecond || w.HealedAt <= w.InjectedAt {
		t.Fatalf("window %+v: want injected, then healed at 80ms (at=20ms + for=60ms) or later", w)
	}
	ev := p.Fault.Evidence()
	if ev["crashes"] != 1 || ev["down_ms"] == nil || ev["at_stop"] == nil || ev["at_restart"] == nil {
		t.Fatalf("evidence %v lacks crashes/down_ms/at_stop/at_restart", ev)
	}
}
