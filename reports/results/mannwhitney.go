package results

import (
	"math"
	"sort"
)

// MannWhitneyGreater is the one-sided Mann-Whitney U test that x tends to
// be greater than y: it returns U of x and the p-value (normal
// approximation with the tie correction and a continuity correction;
// fine from about 8 values a side). p is 1 when either side is empty or
// every value is tied.
func MannWhitneyGreater(x, y []float64) (u, p float64) {
	nx, ny := float64(len(x)), float64(len(y))
	if nx == 0 || ny == 0 {
		return 0, 1
	}
	type v struct {
		val   float64
		fromX bool
	}
	all := make([]v, 0, len(x)+len(y))
	for _, a := range x {
		all = append(all, v{a, true})
	}
	for _, b := range y {
		all = append(all, v{b, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].val < all[j].val })
	var rx, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].val == all[i].val {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].fromX {
				rx += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	u = rx - nx*(nx+1)/2
	n := nx + ny
	variance := nx * ny / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return u, 1
	}
	z := (u - nx*ny/2 - 0.5) / math.Sqrt(variance)
	return u, 0.5 * math.Erfc(z/math.Sqrt2)
}

// median of xs (NaN when empty); xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
