package reports

import (
	"maps"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range and precision. Values are whole microseconds.
const (
	LowestMicros      = 1          // 1 µs
	HighestMicros     = 60_000_000 // 60 s
	SignificantDigits = 3          // relative error at most 0.1%
)

// NewHistogram returns an empty dense histogram for durations in
// microseconds, 1 µs to 60 s at 3 significant digits (about 136 KiB).
// Record into it with RecordDuration, which clamps to that range.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(LowestMicros, HighestMicros, SignificantDigits)
}

// SecondSignificantDigits is the precision of the per-second histograms
// of a Recorder: 3 significant digits (relative error at most 0.1%), the
// same as the overall ones, so that the per-second interval histograms
// written to latency.hlog add up exactly to the overall histogram and
// histograms merged from several load generators give the percentiles one
// histogram over all their values would.
const SecondSignificantDigits = 3

// newSecondHistogram is a per-second histogram: sparse, 3 digits.
func newSecondHistogram() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(LowestMicros, HighestMicros, SecondSignificantDigits)
}

// Micros converts d to microseconds, rounded to the nearest, and clamps the
// result to [LowestMicros, HighestMicros]. clamped is -1 when the value was
// raised to LowestMicros (including negative durations), +1 when it was
// lowered to HighestMicros, 0 otherwise.
func Micros(d time.Duration) (us int64, clamped int) {
	if d > HighestMicros*time.Microsecond {
		return HighestMicros, +1
	}
	us = int64((d + time.Microsecond/2) / time.Microsecond) // no overflow: d <= 60 s
	if us < LowestMicros {
		return LowestMicros, -1
	}
	return us, 0
}

// RecordDuration records d in h (a histogram from NewHistogram) with the
// clamping of Micros, and returns Micros' clamped value so the caller can
// count clamped values.
func RecordDuration(h *hdrhistogram.Histogram, d time.Duration) (clamped int) {
	us, clamped := Micros(d)
	_ = h.RecordValue(us) // in range by construction
	return clamped
}

// quantiler is what both dense and packed histograms offer.
type quantiler interface {
	TotalCount() int64
	ValueAtPercentilesSlice(percentiles []float64) []int64
	Max() int64
}

var reportedPercents = []float64{50, 95, 99, 99.9}

// PercentilesOf returns the p50, p95, p99, p99.9 and max of h, a
// histogram of microseconds, in milliseconds. Each value is the highest
// value equivalent to the recorded one at the histogram's precision (the
// HdrHistogram convention), so it may exceed the exact value by up to 0.1%.
// An empty (or nil) histogram gives all zeros.
func PercentilesOf(h *hdrhistogram.Histogram) Percentiles {
	if h == nil {
		return Percentiles{}
	}
	return percentilesOf(h)
}

func percentilesOf(h quantiler) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	v := h.ValueAtPercentilesSlice(reportedPercents)
	return Percentiles{
		P50:  usToMs(v[0]),
		P95:  usToMs(v[1]),
		P99:  usToMs(v[2]),
		P999: usToMs(v[3]),
		Max:  usToMs(h.Max()),
	}
}

func usToMs(us int64) float64 { return float64(us) / 1000 }

func durToMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// PhaseSpan names a window of the run, as offsets from the run start. A
// span whose End is not after its Start is open-ended: it runs to the end
// of the run.
type PhaseSpan struct {
	Name       string
	Start, End time.Duration
}

func (p PhaseSpan) contains(t time.Duration) bool {
	if t < p.Start {
		return false
	}
	return p.End <= p.Start || t < p.End
}

