package reports

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// HGRMTicksPerHalfDistance is the percentile resolution of WriteHGRM, the
// usual 5 ticks per half distance.
const HGRMTicksPerHalfDistance = 5

// hgrmHeader is the header line of the Java HdrHistogram
// outputPercentileDistribution ("%12s %14s %10s %14s").
var hgrmHeader = fmt.Sprintf("%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")

// WriteHGRM writes h, a histogram of microseconds (from NewHistogram or
// Recorder.Latency), as a standard HdrHistogram percentile distribution
// (.hgrm) with values in milliseconds: a header line (Value, Percentile,
// TotalCount, 1/(1-Percentile)), one line per percentile tick (the last
// one at percentile 1.0 with "inf"), and the Mean/StdDeviation, Max/Total
// count, Buckets/SubBuckets footer, as Histogram.PercentilesPrint writes it
// (tested). The HdrHistogram plotter reads it. An empty histogram gives
// the header, a single zero line and the footer.
func WriteHGRM(w io.Writer, h *hdrhistogram.Histogram) error {
	if h == nil {
		h = NewHistogram()
	}
	var buf bytes.Buffer
	if _, err := h.PercentilesPrint(&buf, HGRMTicksPerHalfDistance, 1000); err != nil {
		return fmt.Errorf("reports: hgrm: %w", err)
	}
	out := buf.String()

	// The library's header is tab-separated; use the Java column layout so
	// the file looks like every other .hgrm.
	if i := strings.Index(out, "\n\n"); i >= 0 && strings.Contains(out[:i], "Percentile") {
		out = hgrmHeader + out[i+2:]
	} else {
		out = hgrmHeader + out
	}
	if _, err := io.WriteString(w, out); err != nil {
		return fmt.Errorf("reports: hgrm: %w", err)
	}
	return nil
}
