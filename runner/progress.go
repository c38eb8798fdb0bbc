package runner

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"seckill-harness/history"
)

// Progress is a live snapshot of a run, taken about once a second.
type Progress struct {
	Elapsed   time.Duration // since the run's start
	Total     time.Duration // planned length of all phases
	Phase     string
	Scheduled int64   // operations scheduled so far (sent + dropped)
	Completed int64   // answered (any outcome)
	InFlight  int64   // scheduled, not answered
	Rate      float64 // completions per second over the last interval
	LastP99   time.Duration
	LastMax   time.Duration
	Accepted  int64
	SoldOut   int64
	Unknown   int64
	Errors    int64
	Dropped   int64
	Other     int64 // every other business answer
}

// WithProgress calls fn about every `every` from its own goroutine with a
// snapshot, and once more at the end. fn must not block for long.
func WithProgress(every time.Duration, fn func(Progress)) Option {
	return func(o *options) { o.progress, o.progressEvery = fn, every }
}

// liveStats is what the workers feed for progress; cheap and lock-free
// except for the last-second histogram.
type liveStats struct {
	scheduled, completed                               atomic.Int64
	accepted, soldOut, unknown, errors, dropped, other atomic.Int64
	mu                                                 sync.Mutex
	window                                             *hdrhistogram.Histogram // latency of the current interval, µs
}

func newLiveStats() *liveStats {
	return &liveStats{window: hdrhistogram.New(1, 60_000_000, 2)}
}

// drop counts a dropped operation.
func (l *liveStats) drop() {
	if l != nil {
		l.dropped.Add(1)
	}
}

func (l *liveStats) record(o *history.Op) {
	if l == nil {
		return
	}
	switch {
	case o.Outcome == history.OutcomeDropped:
		l.dropped.Add(1)
		return
	case o.Outcome == history.OutcomeUnknown:
		l.unknown.Add(1)
	case o.Outcome == history.OutcomeError:
		l.errors.Add(1)
	case o.Accepted():
		l.accepted.Add(1)
	case o.Kind.IsReserve() && o.Outcome == history.Outcome(15):
		l.soldOut.Add(1)
	default:
		l.other.Add(1)
	}
	l.completed.Add(1)
	us := (o.End - o.Intended).Microseconds()
	l.mu.Lock()
	_ = l.window.RecordValue(max(1, min(us, 60_000_000)))
	l.mu.Unlock()
}

// snapshot fills p and resets the interval histogram.
func (l *liveStats) snapshot(p *Progress, interval time.Duration, prevCompleted int64) {
	p.Scheduled = l.scheduled.Load()
	p.Completed = l.completed.Load()
	p.Dropped = l.dropped.Load()
	p.InFlight = max(0, p.Scheduled-p.Completed-p.Dropped)
	p.Accepted, p.SoldOut, p.Unknown, p.Errors, p.Other = l.accepted.Load(), l.soldOut.Load(), l.unknown.Load(), l.errors.Load(), l.other.Load()
	if interval > 0 {
		p.Rate = float64(p.Completed-prevCompleted) / interval.Seconds()
	}
	l.mu.Lock()
	p.LastP99 = time.Duration(l.window.ValueAtQuantile(99)) * time.Microsecond
	p.LastMax = time.Duration(l.window.Max()) * time.Microsecond
	l.window.Reset()
	l.mu.Unlock()
}
