package sleep

import (
	"context"
	"testing"
	"time"
)

func TestForSleepsTheFullDurationWhileTheContextLives(t *testing.T) {
	t0 := time.Now()
	if !For(context.Background(), 30*time.Millisecond) {
		t.Fatal("For on a live context reported false")
	}
	if d := time.Since(t0); d < 30*time.Millisecond {
		t.Fatalf("For returned after %v, want >= 30ms", d)
	}
}

func TestForStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if For(ctx, time.Minute) {
		t.Fatal("For reported true although its context ended first")
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("For returned after %v, want about 20ms", d)
	}
	if For(ctx, 0) {
		t.Fatal("For(0) on an ended context reported true")
	}
}

func TestUntilInThePastReturnsAtOnce(t *testing.T) {
	if !Until(context.Background(), time.Now().Add(-time.Hour)) {
		t.Fatal("Until a past instant on a live context reported false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Until(ctx, time.Now().Add(time.Hour)) {
		t.Fatal("Until on a cancelled context reported true")
	}
}
