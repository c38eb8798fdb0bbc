package reports

import (
	"math"
	"testing"
	"time"
)

// within reports whether got is within rel (relative) of want.
func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

func TestPercentilesOfKnownValues(t *testing.T) {
	h := NewHistogram()
	for us := int64(1); us <= 10000; us++ {
		if err := h.RecordValue(us); err != nil {
			t.Fatal(err)
		}
	}
	p := PercentilesOf(h)
	// 3 significant digits: each value is within 0.1% of the exact one
	// (HDR reports the highest equivalent value, so it can only be above).
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", p.P50, 5.0},
		{"p95", p.P95, 9.5},
		{"p99", p.P99, 9.9},
		{"p99.9", p.P999, 9.99},
		{"max", p.Max, 10.0},
	} {
		if !within(c.got, c.want, 0.001) || c.got < c.want {
			t.Errorf("%s = %v ms, want %v ms (+0.1%%)", c.name, c.got, c.want)
		}
	}
	if !(p.P50 < p.P95 && p.P95 < p.P99 && p.P99 < p.P999 && p.P999 <= p.Max) {
		t.Errorf("percentiles not increasing: %+v", p)
	}
}

func TestPercentilesOfEmpty(t *testing.T) {
	if p := PercentilesOf(NewHistogram()); p != (Percentiles{}) {
		t.Errorf("empty histogram: %+v, want zeros", p)
	}
	if p := PercentilesOf(nil); p != (Percentiles{}) {
		t.Errorf("nil histogram: %+v, want zeros", p)
	}
}

func TestMicrosClamps(t *testing.T) {
	for _, c := range []struct {
		d       time.Duration
		us      int64
		clamped int
	}{
		{1500 * time.Microsecond, 1500, 0},
		{1499 * time.Nanosecond, 1, 0},
		{1501 * time.Nanosecond, 2, 0},
		{0, 1, -1},
		{400 * time.Nanosecond, 1, -1},
		{-5 * time.Millisecond, 1, -1},
		{60 * time.Second, 60_000_000, 0},
		{61 * time.Second, 60_000_000, +1},
		{time.Duration(math.MaxInt64), 60_000_000, +1},
	} {
		us, cl := Micros(c.d)
		if us != c.us || cl != c.clamped {
			t.Errorf("Micros(%v) = %d, %d; want %d, %d", c.d, us, cl, c.us, c.clamped)
		}
	}
	h := NewHistogram()
	if RecordDuration(h, 2*time.Minute) != +1 || RecordDuration(h, -time.Second) != -1 {
		t.Error("RecordDuration did not report clamping")
	}
	if h.TotalCount() != 2 {
		t.Errorf("clamped values must still be recorded: count %d", h.TotalCount())
	}
	if got := PercentilesOf(h).Max; !within(got, 60000, 0.001) {
		t.Errorf("max of a clamped 2-minute value = %v ms, want 60000", got)
	}
}

