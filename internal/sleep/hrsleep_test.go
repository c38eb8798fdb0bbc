package sleep

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func TestForSleepsAtLeastTheDurationOnThePreciseTimer(t *testing.T) {
	s, err := New()
	if runtime.GOOS == "linux" && err != nil {
		t.Fatalf("New on Linux: %v", err)
	}
	defer s.Close()
	if runtime.GOOS == "linux" && !s.Precise() {
		t.Fatal("a Sleeper made without error is not precise")
	}
	// Short (precise part only) and long (coarse, then precise) sleeps.
	for _, d := range []time.Duration{300 * time.Microsecond, 5 * time.Millisecond, 40 * time.Millisecond} {
		t0 := time.Now()
		if !s.For(context.Background(), d) {
			t.Fatalf("For(%v) on a live context reported false", d)
		}
		if got := time.Since(t0); got < d {
			t.Fatalf("For(%v) returned after %v", d, got)
		}
	}
	if !s.For(context.Background(), 0) || !s.For(context.Background(), -time.Second) {
		t.Fatal("a non-positive sleep on a live context reported false")
	}
}

func TestSleeperStopsWhenTheContextEnds(t *testing.T) {
	s, _ := New()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if s.For(ctx, time.Minute) {
		t.Fatal("For reported true although its context ended first")
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("For returned after %v, want about 20ms", d)
	}
	if s.For(ctx, 0) {
		t.Fatal("For(0) on an ended context reported true")
	}
}

func TestAClosedSleeperStillSleepsCoarsely(t *testing.T) {
	s, _ := New()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if s.Precise() {
		t.Fatal("a closed Sleeper reports precise")
	}
	t0 := time.Now()
	if !s.For(context.Background(), 3*time.Millisecond) || time.Since(t0) < 3*time.Millisecond {
		t.Fatal("a closed Sleeper did not sleep its duration")
	}
}

// The precise path reads the timer's expiry count: a timer that was never
// armed would block forever, one armed twice would be read once. Many
// short sleeps in a row each end (the test would hang otherwise, and the
// total is at least their sum).
func TestManyShortSleepsInARow(t *testing.T) {
	s, _ := New()
	defer s.Close()
	t0 := time.Now()
	for i := 0; i < 200; i++ {
		if !s.For(context.Background(), 100*time.Microsecond) {
			t.Fatal("short sleep reported false")
		}
	}
	if d := time.Since(t0); d < 20*time.Millisecond {
		t.Fatalf("200 sleeps of 100µs took %v", d)
	}
}
