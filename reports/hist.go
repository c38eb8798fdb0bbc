package reports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms are the latency distributions of a run (or of several runs
// merged): what latency.hlog stores and what the HTML report plots. All
// histograms record whole microseconds, 1 µs–60 s, 3 significant digits.
type Histograms struct {
	// Latency and Service are the overall distributions (completion −
	// intended send, completion − actual send). Service is nil when
	// unknown (a report re-rendered from latency.hgrm only).
	Latency, Service *hdrhistogram.Histogram
	// Phases are in the order of Report.Phases.
	Phases []PhaseHistograms
	// Seconds has one entry per second of intended send time, index =
	// Second.TS; an entry without samples has nil histograms.
	Seconds []SecondHistograms
}

// PhaseHistograms are the distributions of one phase.
type PhaseHistograms struct {
	Name             string
	StartS, EndS     float64
	Latency, Service *hdrhistogram.Histogram
}

// SecondHistograms are the distributions of one second (sparse).
type SecondHistograms struct {
	Latency, Service *hdrhistogram.PackedHistogram
}

// Histograms returns the Recorder's histograms: overall, per phase (named
// and timed as Phases() reports them) and per second. They are the
// Recorder's own histograms, not copies: do not modify them, and do not
// Add to the Recorder while they are in use.
func (r *Recorder) Histograms() *Histograms {
	h := &Histograms{Latency: r.lat, Service: r.svc}
	for i, p := range r.Phases() {
		h.Phases = append(h.Phases, PhaseHistograms{Name: p.Name, StartS: p.StartS, EndS: p.EndS,
			Latency: r.phases[i].lat, Service: r.phases[i].svc})
	}
	h.Seconds = make([]SecondHistograms, len(r.secs))
	for i, s := range r.secs {
		if s != nil && s.lat != nil {
			h.Seconds[i] = SecondHistograms{Latency: s.lat, Service: s.svc}
		}
	}
	return h
}

// newSecondPair returns an empty pair of per-second histograms.
func newSecondPair() SecondHistograms {
	return SecondHistograms{Latency: newSecondHistogram(), Service: newSecondHistogram()}
}

// mergeDense adds src into *dst, creating *dst when nil. It returns the
// count dst could not hold (0 for histograms of this package).
func mergeDense(dst **hdrhistogram.Histogram, src *hdrhistogram.Histogram) int64 {
	if src == nil {
		return 0
	}
	if *dst == nil {
		*dst = NewHistogram()
	}
	return (*dst).Merge(src)
}

func mergePacked(dst **hdrhistogram.PackedHistogram, src *hdrhistogram.PackedHistogram) int64 {
	if src == nil {
		return 0
	}
	if *dst == nil {
		*dst = newSecondHistogram()
	}
	return (*dst).Merge(src)
}

// PercentilePoint is one point of a percentile distribution: the value at
// or below which Percentile % of the values fall.
type PercentilePoint struct {
	Percentile float64 // 0–100
	ValueMs    float64
	Count      int64 // values at or below ValueMs
}

// Inverse is 1/(1−p), the x coordinate of the HdrHistogram percentile plot
// ("1 in N"); +Inf at 100 %.
func (p PercentilePoint) Inverse() float64 {
	if p.Percentile >= 100 {
		return math.Inf(1)
	}
	return 1 / (1 - p.Percentile/100)
}

// DistributionOf returns the percentile distribution of h, a histogram of
// microseconds, as WriteHGRM lists it (HGRMTicksPerHalfDistance ticks per
// halving of 1−p, the last point at 100 %). Nil or empty gives nil.
func DistributionOf(h *hdrhistogram.Histogram) []PercentilePoint {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	brackets := h.CumulativeDistributionWithTicks(HGRMTicksPerHalfDistance)
	out := make([]PercentilePoint, 0, len(brackets))
	for _, b := range brackets {
		out = append(out, PercentilePoint{Percentile: b.Quantile, ValueMs: usToMs(b.ValueAt), Count: b.Count})
	}
	return out
}

// ReadHGRM reads a percentile distribution written by WriteHGRM (values in
// milliseconds) and rebuilds a histogram of microseconds from it: the
// counts between two listed percentiles are recorded at the upper one's
// value. Listed again with WriteHGRM it gives the same percentile lines,
// total count and max as the original (the mean and standard deviation
// differ: values between two listed percentiles moved up to the upper
// one). It is for re-rendering a run saved without latency.hlog.
func ReadHGRM(r io.Reader) (*hdrhistogram.Histogram, error) {
	h := NewHistogram()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var prev int64
	lines := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, err1 := strconv.ParseFloat(f[0], 64)
		count, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue // the header line
		}
		lines++
		if count > prev {
			us := min(max(int64(math.Round(v*1000)), LowestMicros), HighestMicros)
			if err := h.RecordValues(us, count-prev); err != nil {
				return nil, fmt.Errorf("reports: hgrm: %w", err)
			}
			prev = count
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, errors.New("reports: hgrm: a line longer than 1 MiB: not a latency.hgrm the harness wrote; give the run directory of a finished run")
	} else if err != nil {
		return nil, fmt.Errorf("reports: hgrm: %w", err)
	}
	if lines == 0 {
		return nil, fmt.Errorf("reports: hgrm: no percentile lines")
	}
	return h, nil
}
