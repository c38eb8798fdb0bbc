package trend

import (
	"math"
	"time"
)

// ChangePoint is a night from which a series' level changed significantly.
type ChangePoint struct {
	// Index is the index in the judged Points of the first night of the
	// new level; At and Run are that night's.
	Index int       `json:"index"`
	At    time.Time `json:"at"`
	Run   string    `json:"run,omitempty"`
	// Direction is "up" or "down" (whether that is worse depends on the
	// figure: up is worse for a latency, better for a throughput).
	Direction string `json:"direction"`
	// Before and After are the means of the segments either side of the
	// change (segments as delimited by all the change points found).
	Before float64 `json:"mean_before"`
	After  float64 `json:"mean_after"`
	// Relative is (After−Before)/|Before| (0 when Before is 0: no
	// relative figure; Before and After still say it).
	Relative float64 `json:"relative_change"`
	// PValue is the permutation test's p-value when the change was found.
	PValue float64 `json:"p_value"`
}

// Detect finds the change points of s's values with the E-divisive means
// method and a permutation test (see Options), oldest first. A series
// shorter than 2·MinSize nights has none.
func Detect(s Series, o Options) []ChangePoint {
	x := make([]float64, len(s.Points))
	for i, p := range s.Points {
		x[i] = p.Value
	}
	splits := eDivisive(x, o)
	cps := make([]ChangePoint, 0, len(splits))
	for i, sp := range splits {
		start, end := 0, len(x)
		if i > 0 {
			start = splits[i-1].index
		}
		if i+1 < len(splits) {
			end = splits[i+1].index
		}
		before, after := mean(x[start:sp.index]), mean(x[sp.index:end])
		dir := "up"
		if after < before {
			dir = "down"
		}
		rel := 0.0
		if before != 0 {
			rel = (after - before) / math.Abs(before)
		}
		p := s.Points[sp.index]
		cps = append(cps, ChangePoint{Index: sp.index, At: p.At, Run: p.Run, Direction: dir,
			Before: before, After: after, Relative: rel, PValue: sp.pvalue})
	}
	return cps
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