func ms2d(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func TestRecorderPhasesSecondsAndDropped(t *testing.T) {
	r := NewRecorder(time.Unix(1000, 0), []PhaseSpan{
		{Name: "baseline", Start: 0, End: 3 * time.Second},
		{Name: "fault", Start: 3 * time.Second, End: 8 * time.Second},
		{Name: "after", Start: 8 * time.Second}, // open-ended
	})
	add := func(intendedMs, startMs, endMs float64, outcome string) {
		r.Add(Sample{Intended: ms2d(intendedMs), Start: ms2d(startMs), End: ms2d(endMs), Outcome: outcome})
	}
	add(100, 100, 101, OutcomeAccepted)   // baseline, s0, 1 ms
	add(2999, 2999, 3500, OutcomeSoldOut) // baseline by intended time, completes in s3
	add(3000, 3000, 3002, OutcomeSoldOut) // fault, s3
	add(5500, 5600, 5700, OutcomeUnknown) // fault, s5, latency 200 ms, service 100 ms
	add(9000, 9000, 9010, OutcomeError)   // after, s9
	add(9100, 9100, 9110, "")             // after, s9, UNSET
	r.Add(Sample{Intended: ms2d(4000), Dropped: true, Outcome: OutcomeAccepted, End: ms2d(99999)})
	r.Add(Sample{Intended: ms2d(7999), Dropped: true})

	if r.Ops() != 6 || r.Dropped() != 2 {
		t.Fatalf("ops %d dropped %d, want 6 and 2", r.Ops(), r.Dropped())
	}
	if n := r.Latency().TotalCount(); n != 6 {
		t.Errorf("latency histogram has %d values, want 6 (dropped excluded)", n)
	}
	if n := r.Service().TotalCount(); n != 6 {
		t.Errorf("service histogram has %d values, want 6", n)
	}
	out := r.Outcomes()
	want := map[string]int64{OutcomeAccepted: 1, OutcomeSoldOut: 2, OutcomeUnknown: 1, OutcomeError: 1, OutcomeUnset: 1}
	if len(out) != len(want) {
		t.Errorf("outcomes %v, want %v", out, want)
	}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("outcome %s = %d, want %d", k, out[k], v)
		}
	}

	ph := r.Phases()
	if len(ph) != 3 {
		t.Fatalf("%d phases, want 3", len(ph))
	}
	for i, c := range []struct {
		name         string
		ops, dropped int64
		endS         float64
	}{
		{"baseline", 2, 0, 3},
		{"fault", 2, 2, 8},
		{"after", 2, 0, 9.11}, // open-ended: ends at the last completion
	} {
		p := ph[i]
		if p.Name != c.name || p.Ops != c.ops || p.Dropped != c.dropped || !within(p.EndS, c.endS, 1e-9) {
			t.Errorf("phase %d = %s ops %d dropped %d end %v; want %s %d %d %v",
				i, p.Name, p.Ops, p.Dropped, p.EndS, c.name, c.ops, c.dropped, c.endS)
		}
	}
	if got := ph[0].LatencyMs.Max; !within(got, 501, 0.001) {
		t.Errorf("baseline max latency %v ms, want 501 (sample intended at 2.999 s)", got)
	}
	if got := ph[1].LatencyMs.Max; !within(got, 200, 0.001) {
		t.Errorf("fault max latency %v ms, want 200", got)
	}
	if got := ph[1].ServiceTimeMs.Max; !within(got, 100, 0.001) {
		t.Errorf("fault max service time %v ms, want 100", got)
	}
	if ph[0].Outcomes[OutcomeSoldOut] != 1 || ph[1].Outcomes[OutcomeUnknown] != 1 {
		t.Errorf("phase outcomes: %v / %v", ph[0].Outcomes, ph[1].Outcomes)
	}
	// Throughput counts completions in the window: baseline completed 1
	// (the 2.999 s one completed at 3.5 s, in the fault window).
	if !within(ph[0].ThroughputOpsPerS, 1.0/3, 1e-9) || !within(ph[1].ThroughputOpsPerS, 3.0/5, 1e-9) {
		t.Errorf("phase throughput %v, %v; want 1/3 and 3/5", ph[0].ThroughputOpsPerS, ph[1].ThroughputOpsPerS)
	}

	ts := r.Timeseries()
	if len(ts) != 10 {
		t.Fatalf("timeseries has %d seconds, want 10 (0..9)", len(ts))
	}
	wantOps := []int64{1, 0, 1, 1, 0, 1, 0, 0, 0, 2}
	wantDropped := []int64{0, 0, 0, 0, 1, 0, 0, 1, 0, 0}
	wantCompleted := []int64{1, 0, 0, 2, 0, 1, 0, 0, 0, 2}
	for i, s := range ts {
		if s.TS != int64(i) || s.Ops != wantOps[i] || s.Dropped != wantDropped[i] || s.Completed != wantCompleted[i] {
			t.Errorf("second %d: t_s %d ops %d dropped %d completed %d; want ops %d dropped %d completed %d",
				i, s.TS, s.Ops, s.Dropped, s.Completed, wantOps[i], wantDropped[i], wantCompleted[i])
		}
	}
	if ts[1].Ops != 0 || ts[1].P99Ms != 0 || ts[1].MaxMs != 0 {
		t.Errorf("empty second 1 must be zero: %+v", ts[1])
	}
	if !within(ts[5].P99Ms, 200, 0.01) || !within(ts[5].ServiceP99Ms, 100, 0.01) || ts[5].Errors != 1 {
		t.Errorf("second 5: %+v", ts[5])
	}
	if ts[9].Errors != 1 || ts[9].Outcomes[OutcomeError] != 1 || ts[9].Outcomes[OutcomeUnset] != 1 {
		t.Errorf("second 9: %+v", ts[9])
	}

	var rep Report
	r.Fill(&rep)
	if rep.Totals.Ops != 6 || rep.Totals.Dropped != 2 || len(rep.Phases) != 3 || len(rep.Timeseries) != 10 {
		t.Errorf("Fill: %+v", rep.Totals)
	}
	if !rep.StartedAt.Equal(time.Unix(1000, 0)) || !within(rep.DurationS, 9.11, 1e-9) {
		t.Errorf("Fill: started %v duration %v", rep.StartedAt, rep.DurationS)
	}
	if !within(rep.ThroughputOpsPerS, 6/9.11, 1e-9) {
		t.Errorf("Fill: throughput %v", rep.ThroughputOpsPerS)
	}
}

