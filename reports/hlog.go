package reports

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// latency.hlog is a standard HdrHistogram interval log (format 1.3, as the
// Java HistogramLogWriter writes it and hdrhistogram-go's
// HistogramLogReader reads it):
//
//	#[Histogram log format version 1.3]
//	#[...comments: what the values are, the run, its phases...]
//	#[StartTime: 1764409409.437 (seconds since epoch), 2026-11-29T09:43:29.437Z]
//	#[BaseTime: 1764409409.437 (seconds since epoch)]
//	"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//	0.000,1.000,7.487,HISTFAAA...
//	Tag=service,0.000,1.000,7.443,HISTFAAA...
//	Tag=phase-0,0.000,3.001,7.467,HISTFAAA...
//
// Values are whole microseconds (1 µs–60 s, 3 significant digits, the
// precision of a Recorder); Interval_Max is in milliseconds (read it with
// the Java HistogramLogProcessor's -outputValueUnitRatio 1000 to get
// milliseconds everywhere). Timestamps are seconds from the run start
// (BaseTime is the start, so readers see absolute times).
//
// The streams, by tag:
//   - untagged: the latency (completion − intended send) of the operations
//     whose intended send time fell in [t, t+1 s), one interval a second
//     from second 0 to the last, empty seconds included. Their sum is the
//     overall latency histogram, exactly.
//   - "service": the service time (completion − actual send) of the same
//     operations, same intervals.
//   - "phase-N" and "phase-N-service" (N = index in report.json phases):
//     one interval each, over the phase's window, holding exactly the
//     phase's histograms (a phase boundary need not fall on a whole
//     second).
//
// Tools that know nothing of tags (or select none) read the untagged
// per-second latency stream. Several logs, one per load generator, are
// merged by adding the histograms of the same stream and second
// (MergeRuns).

// Hlog tags.
const (
	HlogTagService      = "service"
	hlogPhasePrefix     = "phase-"
	hlogPhaseServiceSfx = "-service"
)

// HlogPhaseTag is the tag of the latency histogram of phase i, and
// HlogPhaseTag(i)+"-service" that of its service time.
func HlogPhaseTag(i int) string { return hlogPhasePrefix + strconv.Itoa(i) }

type hlogEntry struct {
	tag         string
	start, lenS float64 // seconds from the run start
	hist        interface{ Max() int64 }
	encode      func() ([]byte, error)
	order       int // tie-break: seconds before phases
}

// WriteHlog writes h as latency.hlog (see the format above). rep supplies
// the start time (BaseTime) and the comments naming the run and its
// phases; it may be nil. Only h's Seconds and Phases are written: the
// overall histograms are their sums.
func WriteHlog(w io.Writer, rep *Report, h *Histograms) error {
	if h == nil {
		h = &Histograms{}
	}
	bw := bufio.NewWriter(w)
	writeHlogHeader(bw, rep, h)
	for _, e := range hlogEntries(h) {
		payload, err := e.encode()
		if err != nil {
			return fmt.Errorf("reports: hlog: encode %s at %.3f s: %w", orDash(e.tag), e.start, err)
		}
		if e.tag != "" {
			fmt.Fprintf(bw, "Tag=%s,", e.tag)
		}
		fmt.Fprintf(bw, "%.3f,%.3f,%.3f,%s\n", e.start, e.lenS, usToMs(e.hist.Max()), payload)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("reports: hlog: %w", err)
	}
	return nil
}

