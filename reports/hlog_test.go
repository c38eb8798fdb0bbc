package reports

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

var checkPercentiles = []float64{0, 1, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 99.999, 100}

type valueAtPercentiler interface {
	TotalCount() int64
	Max() int64
	ValueAtPercentile(float64) int64
}

// sameDistribution fails t unless a and b have the same count, max and
// values at every checkPercentiles percentile.
func sameDistribution(t *testing.T, what string, a, b valueAtPercentiler) {
	t.Helper()
	if a.TotalCount() != b.TotalCount() || a.Max() != b.Max() {
		t.Errorf("%s: count %d max %d, want count %d max %d", what, a.TotalCount(), a.Max(), b.TotalCount(), b.Max())
		return
	}
	for _, p := range checkPercentiles {
		if x, y := a.ValueAtPercentile(p), b.ValueAtPercentile(p); x != y {
			t.Errorf("%s: p%g = %d µs, want %d µs", what, p, x, y)
		}
	}
}

func TestRecorderSecondsAddUpToTheWholeRun(t *testing.T) {
	rep, rec := syntheticFailoverRun()
	h := rec.Histograms()
	sum := NewHistogram()
	for _, s := range h.Seconds {
		if s.Latency != nil {
			s.Latency.MergeInto(sum)
		}
	}
	sameDistribution(t, "sum of seconds", sum, rec.Latency())
	if len(h.Phases) != 3 || h.Phases[1].Name != "during failover" || h.Phases[1].EndS != 7.5 {
		t.Fatalf("phases %+v", h.Phases)
	}
	if PercentilesOf(h.Phases[1].Latency) != rep.Phases[1].LatencyMs {
		t.Errorf("phase histograms differ from the report's phase")
	}
	// The stall shows: second 5 waits ~1-2 s, second 1 does not.
	ts := rep.Timeseries
	if ts[5].P50Ms < 500 || ts[1].P99Ms > 20 {
		t.Errorf("synthetic failover has no stall: s1 %+v s5 %+v", ts[1], ts[5])
	}
}

func TestHlogRoundTrip(t *testing.T) {
	rep, rec := syntheticFailoverRun()
	want := rec.Histograms()
	var buf bytes.Buffer
	if err := WriteHlog(&buf, rep, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHlog(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Seconds) != len(want.Seconds) {
		t.Fatalf("%d seconds, want %d", len(got.Seconds), len(want.Seconds))
	}
	for i := range want.Seconds {
		w, g := want.Seconds[i], got.Seconds[i]
		if w.Latency == nil {
			if g.Latency != nil || g.Service != nil {
				t.Errorf("second %d: want empty", i)
			}
			continue
		}
		sameDistribution(t, fmt.Sprintf("second %d latency", i), g.Latency, w.Latency)
		sameDistribution(t, fmt.Sprintf("second %d service", i), g.Service, w.Service)
	}
	sameDistribution(t, "overall latency", got.Latency, rec.Latency())
	sameDistribution(t, "overall service", got.Service, rec.Service())
	if len(got.Phases) != len(want.Phases) {
		t.Fatalf("%d phases, want %d", len(got.Phases), len(want.Phases))
	}
	for i, p := range want.Phases {
		g := got.Phases[i]
		sameDistribution(t, "phase "+p.Name, g.Latency, p.Latency)
		sameDistribution(t, "phase "+p.Name+" service", g.Service, p.Service)
		if g.Name != HlogPhaseTag(i) || g.StartS != p.StartS || !within(g.EndS, p.EndS, 0.002) {
			t.Errorf("phase %d read as %q %.3f-%.3f, want %.3f-%.3f", i, g.Name, g.StartS, g.EndS, p.StartS, p.EndS)
		}
	}
}

// The file is a standard interval log: header lines, a legend, one
// untagged and one "service" interval a second, one per phase and kind;
// Interval_Max is the interval's max in ms; hdrhistogram-go's own reader
// reads it, tags and absolute times included.
func TestHlogFormat(t *testing.T) {
	rep, rec := syntheticFailoverRun()
	var buf bytes.Buffer
	if err := WriteHlog(&buf, rep, rec.Histograms()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if lines[0] != "#[Histogram log format version 1.3]" {
		t.Errorf("first line %q", lines[0])
	}
	base := fmt.Sprintf("%.3f", float64(rep.StartedAt.UnixMilli())/1000)
	for _, want := range []string{
		"#[StartTime: " + base + " (seconds since epoch), 2026-11-29T10:00:00.000Z]",
		"#[BaseTime: " + base + " (seconds since epoch)]",
		`"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`,
		"#[phase-1: during failover, 4.000 - 7.500 s]",
	} {
		if !strings.Contains(buf.String(), want+"\n") {
			t.Errorf("hlog lacks line %q", want)
		}
	}
	counts := map[string]int{}
	ts := rep.Timeseries
	for _, l := range lines {
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, `"`) {
			continue
		}
		tag := ""
		if strings.HasPrefix(l, "Tag=") {
			tag, l, _ = strings.Cut(strings.TrimPrefix(l, "Tag="), ",")
		}
		counts[tag]++
		f := strings.Split(l, ",")
		if len(f) != 4 || !strings.HasPrefix(f[3], "HISTF") {
			t.Fatalf("interval line %q", l)
		}
		if tag == "" {
			start, _ := strconv.ParseFloat(f[0], 64)
			maxMs, _ := strconv.ParseFloat(f[2], 64)
			if sec := ts[int(start)]; f[1] != "1.000" || (sec.Ops > 0 && !within(maxMs, sec.MaxMs, 0.0011)) {
				t.Errorf("second %s: length %s max %s ms, want 1.000 and %.3f", f[0], f[1], f[2], sec.MaxMs)
			}
		}
	}
	if counts[""] != len(ts) || counts["service"] != len(ts) || counts["phase-0"] != 1 ||
		counts["phase-2-service"] != 1 || len(counts) != 2+2*len(rep.Phases) {
		t.Errorf("interval counts by tag: %v (%d seconds)", counts, len(ts))
	}

	lr := hdrhistogram.NewHistogramLogReader(bytes.NewReader(buf.Bytes()))
	n := 0
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		if n == 0 && (h.Tag() != "" || h.StartTimeMs() != rep.StartedAt.UnixMilli() || h.EndTimeMs()-h.StartTimeMs() != 1000) {
			t.Errorf("first interval: tag %q, %d-%d ms", h.Tag(), h.StartTimeMs(), h.EndTimeMs())
		}
		n++
	}
	if n != 2*len(ts)+2*len(rep.Phases) {
		t.Errorf("library reader read %d intervals", n)
	}
}

