package runner

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
)

// overloadConfig asks for far more than one worker and one in-flight slot
// can send to the real cluster, so nearly every operation is dropped.
func overloadConfig(rate float64, d time.Duration) Config {
	cfg := DefaultConfig()
	cfg.Shape = Shape{Kind: "constant", Rate: rate}
	cfg.Duration, cfg.Concurrency, cfg.MaxInFlight = d, 1, 1
	cfg.Users, cfg.SampleEvery = 1000, 0
	return cfg
}

// Dropped operations are counted, not kept: the history holds only the
// operations that were sent, and Result.Drops holds the count by time.
func TestDroppedOperationsAreCountedNotKept(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 100, 1)
	res, err := Run(context.Background(), overloadConfig(200_000, 1500*time.Millisecond), tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	obs := res.Observed
	if obs.Dropped < 50_000 {
		t.Fatalf("only %d dropped of %d scheduled at 200,000 ops/s on one in-flight slot", obs.Dropped, obs.Scheduled)
	}
	for i := range res.History.Ops {
		if res.History.Ops[i].Outcome == history.OutcomeDropped {
			t.Fatalf("the history keeps dropped operation %d (of %d dropped): drops must be counted, not kept", res.History.Ops[i].ID, obs.Dropped)
		}
	}
	if sent := int64(len(res.History.Ops)); obs.Scheduled != sent+obs.Dropped {
		t.Fatalf("scheduled %d != %d sent + %d dropped", obs.Scheduled, sent, obs.Dropped)
	}
	var sum int64
	prev := time.Duration(-1)
	for _, r := range res.Drops.Slots {
		if r.At < prev || r.Count <= 0 || r.At > res.Elapsed {
			t.Fatalf("drop slot %+v after %v (elapsed %v)", r, prev, res.Elapsed)
		}
		prev = r.At
		sum += r.Count
	}
	if sum != obs.Dropped || res.Drops.Total != obs.Dropped {
		t.Fatalf("drop slots add up to %d, total %d, observed %d", sum, res.Drops.Total, obs.Dropped)
	}
	// The slots are coarse (DropResolution), never one per drop.
	if max := int(res.Elapsed/DropResolution) + 1; len(res.Drops.Slots) > max {
		t.Fatalf("%d drop slots for %v of load: more than one per %v", len(res.Drops.Slots), res.Elapsed, DropResolution)
	}
	// The report counts them per second and in total.
	rep, _ := buildReportChecked(res, &CheckReport{}, ReportMeta{Scenario: "drops"})
	if rep.Totals.Dropped != obs.Dropped {
		t.Fatalf("report totals.dropped %d, observed %d", rep.Totals.Dropped, obs.Dropped)
	}
	var perSecond int64
	for _, s := range rep.Timeseries {
		perSecond += s.Dropped
	}
	if perSecond != obs.Dropped {
		t.Fatalf("the report's seconds hold %d drops, observed %d", perSecond, obs.Dropped)
	}
	// The bound: over MaxDroppedRatio the reason names the counts.
	if r := obs.DroppedRatio(); r < 0.5 {
		t.Fatalf("dropped ratio %g", r)
	}
	if err := obs.CheckDropped(DefaultMaxDroppedRatio); err == nil || !strings.Contains(err.Error(), fmt.Sprint(obs.Dropped)) {
		t.Fatalf("CheckDropped(%g) = %v, want an error naming the %d drops", DefaultMaxDroppedRatio, err, obs.Dropped)
	}
	if err := obs.CheckDropped(1); err != nil {
		t.Fatalf("CheckDropped(1) = %v", err)
	}
}

// The memory a run keeps does not grow with the number of dropped
// operations: ten times the drops (ten times the rate) keep about the same
// heap once the run is over.
func TestDroppedOperationsCostNoMemoryEach(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 100, 1)
	kept := func(rate float64) (uint64, int64) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := Run(context.Background(), overloadConfig(rate, time.Second), tgt.Sale(), tgt.System())
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		// Leave out what the sent operations keep (they differ a little
		// from run to run): the rest is what the drops cost.
		var sent uint64
		for i := range res.History.Ops {
			if o := &res.History.Ops[i]; o.Outcome != history.OutcomeDropped {
				sent += uint64(unsafe.Sizeof(history.Op{})) + uint64(len(o.RID))
			}
		}
		runtime.KeepAlive(res)
		return after.HeapAlloc - min(before.HeapAlloc+sent, after.HeapAlloc), res.Observed.Dropped
	}
	lowHeap, lowDrops := kept(40_000)
	highHeap, highDrops := kept(400_000)
	t.Logf("%d drops keep %d B; %d drops keep %d B", lowDrops, lowHeap, highDrops, highHeap)
	if highDrops < 4*lowDrops {
		t.Fatalf("the overload did not scale: %d then %d drops", lowDrops, highDrops)
	}
	// A kept Op is 64 bytes and more; a counted drop costs nothing.
	if grown := int64(highHeap) - int64(lowHeap); grown > 4*(highDrops-lowDrops) {
		t.Fatalf("%d more drops kept %d more bytes of heap (%.1f B per drop): drops must be counted, not kept",
			highDrops-lowDrops, grown, float64(grown)/float64(highDrops-lowDrops))
	}
}
