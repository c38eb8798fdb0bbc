package benchkit

import (
	"os"
	"testing"
)

// The search lands on the highest rate met within its resolution, tries
// each rate once, and says 0 when the first rate is missed.
func TestHeadroom(t *testing.T) {
	for _, c := range []struct {
		limit, want float64
		tries       int
	}{
		{3000, 3000, 7},   // 1000, 2000, 4000 missed; 3000, 3500, 3250, 3125
		{2999, 2875, 7},   // 1000, 2000, 4000; 3000, 2500, 2750, 2875
		{500, 500, 5},     // 1000 missed: bisection between 0 and 1000
		{50, 0, 5},        // every rate tried missed
		{1e9, 128_000, 8}, // never missed: the last rate tried
		{1000, 1000, 6},   // 2000 missed; 1500, 1250, 1125, 1062.5
	} {
		var tried []float64
		got := Headroom(1000, 128_000, 4, func(r float64) bool { tried = append(tried, r); return r <= c.limit })
		if got != c.want || len(tried) != c.tries {
			t.Errorf("limit %.0f: headroom %.1f after %v; want %.0f after %d tries", c.limit, got, tried, c.want, c.tries)
		}
	}
}

func TestProcCPUTime(t *testing.T) {
	// Burn CPU until getrusage counts 50 ms: /proc's ticks are 10 ms, so a
	// fixed loop that a fast or a starved machine gets through in under
	// one tick reads 0 there.
	sink := 0
	for CPUTime() < 50e6 {
		for i := 0; i < 1e6; i++ {
			sink += i * i
		}
	}
	_ = sink
	if d, ok := ProcCPUTime(os.Getpid()); !ok || d <= 0 || d > CPUTime()+20e6 {
		t.Errorf("ProcCPUTime(self) = %v, %v; CPUTime %v", d, ok, CPUTime())
	}
	if _, ok := ProcCPUTime(1 << 30); ok {
		t.Error("ProcCPUTime of no process: ok")
	}
}
