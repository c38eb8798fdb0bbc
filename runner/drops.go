package runner

import (
	"fmt"
	"time"
)

// DropResolution is the width of the time slots dropped operations are
// counted in: drops whose intended times fall in one slot share one
// DropSlot, so a run keeps at most one slot per DropResolution of load
// however many operations it drops.
const DropResolution = 10 * time.Millisecond

// DefaultMaxDroppedRatio is the bound on Observed.DroppedRatio a run is
// held to when its configuration sets none: over it the load asked for
// more than the harness could send, and the results describe a lighter load.
const DefaultMaxDroppedRatio = 0.01

// Drops counts the operations the open loop dropped (never sent: the
// in-flight cap was reached). They are counted, not kept: O(1) memory per
// drop, at most one DropSlot per DropResolution of load.
type Drops struct {
	Total int64
	Slots []DropSlot // in intended order, one per slot with a drop
}

// DropSlot is Count drops intended in the DropResolution slot that starts
// at At (an offset from the run's start, a multiple of DropResolution).
type DropSlot struct {
	At    time.Duration
	Count int64
}

// add counts one drop intended at offset at. Intended times come from the
// one scheduling goroutine in non-decreasing order, so a drop either falls
// in the last slot or opens a new one.
func (d *Drops) add(at time.Duration) {
	d.Total++
	slot := at.Truncate(DropResolution)
	if n := len(d.Slots); n > 0 && d.Slots[n-1].At == slot {
		d.Slots[n-1].Count++
		return
	}
	d.Slots = append(d.Slots, DropSlot{At: slot, Count: 1})
}

// DroppedRatio is Dropped / Scheduled (0 when nothing was scheduled).
func (o Observed) DroppedRatio() float64 {
	if o.Scheduled <= 0 {
		return 0
	}
	return float64(o.Dropped) / float64(o.Scheduled)
}

// CheckDropped returns an error naming the counts when more than
// maxRatio of the scheduled operations were dropped (nil otherwise).
func (o Observed) CheckDropped(maxRatio float64) error {
	if r := o.DroppedRatio(); r > maxRatio {
		return fmt.Errorf("%d of %d scheduled operations were dropped (%.2f%%, over the bound of %.2f%%): the load asked for more than the harness could send with its in-flight cap; lower the rate, or raise max_in_flight and concurrency",
			o.Dropped, o.Scheduled, 100*r, 100*maxRatio)
	}
	return nil
}