// writeHlogHeader writes the log's header to bw: format version, the
// comments describing the values, the run (when rep is set) and each
// phase, StartTime and BaseTime (rep's start in milliseconds, 0 without
// one) and the legend. Write errors surface at bw's Flush.
func writeHlogHeader(bw *bufio.Writer, rep *Report, h *Histograms) {
	lw := hdrhistogram.NewHistogramLogWriter(bw)
	var start time.Time
	if rep != nil {
		start = rep.StartedAt
	}
	base := 0.0
	if !start.IsZero() {
		base = float64(start.UnixMilli()) / 1000
	}

	_ = lw.OutputLogFormatVersion() // writes to bw: errors surface at Flush
	_ = lw.OutputComment("[seckill-harness latency log: values in microseconds (1 us - 60 s, " +
		"3 significant digits); Interval_Max in milliseconds]")
	_ = lw.OutputComment("[untagged: latency (completion - intended send) of the operations intended " +
		"in each second; Tag=service: their service time (completion - actual send); " +
		"Tag=phase-N, phase-N-service: phase N over its window]")
	if rep != nil {
		_ = lw.OutputComment(fmt.Sprintf("[run: scenario %s, seed %d, duration %.3f s]",
			hlogComment(rep.Scenario), rep.Seed, rep.DurationS))
	}
	for i, p := range h.Phases {
		_ = lw.OutputComment(fmt.Sprintf("[%s: %s, %.3f - %.3f s]", HlogPhaseTag(i), hlogComment(p.Name), p.StartS, p.EndS))
	}
	// The library writes StartTime and BaseTime in whole seconds; the Java
	// writer keeps milliseconds, as here.
	fmt.Fprintf(bw, "#[StartTime: %.3f (seconds since epoch), %s]\n", base,
		time.UnixMilli(int64(math.Round(base*1000))).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	fmt.Fprintf(bw, "#[BaseTime: %.3f (seconds since epoch)]\n", base)
	_ = lw.OutputLegend()
}

// hlogEntries lists the interval histograms to write, ordered by start:
// per second the latency (untagged) and service time (an empty histogram
// stands in for a missing one), per phase its latency and service time
// when present; at the same start a second comes before a phase.
func hlogEntries(h *Histograms) []hlogEntry {
	var entries []hlogEntry
	empty := newSecondHistogram()
	for t, s := range h.Seconds {
		lat, svc := s.Latency, s.Service
		if lat == nil {
			lat = empty
		}
		if svc == nil {
			svc = empty
		}
		entries = append(entries,
			hlogEntry{tag: "", start: float64(t), lenS: 1, hist: lat, encode: lat.Encode},
			hlogEntry{tag: HlogTagService, start: float64(t), lenS: 1, hist: svc, encode: svc.Encode})
	}
	for i, p := range h.Phases {
		for _, x := range []struct {
			tag string
			h   *hdrhistogram.Histogram
		}{{HlogPhaseTag(i), p.Latency}, {HlogPhaseTag(i) + hlogPhaseServiceSfx, p.Service}} {
			if x.h == nil {
				continue
			}
			entries = append(entries, hlogEntry{tag: x.tag, start: p.StartS, lenS: max(p.EndS-p.StartS, 0),
				hist: x.h, encode: x.h.EncodeV2, order: 1})
		}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.start != b.start {
			return a.start < b.start
		}
		return a.order < b.order
	})
	return entries
}

// hlogComment keeps a free-text value on one comment line.
func hlogComment(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == ']' {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	return s
}

// ReadHlog reads an interval log written by WriteHlog (or any interval
// log of microsecond histograms: the untagged intervals are taken as
// latency, "service" as service time) into Histograms: Seconds from the
// per-second intervals (each interval goes to the second its start falls
// in, counted from the earliest interval of the log), Phases from the
// phase-N tags (named "phase-N"; the caller may rename them from
// report.json), Latency and Service as the sums of the seconds. Tags it
// does not know are skipped.
func ReadHlog(r io.Reader) (*Histograms, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reports: hlog: %w", err)
	}
	lr := hdrhistogram.NewHistogramLogReader(bytes.NewReader(data))
	h := &Histograms{}
	first := math.NaN()
	n := 0
	for {
		d, err := lr.NextIntervalHistogram()
		if err != nil {
			return nil, fmt.Errorf("reports: hlog: interval %d: %w", n+1, err)
		}
		if d == nil {
			break
		}
		n++
		startS := float64(d.StartTimeMs()) / 1000
		if math.IsNaN(first) {
			first = startS
		}
		rel := startS - first
		tag := d.Tag()
		switch {
		case tag == "" || tag == HlogTagService:
			t := int(math.Round(rel))
			if t < 0 {
				return nil, fmt.Errorf("reports: hlog: interval %d starts %.3f s before the first", n, -rel)
			}
			for len(h.Seconds) <= t {
				h.Seconds = append(h.Seconds, SecondHistograms{})
			}
			s := &h.Seconds[t]
			if tag == "" {
				s.Latency = packedOf(s.Latency, d)
			} else {
				s.Service = packedOf(s.Service, d)
			}
		case strings.HasPrefix(tag, hlogPhasePrefix):
			rest := strings.TrimPrefix(tag, hlogPhasePrefix)
			svc := strings.HasSuffix(rest, hlogPhaseServiceSfx)
			rest = strings.TrimSuffix(rest, hlogPhaseServiceSfx)
			i, err := strconv.Atoi(rest)
			if err != nil || i < 0 || i > 10000 {
				continue
			}
			for len(h.Phases) <= i {
				h.Phases = append(h.Phases, PhaseHistograms{Name: HlogPhaseTag(len(h.Phases))})
			}
			p := &h.Phases[i]
			p.StartS = math.Round(rel*1000) / 1000
			p.EndS = p.StartS + float64(d.EndTimeMs()-d.StartTimeMs())/1000
			if svc {
				mergeDense(&p.Service, d)
			} else {
				mergeDense(&p.Latency, d)
			}
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("reports: hlog: no interval histograms")
	}
	h.Latency, h.Service = NewHistogram(), NewHistogram()
	for _, s := range h.Seconds {
		if s.Latency != nil {
			s.Latency.MergeInto(h.Latency)
		}
		if s.Service != nil {
			s.Service.MergeInto(h.Service)
		}
	}
	return h, nil
}

// packedOf adds the dense d into p (created when nil); an empty d leaves
// a nil p nil.
func packedOf(p *hdrhistogram.PackedHistogram, d *hdrhistogram.Histogram) *hdrhistogram.PackedHistogram {
	if d.TotalCount() == 0 {
		return p
	}
	if p == nil {
		p = newSecondHistogram()
	}
	p.MergeFrom(d)
	return p
}