// Sample is one operation as the runner saw it. Times are offsets from the
// run start on one monotonic clock.
type Sample struct {
	Intended time.Duration // when the pacer scheduled it
	Start    time.Duration // when a worker actually sent it (first attempt)
	End      time.Duration // when its final answer (or error) arrived

	// Outcome: "ACCEPTED", "SOLD_OUT", another business code name,
	// "UNKNOWN" or "ERROR". Empty is counted as "UNSET".
	Outcome string
	// ErrorClass, when not empty, is counted in Totals.Errors (for example
	// "timeout", "EOF", "CROSSSLOT", "TRYAGAIN").
	ErrorClass string
	// Dropped: scheduled but never sent. It counts in Dropped only: not in
	// Ops, outcomes or latency; Start, End and Outcome are ignored.
	Dropped bool
}

// Recorder aggregates the samples of one run: the overall latency and
// service-time histograms, the same per phase, and per second of intended
// time; outcome and error counts; dropped operations and late starts.
//
// A Recorder is NOT goroutine-safe: feed it from one goroutine (during the
// run from the collector of results, or after the run from the history),
// and read it only when no Add is running. Samples may arrive in any order.
//
// Precision and memory: the overall and per-phase histograms are dense
// HdrHistograms (1 µs–60 s, 3 significant digits: values within 0.1%;
// about 136 KiB each, two overall and two per phase). The per-second
// histograms (latency and service time of each second) are sparse
// PackedHistograms over the same range and at the same 3 significant
// digits, memory growing with the number of populated buckets only: about
// 20 KiB per second (both) for 2000 ops/s spread over 0.1–5 ms, about
// 40–60 KiB at 30,000 ops/s (measured by a test), so a 1-hour run at
// 2000 ops/s costs ~75 MiB instead of 3600 × 2 × 136 KiB ≈ 1 GiB. Add
// costs about 0.2 µs (BenchmarkRecorderAdd).
type Recorder struct {
	start time.Time
	spans []PhaseSpan

	lat, svc *hdrhistogram.Histogram
	phases   []*phaseAcc
	secs     []*secondAcc // index = second of intended (or completion) time

	outcomes map[string]int64
	errors   map[string]int64
	ops      int64
	dropped  int64
	clamps   Clamps
	last     time.Duration // latest End (or Intended of a dropped sample)

	lateThreshold time.Duration
	lateStarts    int64
}

type phaseAcc struct {
	lat, svc  *hdrhistogram.Histogram
	ops       int64
	dropped   int64
	completed int64 // End within the span
	outcomes  map[string]int64
}

type secondAcc struct {
	lat, svc  *hdrhistogram.PackedHistogram // nil until the first sent sample
	ops       int64
	dropped   int64
	errors    int64
	completed int64
	outcomes  map[string]int64
}

// NewRecorder returns an empty Recorder for a run that started at start
// (used to fill Report.StartedAt). phases may be empty; phases may
// overlap, and a sample counts in every phase whose span contains its
// intended time.
func NewRecorder(start time.Time, phases []PhaseSpan) *Recorder {
	r := &Recorder{
		start:    start,
		spans:    append([]PhaseSpan(nil), phases...),
		lat:      NewHistogram(),
		svc:      NewHistogram(),
		outcomes: map[string]int64{},
		errors:   map[string]int64{},
	}
	for range r.spans {
		r.phases = append(r.phases, &phaseAcc{
			lat:      NewHistogram(),
			svc:      NewHistogram(),
			outcomes: map[string]int64{},
		})
	}
	return r
}

// SetLateStartThreshold makes the Recorder count as late starts the sent
// operations whose Start − Intended exceeds d (0, the default, disables
// counting and Fill then leaves Totals.LateStarts alone).
func (r *Recorder) SetLateStartThreshold(d time.Duration) { r.lateThreshold = d }

// LateStarts is the number of late starts counted (see
// SetLateStartThreshold).
func (r *Recorder) LateStarts() int64 { return r.lateStarts }

// Start is the run start given to NewRecorder.
func (r *Recorder) Start() time.Time { return r.start }

// Elapsed is the latest completion offset seen (or intended offset, for
// dropped samples): the observed length of the run.
func (r *Recorder) Elapsed() time.Duration { return r.last }

