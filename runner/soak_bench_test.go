package runner

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

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
// SECKILL_SOAK_DURATION shortens it), the report's recorder built after it
// as a run does, and the RSS of this process (VmRSS) read every 5 s. It
// prints the measured RSS and two projections to one hour: the RSS's own
// growth rate over the run, extrapolated, and the byte model (history
// bytes per op × ops in an hour, held twice while it is flattened, plus
// the per-second histograms). The goal (< 400 MB) is met only when both
// projections are under it.
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

	runtime.GC()
	type sample struct {
		at  time.Duration
		rss float64
	}
	var samples []sample
	stop := make(chan struct{})
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				samples = append(samples, sample{time.Since(t0), vmRSSMB()})
			}
		}
	}()
	res, err := Run(ctx, cfg, Target{Store: testStore, Activity: a})
	close(stop)
	<-done
	if err != nil {
		b.Fatal(err)
	}
	rssRun := vmRSSMB()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, rec := BuildReport(res, &CheckReport{}, ReportMeta{})
	runtime.GC()
	runtime.ReadMemStats(&m1)
	recPerS := float64(m1.HeapAlloc-min(m0.HeapAlloc, m1.HeapAlloc)) / max(res.Elapsed.Seconds(), 1)
	runtime.KeepAlive(rec)
	rssEnd := vmRSSMB()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	peak := float64(ru.Maxrss) / 1024

	ops := float64(len(res.History.Ops))
	var rid float64
	for i := range res.History.Ops {
		rid += float64(len(res.History.Ops[i].RID))
	}
	histPerOp := float64(unsafe.Sizeof(Op{})) + rid/ops
	hourOps := float64(soakRate) * soakHour.Seconds()
	model := samples[0].rss + (2*histPerOp*hourOps+recPerS*soakHour.Seconds())/(1<<20)

	// The RSS's growth rate over the run (from the first sample to the end).
	first := samples[0]
	slope := (rssRun - first.rss) / (res.Elapsed - first.at).Seconds()
	linear := rssRun + slope*(soakHour-res.Elapsed).Seconds()

	b.ReportMetric(peak, "peak-RSS-MB")
	b.ReportMetric(linear, "projected-1h-RSS-MB")
	b.ReportMetric(model, "model-1h-RSS-MB")
	fmt.Printf("soak %s at %d ops/s: %.0f ops, RSS %.0f MB after the load, %.0f MB with the report's histograms (peak %.0f MB); history %.0f B/op, per-second histograms %.1f KiB/s; projected to 1 h: %.0f MB by the RSS growth rate, %.0f MB by the byte model (target < %d)\n",
		res.Elapsed.Round(time.Second), soakRate, ops, rssRun, rssEnd, peak, histPerOp, recPerS/1024, linear, model, soakTarget)
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
