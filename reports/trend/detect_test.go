package trend

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestBestSplitMatchesTheDefinition: the incremental sums of bestSplit give
// the q̂ of the definition, computed naively, at the same τ.
func TestBestSplitMatchesTheDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 50; trial++ {
		n := 8 + rng.IntN(25)
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		minSize := 2 + rng.IntN(3)
		tau, q := bestSplit(x, minSize)
		wantTau, wantQ := -1, math.Inf(-1)
		for c := minSize; c <= n-minSize; c++ {
			if v := naiveQ(x[:c], x[c:]); v > wantQ {
				wantTau, wantQ = c, v
			}
		}
		if tau != wantTau || math.Abs(q-wantQ) > 1e-9*math.Max(1, math.Abs(wantQ)) {
			t.Fatalf("n=%d minSize=%d: bestSplit = (%d, %g), definition = (%d, %g)", n, minSize, tau, q, wantTau, wantQ)
		}
	}
	if tau, _ := bestSplit(make([]float64, 7), 4); tau != -1 {
		t.Errorf("7 values cannot be split into two segments of 4, got τ=%d", tau)
	}
}

func naiveQ(l, r []float64) float64 {
	m, n := float64(len(l)), float64(len(r))
	var b, wl, wr float64
	for _, a := range l {
		for _, c := range r {
			b += math.Abs(a - c)
		}
	}
	for i := range l {
		for k := i + 1; k < len(l); k++ {
			wl += math.Abs(l[i] - l[k])
		}
	}
	for j := range r {
		for k := j + 1; k < len(r); k++ {
			wr += math.Abs(r[j] - r[k])
		}
	}
	return m * n / (m + n) * (2*b/(m*n) - wl/(m*(m-1)/2) - wr/(n*(n-1)/2))
}

// nights is a synthetic history of len(level) nights: night i's value is
// 100·level[i]·exp(σ·N(0,1)) (lognormal noise, as latencies from night to
// night on a shared CI machine), drawn from seed.
func nights(seed uint64, sigma float64, level []float64) Series {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := Series{Scenario: "synthetic", Figure: "reserve.p99", Unit: "ms"}
	t0 := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i, l := range level {
		s.Points = append(s.Points, Point{At: t0.AddDate(0, 0, i), Value: 100 * l * math.Exp(sigma*rng.NormFloat64()), Verdict: "pass"})
	}
	return s
}

// levels is n nights at level 1, multiplied by factor[k] from night at[k] on.
func levels(n int, at []int, factor []float64) []float64 {
	l := make([]float64, n)
	for i := range l {
		l[i] = 1
		for k, a := range at {
			if i >= a {
				l[i] *= factor[k]
			}
		}
	}
	return l
}

// detector is what the rate measurements judge: change point indices.
type detector func(Series) []int

func eDivisiveDetector(s Series) []int {
	var idx []int
	for _, c := range Detect(s, DefaultOptions) {
		idx = append(idx, c.Index)
	}
	return idx
}

// maxSplitDetector is a broken detector: the split maximising q̂, reported
// without the permutation test (what E-divisive is without its test).
func maxSplitDetector(s Series) []int {
	x := make([]float64, len(s.Points))
	for i, p := range s.Points {
		x[i] = p.Value
	}
	if tau, _ := bestSplit(x, DefaultOptions.MinSize); tau >= 0 {
		return []int{tau}
	}
	return nil
}

// thresholdDetector is the single-run threshold the issue says is not
// enough: the last night more than 10% off the mean of the nights before.
func thresholdDetector(s Series) []int {
	n := len(s.Points)
	var sum float64
	for _, p := range s.Points[:n-1] {
		sum += p.Value
	}
	if m := sum / float64(n-1); math.Abs(s.Points[n-1].Value-m) > 0.10*m {
		return []int{n - 1}
	}
	return nil
}

// rates runs d on the histories of seeds 1..seeds and returns the share of
// histories in which every night of want had a change point within ±1
// (found), and the share with a change point near none of them (spurious).
func rates(d detector, seeds int, sigma float64, level []float64, want []int) (found, spurious float64) {
	var nf, ns int
	for seed := 1; seed <= seeds; seed++ {
		got := d(nights(uint64(seed), sigma, level))
		all := true
		for _, w := range want {
			if !near(got, w) {
				all = false
			}
		}
		extra := false
		for _, g := range got {
			if !near(want, g) {
				extra = true
			}
		}
		if all {
			nf++
		}
		if extra {
			ns++
		}
	}
	return float64(nf) / float64(seeds), float64(ns) / float64(seeds)
}

func near(xs []int, v int) bool {
	for _, x := range xs {
		if x >= v-1 && x <= v+1 {
			return true
		}
	}
	return false
}