func TestReadHlogErrors(t *testing.T) {
	if _, err := ReadHlog(strings.NewReader("#[Histogram log format version 1.3]\n")); err == nil {
		t.Error("a log without intervals must be an error")
	}
	if _, err := ReadHlog(strings.NewReader("0.000,1.000,1.0,HISTFAAAnotbase64!!\n")); err == nil {
		t.Error("a corrupt payload must be an error")
	}
}

func TestReadHGRMRebuildsTheListedPercentiles(t *testing.T) {
	_, rec := syntheticFailoverRun()
	var buf bytes.Buffer
	if err := WriteHGRM(&buf, rec.Latency()); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHGRM(&buf)
	if err != nil {
		t.Fatal(err)
	}
	orig := rec.Latency()
	if h.TotalCount() != orig.TotalCount() || h.Max() != orig.Max() {
		t.Errorf("count %d max %d, want %d %d", h.TotalCount(), h.Max(), orig.TotalCount(), orig.Max())
	}
	// Listed again, the rebuilt histogram gives the same percentile lines
	// (the Mean/StdDeviation footer differs: values between the listed
	// percentiles moved up).
	var again bytes.Buffer
	if err := WriteHGRM(&again, h); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	_ = WriteHGRM(&want, orig)
	body := func(s string) string { return s[:strings.Index(s, "#[Mean")] }
	if body(again.String()) != body(want.String()) {
		t.Errorf("rebuilt listing differs:\n%s\nwant\n%s", body(again.String()), body(want.String()))
	}
	if _, err := ReadHGRM(strings.NewReader("nothing here\n")); err == nil {
		t.Error("no percentile lines must be an error")
	}
}

func TestRecorderHistogramsEmpty(t *testing.T) {
	rec := NewRecorder(time.Time{}, nil)
	h := rec.Histograms()
	if len(h.Seconds) != 0 || len(h.Phases) != 0 || h.Latency.TotalCount() != 0 {
		t.Errorf("%+v", h)
	}
	var buf bytes.Buffer
	if err := WriteHlog(&buf, nil, h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "#[BaseTime: 0.000") {
		t.Errorf("%s", buf.String())
	}
}