func TestRecorderLateStartsErrorsClamps(t *testing.T) {
	r := NewRecorder(time.Now(), nil)
	r.SetLateStartThreshold(10 * time.Millisecond)
	r.Add(Sample{Intended: 0, Start: 5 * time.Millisecond, End: 6 * time.Millisecond, Outcome: OutcomeAccepted})
	r.Add(Sample{Intended: 0, Start: 11 * time.Millisecond, End: 12 * time.Millisecond, Outcome: OutcomeUnknown, ErrorClass: "timeout"})
	r.Add(Sample{Intended: time.Second, Start: time.Second, End: 0, Outcome: OutcomeError, ErrorClass: "EOF"}) // end before start
	r.Add(Sample{Intended: 0, Start: 0, End: 70 * time.Second, Outcome: OutcomeUnknown, ErrorClass: "timeout"})
	if r.LateStarts() != 1 {
		t.Errorf("late starts %d, want 1", r.LateStarts())
	}
	if e := r.Errors(); e["timeout"] != 2 || e["EOF"] != 1 {
		t.Errorf("errors %v", e)
	}
	want := Clamps{LatencyLow: 1, LatencyHigh: 1, ServiceLow: 1, ServiceHigh: 1}
	if r.Clamped() != want {
		t.Errorf("clamps %+v, want %+v", r.Clamped(), want)
	}
	rep := Report{DurationS: 10}
	r.Fill(&rep)
	if rep.Totals.LateStarts != 1 || rep.Totals.LateStartThresholdMs != 10 || rep.Totals.Clamped != want {
		t.Errorf("Fill totals %+v", rep.Totals)
	}
	if rep.DurationS != 10 || rep.ThroughputOpsPerS != 0.4 {
		t.Errorf("Fill must keep a set duration: %v s, %v ops/s", rep.DurationS, rep.ThroughputOpsPerS)
	}
	if len(rep.Phases) != 0 {
		t.Errorf("no spans → no phases, got %v", rep.Phases)
	}
}

