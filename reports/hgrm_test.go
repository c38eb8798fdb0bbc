package reports

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

var (
	hgrmLine   = regexp.MustCompile(`^\s*(\d+\.\d{3})\s+(\d\.\d+)\s+(\d+)\s+(\d+\.\d{2}|inf)$`)
	hgrmMean   = regexp.MustCompile(`^#\[Mean    =\s+(\d+\.\d{3}), StdDeviation   =\s+(\d+\.\d{3})\]$`)
	hgrmMax    = regexp.MustCompile(`^#\[Max     =\s+(\d+\.\d{3}), Total count    =\s+(\d+)\]$`)
	hgrmBucket = regexp.MustCompile(`^#\[Buckets =\s+(\d+), SubBuckets     =\s+(\d+)\]$`)
)

type hgrm struct {
	values, percentiles []float64
	counts              []int64
	mean, max           float64
	total               int64
}

// parseHGRM parses the standard .hgrm layout strictly.
func parseHGRM(t *testing.T, s string) hgrm {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 6 {
		t.Fatalf("hgrm too short:\n%s", s)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "Value Percentile TotalCount 1/(1-Percentile)" || lines[1] != "" {
		t.Fatalf("bad hgrm header %q / %q", lines[0], lines[1])
	}
	var h hgrm
	body, footer := lines[2:len(lines)-3], lines[len(lines)-3:]
	for _, l := range body {
		m := hgrmLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("bad hgrm line %q", l)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		p, _ := strconv.ParseFloat(m[2], 64)
		c, _ := strconv.ParseInt(m[3], 10, 64)
		h.values, h.percentiles, h.counts = append(h.values, v), append(h.percentiles, p), append(h.counts, c)
	}
	m := hgrmMean.FindStringSubmatch(footer[0])
	x := hgrmMax.FindStringSubmatch(footer[1])
	if m == nil || x == nil || !hgrmBucket.MatchString(footer[2]) {
		t.Fatalf("bad hgrm footer:\n%s", strings.Join(footer, "\n"))
	}
	h.mean, _ = strconv.ParseFloat(m[1], 64)
	h.max, _ = strconv.ParseFloat(x[1], 64)
	h.total, _ = strconv.ParseInt(x[2], 10, 64)
	return h
}

func TestWriteHGRM(t *testing.T) {
	h := NewHistogram()
	for us := int64(1); us <= 10000; us++ {
		_ = h.RecordValue(us)
	}
	var buf bytes.Buffer
	if err := WriteHGRM(&buf, h); err != nil {
		t.Fatal(err)
	}
	g := parseHGRM(t, buf.String())
	if g.total != 10000 {
		t.Errorf("total count %d, want 10000", g.total)
	}
	if !within(g.max, 10, 0.001) || !within(g.mean, 5, 0.001) {
		t.Errorf("footer max %v mean %v, want ~10 and ~5 ms (values must be in ms)", g.max, g.mean)
	}
	if len(g.values) < 50 {
		t.Errorf("only %d percentile lines (5 ticks per half distance gives more)", len(g.values))
	}
	for i := 1; i < len(g.values); i++ {
		if g.values[i] < g.values[i-1] || g.percentiles[i] < g.percentiles[i-1] || g.counts[i] < g.counts[i-1] {
			t.Fatalf("line %d not monotonic", i+3)
		}
	}
	last := len(g.values) - 1
	if g.percentiles[last] != 1 || g.counts[last] != 10000 || !strings.Contains(buf.String(), "inf\n#[Mean") {
		t.Errorf("last line must be percentile 1.0, count 10000, inf")
	}
	// The median line: value ~5 ms at percentile 0.5.
	found := false
	for i, p := range g.percentiles {
		if p == 0.5 {
			found = within(g.values[i], 5, 0.001)
		}
	}
	if !found {
		t.Error("no median line at ~5 ms")
	}
}

func TestWriteHGRMEmpty(t *testing.T) {
	for name, h := range map[string]*hdrhistogram.Histogram{"nil": nil, "empty": NewHistogram()} {
		var buf bytes.Buffer
		if err := WriteHGRM(&buf, h); err != nil {
			t.Fatal(err)
		}
		g := parseHGRM(t, buf.String())
		if g.total != 0 || g.max != 0 {
			t.Errorf("%s: total %d max %v", name, g.total, g.max)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteHGRMError(t *testing.T) {
	if err := WriteHGRM(failWriter{}, NewHistogram()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v", err)
	}
}
