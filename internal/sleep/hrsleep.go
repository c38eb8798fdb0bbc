// Sleeper sleeps with sub-millisecond precision, for the open-loop pacer.
//
// Why: a Go timer (time.Sleep, time.NewTimer) that fires while the process
// is otherwise idle is woken by the runtime's network poller, whose
// epoll_wait takes a timeout in whole milliseconds (a wait under 1 ms
// becomes 1 ms, 1.7 ms becomes 1 ms and then another 1 ms). Measured on a
// 2-core VM with nothing else running, a loop sleeping to each due time
// of a 1,000–5,000/s schedule started 11–13% of its iterations more than
// 1 ms late; the same loop sleeping on a timerfd started 0–0.5% late. A
// pacer that is late by its own timer charges the system under test
// with latency it did not cause (the late start is counted in the
// operation's latency) and takes from the harness's late-start budget.
//
// How: a timerfd (CLOCK_MONOTONIC) opened non-blocking is read through
// an os.File, so the read parks the goroutine in the network poller like
// a socket read: the kernel's high-resolution timer makes the fd readable
// at the due instant and epoll_wait returns then, whatever its timeout.
// The cost is two system calls per sleep (arming the timer, reading it),
// stated by the headroom benchmark as client CPU per operation.

package sleep

import (
	"context"
	"errors"
	"os"
	"time"
)

// precisePart is the end of a sleep spent on the precise timer; what
// comes before it goes to an ordinary (interruptible, millisecond-grained)
// timer.
const precisePart = 2 * time.Millisecond

// Sleeper sleeps with the precision of the kernel's timers where it can
// (Linux: a timerfd), and as For does where it cannot. One Sleeper
// serves one goroutine at a time; Close releases its file descriptor.
type Sleeper struct {
	f   *os.File // nil: coarse only
	fd  int
	buf [8]byte
}

// New returns a Sleeper; when the precise timer cannot be had (not Linux,
// or timerfd_create refused) it returns a coarse one and the reason,
// which the caller states rather than hides.
func New() (*Sleeper, error) {
	f, fd, err := openTimer()
	if err != nil {
		return &Sleeper{}, err
	}
	return &Sleeper{f: f, fd: fd}, nil
}

// Precise reports whether s sleeps on the kernel's high-resolution timer.
func (s *Sleeper) Precise() bool { return s != nil && s.f != nil }

// For sleeps for d or until ctx is done, and reports whether the full d
// elapsed with ctx still live, as For. A sleep longer than 2 ms
// spends all but its last 2 ms on an ordinary timer (interruptible at
// once); the last part is precise and ends within 2 ms of ctx ending.
func (s *Sleeper) For(ctx context.Context, d time.Duration) bool {
	if !s.Precise() {
		return For(ctx, d)
	}
	if d <= 0 {
		return ctx.Err() == nil
	}
	due := time.Now().Add(d)
	if d > precisePart {
		// The ordinary timer may overshoot by a millisecond or two: it
		// is asked to wake up a full precise part early.
		if !For(ctx, d-precisePart) {
			return false
		}
	}
	if rest := time.Until(due); rest > 0 {
		if err := s.sleepPrecise(rest); err != nil {
			// A failing timer (fd closed under it) must not stop the
			// pacer: finish on the ordinary one and stop using it.
			s.Close()
			return For(ctx, time.Until(due))
		}
	}
	return ctx.Err() == nil
}

// Close releases the timer; s then sleeps coarsely. Safe to call twice.
func (s *Sleeper) Close() error {
	if s == nil || s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

var errShortRead = errors.New("hrsleep: short read from timerfd")