// The wrk2 coordinated-omission example: an operation is scheduled every
// 1 ms for 10 s; the system stalls for 1 s starting at 5 s. The operation
// sent at 5 s takes the whole second; the 999 scheduled during the stall
// queue in the harness and are sent when it ends. Measured from the actual
// send (service time), the stall almost disappears; measured from the
// intended send (latency), ~10% of operations are slow, so p99 is ~900 ms.
func TestRecorderCoordinatedOmission(t *testing.T) {
	const svc = 500 * time.Microsecond
	stallStart, stallEnd := 5*time.Second, 6*time.Second
	r := NewRecorder(time.Now(), []PhaseSpan{
		{Name: "before", Start: 0, End: stallStart},
		{Name: "stall", Start: stallStart, End: stallEnd},
		{Name: "after", Start: stallEnd, End: 10 * time.Second},
	})
	for i := range 10000 {
		intended := time.Duration(i) * time.Millisecond
		s := Sample{Intended: intended, Start: intended, End: intended + svc, Outcome: OutcomeSoldOut}
		switch {
		case intended == stallStart: // sent on time, answered at the end of the stall
			s.End = stallEnd
		case intended > stallStart && intended < stallEnd: // queued behind it
			s.Start = stallEnd
			s.End = stallEnd + svc
		}
		r.Add(s)
	}
	lat, ser := PercentilesOf(r.Latency()), PercentilesOf(r.Service())
	if lat.P99 < 800 {
		t.Errorf("latency p99 = %v ms, want >= 800 ms (coordinated omission not corrected)", lat.P99)
	}
	if !within(lat.Max, 1000, 0.001) {
		t.Errorf("latency max = %v ms, want ~1000", lat.Max)
	}
	if ser.P99 > 1 || ser.P999 > 1 {
		t.Errorf("service p99 = %v ms, p99.9 = %v ms, want < 1 ms", ser.P99, ser.P999)
	}
	if !within(ser.Max, 1000, 0.001) {
		t.Errorf("service max = %v ms, want ~1000 (the one stalled call)", ser.Max)
	}
	if lat.P50 > 1 {
		t.Errorf("latency p50 = %v ms, want < 1 ms", lat.P50)
	}

	ph := r.Phases()
	if ph[0].LatencyMs.Max > 1 || ph[2].LatencyMs.Max > 1 {
		t.Errorf("before/after phases must be fast: %+v / %+v", ph[0].LatencyMs, ph[2].LatencyMs)
	}
	if ph[1].Ops != 1000 || ph[1].LatencyMs.P50 < 400 || ph[1].ServiceTimeMs.P99 > 1 {
		t.Errorf("stall phase: ops %d latency %+v service %+v", ph[1].Ops, ph[1].LatencyMs, ph[1].ServiceTimeMs)
	}
	// Nothing completes during the stall; everything queued completes at 6 s.
	if ph[1].ThroughputOpsPerS != 0 {
		t.Errorf("stall phase throughput %v, want 0", ph[1].ThroughputOpsPerS)
	}
	ts := r.Timeseries()
	if ts[5].Completed != 0 || ts[6].Completed != 2000 || ts[4].Completed != 1000 {
		t.Errorf("completions per second 4,5,6 = %d,%d,%d; want 1000,0,2000",
			ts[4].Completed, ts[5].Completed, ts[6].Completed)
	}
	if ts[5].P99Ms < 980 || ts[4].P99Ms > 1 || ts[6].P99Ms > 1 {
		t.Errorf("per-second p99: s4 %v s5 %v s6 %v", ts[4].P99Ms, ts[5].P99Ms, ts[6].P99Ms)
	}
}

// Per-second histograms must stay small (the dense ones are ~136 KiB).
func TestRecorderPerSecondMemory(t *testing.T) {
	r := NewRecorder(time.Now(), nil)
	for i := range 60 * 2000 { // 60 s at 2000 ops/s, latencies spread 0.1–5 ms
		intended := time.Duration(i) * 500 * time.Microsecond
		d := 100*time.Microsecond + time.Duration((i*7919)%4900)*time.Microsecond
		r.Add(Sample{Intended: intended, Start: intended, End: intended + d, Outcome: OutcomeSoldOut})
	}
	if len(r.secs) != 61 {
		t.Fatalf("%d seconds", len(r.secs))
	}
	total := 0
	for _, s := range r.secs {
		if s.lat != nil {
			total += s.lat.GetMemorySize() + s.svc.GetMemorySize()
		}
	}
	perSecond := total / len(r.secs)
	if perSecond > 24<<10 {
		t.Errorf("per-second histograms use %d bytes/s, want < 24 KiB", perSecond)
	}
	t.Logf("per-second histograms: %d bytes/s", perSecond)
	ts := r.Timeseries()
	if !within(ts[10].MaxMs, 4.999, 0.01) || ts[10].P50Ms < 2 || ts[10].P50Ms > 3 {
		t.Errorf("second 10 percentiles: %+v", ts[10])
	}
}

func BenchmarkRecorderAdd(b *testing.B) {
	r := NewRecorder(time.Now(), []PhaseSpan{{Name: "a", End: time.Hour}, {Name: "b", Start: time.Hour}})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		intended := time.Duration(i) * 33 * time.Microsecond // 30k ops/s
		d := 100*time.Microsecond + time.Duration((i*7919)%4900)*time.Microsecond
		r.Add(Sample{Intended: intended, Start: intended, End: intended + d, Outcome: OutcomeSoldOut})
	}
}
