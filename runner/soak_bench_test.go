package runner

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill-harness/lua"
)

// soakRate and soakHour are what the soak goal is stated for: a 1-hour run
// at 2,000 ops/s keeps its RSS under 400 MB.
const (
	soakRate   = 2000
	soakHour   = time.Hour
	soakTarget = 400 // MB
)

// BenchmarkSoakProjection: an open-loop run at 2,000 ops/s (5 minutes;
// SECKILL_SOAK_DURATION shortens it) as the lifecycle runs it — the
// history streamed to a spool (WithHistorySpool) — then the checks and
// the report built from it, with the RSS of this process (VmRSS) read
// every second during the load and every 20 ms after it. Two parts are
// projected to one hour and added: the load's RSS, extrapolated from its
// growth rate over the load's second half, and what the checks and the
// report add on top of it, scaled by the number of operations (they hold
// per-op keys and per-second histograms). The goal is < 400 MB.
func BenchmarkSoakProjection(b *testing.B) {
	d := 5 * time.Minute
	if v := os.Getenv("SECKILL_SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("SECKILL_SOAK_DURATION=%q: %v", v, err)
		}
	}
	ctx := context.Background()
	a := lua.NewActivity(fmt.Sprintf("soak%d", actSeq.Add(1)), "sku1", 1000, 2, 2*time.Hour)
	if err := lua.Setup(ctx, testRDB, a); err != nil {
		b.Fatal(err)
	}
	defer lua.Teardown(ctx, testRDB, a)
	cfg := DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users = soakRate, d, 200_000

	// Start from what this run needs: the benchmarks before it in the same
	// process may have left freed heap resident.
	debug.FreeOSMemory()
	var mu sync.Mutex
	var samples []sample
	peakSince := 0.0
	every := time.Second
	stop := make(chan struct{})
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(every):
				r := vmRSSMB()
				mu.Lock()
				samples = append(samples, sample{time.Since(t0), r})
				peakSince = max(peakSince, r)
				mu.Unlock()
			}
		}
	}()
	tgt := Target{Store: testStore, Activity: a}
	res, err := Run(ctx, cfg, tgt.Sale(), tgt.System(), WithHistorySpool(""))
	if err != nil {
		close(stop)
		b.Fatal(err)
	}
	rssRun := vmRSSMB()
	mu.Lock()
	// The growth rate is fitted (least squares) over the samples after a
	// settling period — the load's second half, and not before its first
	// minute: the first seconds and minutes fill the heap up to the
	// collector's goal and allocate the spool's reusable chunks, which do
	// not grow with the run. A load shorter than two minutes has no
	// settled part worth fitting; its projection is printed as such.
	settle := max(res.Elapsed/2, time.Minute)
	var fit []sample
	for _, s := range samples {
		if s.at >= settle {
			fit = append(fit, s)
		}
	}
	settled := len(fit) >= 30
	if len(samples) == 0 {
		mu.Unlock()
		close(stop)
		b.Fatalf("no RSS sample in a %s load: SECKILL_SOAK_DURATION is too short", res.Elapsed)
	}
	if len(fit) < 2 {
		fit = samples[len(samples)/2:]
	}
	first := fit[0]
	slope := lsqSlope(fit) // MB per second
	peakRun := max(peakSince, rssRun)
	peakSince, every = rssRun, 20*time.Millisecond
	mu.Unlock()

	chk, err := Verify(ctx, tgt, CheckInput{History: res.History, Samples: res.Samples})
	if err != nil {
		close(stop)
		b.Fatal(err)
	}
	_, rec := buildReportChecked(res, chk, ReportMeta{})
	runtime.KeepAlive(rec)
	rssEnd := vmRSSMB()
	close(stop)
	<-done
	peakPost := max(peakSince, rssEnd)

	ops := float64(res.History.Len())
	hour := soakHour.Seconds()
	loadHour := rssRun + max(slope, 0)*(hour-res.Elapsed.Seconds())
	postHour := (peakPost - rssRun) * float64(soakRate) * hour / ops
	projected := loadHour + max(postHour, 0)

	b.ReportMetric(max(peakRun, peakPost), "peak-RSS-MB")
	b.ReportMetric(projected, "projected-1h-RSS-MB")
	fmt.Printf("soak %s at %d ops/s: %.0f ops (history spooled to disk), checks %s; RSS %.0f MB at %s, %.0f MB at the end of the load (%.3f MB/min fitted over %d samples from %s), peak %.0f MB while checking and reporting\n",
		res.Elapsed.Round(time.Second), soakRate, ops, passFail(chk), first.rss, first.at.Round(time.Second), rssRun, slope*60, len(fit), first.at.Round(time.Second), peakPost)
	if !settled {
		fmt.Printf("soak: the load lasted %s, too short to have settled (the slope is fitted after max(half the load, 1 min), over at least 30 s): the projection below extrapolates the heap's climb and overstates; run the default 5 minutes\n", res.Elapsed.Round(time.Second))
	}
	fmt.Printf("soak projected to 1 h at %d ops/s: %.0f MB (load %.0f MB by its RSS growth + checks/report %.0f MB scaled to %.1f M ops; target < %d)\n",
		soakRate, projected, loadHour, max(postHour, 0), float64(soakRate)*hour/1e6, soakTarget)
}

// sample is this process's RSS (MB) at an offset from the soak's start.
type sample struct {
	at  time.Duration
	rss float64
}

// lsqSlope is the least-squares slope of RSS over time, MB per second.
func lsqSlope(ss []sample) float64 {
	n := float64(len(ss))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, s := range ss {
		x := s.at.Seconds()
		sx, sy, sxx, sxy = sx+x, sy+s.rss, sxx+x*x, sxy+x*s.rss
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func passFail(c *CheckReport) string {
	if c.Passed() {
		return "passed"
	}
	return "FAILED " + strings.Join(c.Failed(), ",")
}

// vmRSSMB is this process's resident set (VmRSS of /proc/self/status), MB.
func vmRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
