package trend

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Options are the detector's parameters. The zero value is not usable;
// start from DefaultOptions.
type Options struct {
	// Alpha is the significance level: a candidate change point is
	// accepted when its permutation p-value is at most Alpha. On a history
	// with no change, about Alpha of the histories get one false change
	// point (docs/TRENDS.md states the measured rate).
	Alpha float64
	// Permutations is the number of random permutations per test; the
	// smallest p-value it can state is 1/(Permutations+1).
	Permutations int
	// MinSize is the fewest nights a segment may have on either side of a
	// change point: a change must last MinSize nights to be found, and a
	// run of fewer outlier nights cannot form a segment of its own.
	MinSize int
	// Seed makes the permutations deterministic: the same series and
	// options give the same change points and p-values.
	Seed uint64
}

// DefaultOptions are the parameters trend uses unless told otherwise.
var DefaultOptions = Options{Alpha: 0.05, Permutations: 199, MinSize: 4, Seed: 1}

// split is one accepted change point of a series of values: the index of
// the first value of the new segment and the test's p-value.
type split struct {
	index  int
	pvalue float64
}

// eDivisive finds change points in x with the E-divisive means method of
// Matteson & James (2014, "A nonparametric approach for multiple change
// point analysis of multivariate data"), exponent 1: repeatedly, the split
// of one current segment that maximises the energy statistic q̂ is
// proposed and tested by permuting the values within each segment (the
// test's statistic is the largest q̂ over all segments, as the proposal's
// is); the first proposal whose p-value exceeds Alpha stops the search.
// It returns the accepted splits sorted by index.
func eDivisive(x []float64, o Options) []split {
	rng := rand.New(rand.NewPCG(o.Seed, uint64(len(x))))
	bounds := []int{0, len(x)} // segment boundaries, sorted
	var found []split
	scratch := make([]float64, len(x))
	for {
		at, q := bestOverSegments(x, bounds, o.MinSize)
		if at < 0 {
			break
		}
		p := permutationPValue(x, bounds, q, o, rng, scratch)
		if p > o.Alpha {
			break
		}
		found = append(found, split{index: at, pvalue: p})
		bounds = append(bounds, at)
		sort.Ints(bounds)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].index < found[j].index })
	refine(x, found, o.MinSize)
	return found
}

// refine moves each split to the best split of the span between its
// neighbours, a few rounds: a split proposed on a span holding two changes
// (a staircase) lands between them, and once the other change is found it
// belongs at the change itself. The p-values stay those of the tests that
// accepted the splits.
func refine(x []float64, found []split, minSize int) {
	for round := 0; round < 3; round++ {
		moved := false
		for i := range found {
			s, e := 0, len(x)
			if i > 0 {
				s = found[i-1].index
			}
			if i+1 < len(found) {
				e = found[i+1].index
			}
			if tau, _ := bestSplit(x[s:e], minSize); tau >= 0 && s+tau != found[i].index {
				found[i].index, moved = s+tau, true
			}
		}
		if !moved {
			return
		}
	}
}

// bestOverSegments is the best split over the segments that bounds
// delimits: its index in x and its q̂ (-1, 0 when no segment can be split
// into two of at least minSize).
func bestOverSegments(x []float64, bounds []int, minSize int) (int, float64) {
	at, best := -1, math.Inf(-1)
	for i := 0; i+1 < len(bounds); i++ {
		s, e := bounds[i], bounds[i+1]
		tau, q := bestSplit(x[s:e], minSize)
		if tau >= 0 && q > best {
			at, best = s+tau, q
		}
	}
	if at < 0 {
		return -1, 0
	}
	return at, best
}

// permutationPValue is (1 + #{permutations whose statistic ≥ q}) /
// (Permutations + 1), each permutation shuffling the values within every
// segment of bounds independently.
func permutationPValue(x []float64, bounds []int, q float64, o Options, rng *rand.Rand, scratch []float64) float64 {
	copy(scratch, x)
	atLeast := 0
	for r := 0; r < o.Permutations; r++ {
		for i := 0; i+1 < len(bounds); i++ {
			seg := scratch[bounds[i]:bounds[i+1]]
			rng.Shuffle(len(seg), func(a, b int) { seg[a], seg[b] = seg[b], seg[a] })
		}
		if _, qp := bestOverSegments(scratch, bounds, o.MinSize); qp >= q {
			atLeast++
		}
	}
	return float64(1+atLeast) / float64(o.Permutations+1)
}

// bestSplit is the split τ of x (left x[:τ], right x[τ:], each at least
// minSize ≥ 2 long) maximising Matteson & James's q̂ with exponent 1,
//
//	q̂(τ) = m·n/(m+n) · ( 2/(m·n)·Σ|l−r| − Σ_{i<k}|lᵢ−lₖ|/C(m,2) − Σ_{j<k}|rⱼ−rₖ|/C(n,2) ),
//
// and that q̂; τ = -1 when x is shorter than 2·minSize. The sums are
// updated as τ moves, so the cost is O(len(x)²).
func bestSplit(x []float64, minSize int) (int, float64) {
	if minSize < 2 {
		minSize = 2
	}
	n := len(x)
	if n < 2*minSize {
		return -1, 0
	}
	// τ = 0: everything on the right.
	var within, between, right float64
	for j := 0; j < n; j++ {
		for k := j + 1; k < n; k++ {
			right += math.Abs(x[j] - x[k])
		}
	}
	bestTau, best := -1, math.Inf(-1)
	for tau := 0; tau < n-minSize; tau++ {
		// Move x[tau] from the right segment to the left one.
		var toLeft, toRight float64
		for i := 0; i < tau; i++ {
			toLeft += math.Abs(x[i] - x[tau])
		}
		for k := tau + 1; k < n; k++ {
			toRight += math.Abs(x[tau] - x[k])
		}
		within += toLeft
		right -= toRight
		between += toRight - toLeft
		m, r := float64(tau+1), float64(n-tau-1)
		if tau+1 < minSize {
			continue
		}
		e := 2*between/(m*r) - within/(m*(m-1)/2) - right/(r*(r-1)/2)
		if q := m * r / (m + r) * e; q > best {
			bestTau, best = tau+1, q
		}
	}
	return bestTau, best
}