func secondOf(d time.Duration) int {
	if d < 0 {
		return 0
	}
	return int(d / time.Second)
}

func (r *Recorder) second(i int) *secondAcc {
	if i >= len(r.secs) {
		r.secs = append(r.secs, make([]*secondAcc, i+1-len(r.secs))...)
	}
	if r.secs[i] == nil {
		r.secs[i] = &secondAcc{}
	}
	return r.secs[i]
}

// AddDropped records n dropped samples intended at offset intended, as n
// calls of Add with Sample{Intended: intended, Dropped: true} would, in
// time independent of n (a run counts its drops rather than keeping them).
func (r *Recorder) AddDropped(intended time.Duration, n int64) {
	if n <= 0 {
		return
	}
	r.last = max(r.last, intended)
	r.dropped += n
	r.second(secondOf(intended)).dropped += n
	for i, span := range r.spans {
		if span.contains(intended) {
			r.phases[i].dropped += n
		}
	}
}

// Add records one sample: see Sample for what counts where.
func (r *Recorder) Add(s Sample) {
	if s.Dropped {
		r.last = max(r.last, s.Intended)
		r.dropped++
		r.second(secondOf(s.Intended)).dropped++
		for i, span := range r.spans {
			if span.contains(s.Intended) {
				r.phases[i].dropped++
			}
		}
		return
	}

	r.last = max(r.last, s.End)
	outcome := s.Outcome
	if outcome == "" {
		outcome = OutcomeUnset
	}
	latUS, lc := Micros(s.End - s.Intended)
	svcUS, sc := Micros(s.End - s.Start)
	switch lc {
	case -1:
		r.clamps.LatencyLow++
	case +1:
		r.clamps.LatencyHigh++
	}
	switch sc {
	case -1:
		r.clamps.ServiceLow++
	case +1:
		r.clamps.ServiceHigh++
	}

	r.ops++
	r.outcomes[outcome]++
	_ = r.lat.RecordValue(latUS)
	_ = r.svc.RecordValue(svcUS)
	if s.ErrorClass != "" {
		r.errors[s.ErrorClass]++
	}
	if r.lateThreshold > 0 && s.Start-s.Intended > r.lateThreshold {
		r.lateStarts++
	}

	sec := r.second(secondOf(s.Intended))
	if sec.lat == nil {
		sec.lat, sec.svc = newSecondHistogram(), newSecondHistogram()
		sec.outcomes = map[string]int64{}
	}
	sec.ops++
	sec.outcomes[outcome]++
	if outcome == OutcomeUnknown || outcome == OutcomeError {
		sec.errors++
	}
	_ = sec.lat.RecordValue(latUS)
	_ = sec.svc.RecordValue(svcUS)
	r.second(secondOf(s.End)).completed++

	for i, span := range r.spans {
		p := r.phases[i]
		if span.contains(s.End) {
			p.completed++
		}
		if !span.contains(s.Intended) {
			continue
		}
		p.ops++
		p.outcomes[outcome]++
		_ = p.lat.RecordValue(latUS)
		_ = p.svc.RecordValue(svcUS)
	}
}

// Latency is the overall latency histogram (completion − intended, µs).
// It is the Recorder's own histogram, not a copy: do not modify it.
func (r *Recorder) Latency() *hdrhistogram.Histogram { return r.lat }

// Service is the overall service-time histogram (completion − actual
// send, µs). It is the Recorder's own histogram, not a copy.
func (r *Recorder) Service() *hdrhistogram.Histogram { return r.svc }

// Ops is the number of sent (not dropped) samples.
func (r *Recorder) Ops() int64 { return r.ops }

// Dropped is the number of dropped samples.
func (r *Recorder) Dropped() int64 { return r.dropped }

// Outcomes returns a copy of the outcome counts of sent samples.
func (r *Recorder) Outcomes() map[string]int64 { return maps.Clone(r.outcomes) }

