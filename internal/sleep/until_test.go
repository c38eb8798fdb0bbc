package sleep

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Many sleepers in parallel, each sleeping to a sequence of due times
// without reading the timer: every sleep must end at or after its due
// time and none may be lost (the test would time out).
func TestUntilManySleepersInParallel(t *testing.T) {
	const sleepers, rounds = 32, 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	var worst time.Duration
	for range sleepers {
		s, err := New()
		if err != nil {
			t.Skip(err)
		}
		s.Bind(context.Background())
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			for i := range rounds {
				due := time.Now().Add(time.Duration(100+(i%7)*300) * time.Microsecond)
				if !s.Until(due) {
					t.Error("Until on a live context reported false")
					return
				}
				late := time.Since(due)
				if late < 0 {
					t.Errorf("woke %v before its due time", -late)
				}
				mu.Lock()
				worst = max(worst, late)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("worst lateness %v", worst)
}

// A sleep of a minute ends as soon as the bound context ends, and every
// later one returns false at once.
func TestUntilEndsWithTheBoundContext(t *testing.T) {
	for _, precise := range []bool{true, false} {
		s, _ := New()
		if !precise {
			s.Close() // the coarse fallback
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.Bind(ctx)
		time.AfterFunc(20*time.Millisecond, cancel)
		t0 := time.Now()
		if s.Until(t0.Add(time.Minute)) {
			t.Fatalf("precise %v: Until reported true although the context ended first", precise)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Fatalf("precise %v: Until returned after %v, want about 20ms", precise, d)
		}
		t0 = time.Now()
		if s.Until(t0.Add(time.Minute)) || time.Since(t0) > time.Second {
			t.Fatalf("precise %v: a sleep after the context ended did not return false at once", precise)
		}
		s.Close()
	}
}

// A due time already past does not sleep; a sleeper never bound sleeps
// to its due time.
func TestUntilWithoutBindAndInThePast(t *testing.T) {
	s, _ := New()
	defer s.Close()
	if !s.Until(time.Now().Add(-time.Second)) {
		t.Fatal("a due time in the past reported false")
	}
	due := time.Now().Add(3 * time.Millisecond)
	if !s.Until(due) || time.Now().Before(due) {
		t.Fatal("an unbound sleeper did not sleep to its due time")
	}
}

// The pacer sleeps once per operation: a sleep allocates nothing.
func TestUntilAllocatesNothing(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	s.Bind(context.Background())
	s.Until(time.Now().Add(50 * time.Microsecond)) // the raw conn is made once
	if a := testing.AllocsPerRun(50, func() { s.Until(time.Now().Add(50 * time.Microsecond)) }); a != 0 {
		t.Fatalf("%.1f allocations per sleep, want 0", a)
	}
}