// Errors returns a copy of the error-class counts.
func (r *Recorder) Errors() map[string]int64 { return maps.Clone(r.errors) }

// Clamped returns how many recorded durations were clamped to the
// histogram range.
func (r *Recorder) Clamped() Clamps { return r.clamps }

// Phases returns one Phase per PhaseSpan given to NewRecorder, in that
// order. An open-ended span ends at Elapsed(). ThroughputOpsPerS counts the
// operations that completed inside the span.
func (r *Recorder) Phases() []Phase {
	out := make([]Phase, 0, len(r.spans))
	for i, span := range r.spans {
		p := r.phases[i]
		end := span.End
		if end <= span.Start {
			end = max(span.Start, r.last)
		}
		out = append(out, Phase{
			Name:              span.Name,
			StartS:            span.Start.Seconds(),
			EndS:              end.Seconds(),
			Ops:               p.ops,
			LatencyMs:         PercentilesOf(p.lat),
			ServiceTimeMs:     PercentilesOf(p.svc),
			Outcomes:          maps.Clone(p.outcomes),
			Dropped:           p.dropped,
			ThroughputOpsPerS: rate(p.completed, end-span.Start),
		})
	}
	return out
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Timeseries returns one Second for every second from 0 to the last second
// in which a sample was intended or completed, empty seconds included
// (with Ops 0 and zero percentiles). It is empty when nothing was added.
func (r *Recorder) Timeseries() []Second {
	out := make([]Second, len(r.secs))
	for i, sec := range r.secs {
		out[i].TS = int64(i)
		if sec == nil {
			continue
		}
		out[i].Ops = sec.ops
		out[i].Dropped = sec.dropped
		out[i].Errors = sec.errors
		out[i].Completed = sec.completed
		if sec.lat == nil {
			continue
		}
		out[i].Outcomes = maps.Clone(sec.outcomes)
		lat, svc := percentilesOf(sec.lat), percentilesOf(sec.svc)
		out[i].P50Ms, out[i].P95Ms, out[i].P99Ms = lat.P50, lat.P95, lat.P99
		out[i].P999Ms, out[i].MaxMs = lat.P999, lat.Max
		out[i].ServiceP50Ms, out[i].ServiceP99Ms, out[i].ServiceMaxMs = svc.P50, svc.P99, svc.Max
	}
	return out
}

// Fill writes what the Recorder knows into rep: Totals.Ops, Dropped,
// Outcomes, Errors and Clamped (and LateStarts with
// LateStartThresholdMs when a threshold was set), LatencyMs,
// ServiceTimeMs, Phases, Timeseries and ThroughputOpsPerS. It sets
// StartedAt when zero, and DurationS to Elapsed() when not positive;
// throughput is Ops / DurationS. Everything else (wire attempts, stock,
// faults, checks, Passed) is the caller's.
func (r *Recorder) Fill(rep *Report) {
	rep.Totals.Ops = r.ops
	rep.Totals.Dropped = r.dropped
	rep.Totals.Outcomes = r.Outcomes()
	rep.Totals.Errors = r.Errors()
	rep.Totals.Clamped = r.clamps
	if r.lateThreshold > 0 {
		rep.Totals.LateStarts = r.lateStarts
		rep.Totals.LateStartThresholdMs = durToMs(r.lateThreshold)
	}
	rep.LatencyMs = PercentilesOf(r.lat)
	rep.ServiceTimeMs = PercentilesOf(r.svc)
	rep.Phases = r.Phases()
	rep.Timeseries = r.Timeseries()
	if rep.StartedAt.IsZero() {
		rep.StartedAt = r.start
	}
	if rep.DurationS <= 0 {
		rep.DurationS = r.last.Seconds()
	}
	rep.ThroughputOpsPerS = 0
	if rep.DurationS > 0 {
		rep.ThroughputOpsPerS = float64(r.ops) / rep.DurationS
	}
}
