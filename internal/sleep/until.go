package sleep

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// bound is what Bind and Until keep: the context that ends the sleeps and
// the poller callback's state (fields, so that a sleep allocates nothing).
type bound struct {
	ctx    context.Context // Bind's; nil: none
	stop   func() bool     // releases Bind's watch
	rc     syscall.RawConn // the timer's, for Until
	onRead func(fd uintptr) bool
	due    time.Time
	err    error // the arming's
}

// longAgo is a read deadline already past: the poller ends a wait on the
// timer with os.ErrDeadlineExceeded as soon as it is set.
var longAgo = time.Unix(1, 0)

// Bind ties the sleeps of Until to ctx: once ctx is done, a sleep in
// progress ends at once and every later one returns false at once. Call
// it once, before the first Until; Close releases it.
func (s *Sleeper) Bind(ctx context.Context) {
	s.ctx = ctx
	if !s.Precise() {
		return
	}
	f := s.f // the file, not s.f: Close may clear s.f while this runs
	s.stop = context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(longAgo) })
}

// Until sleeps until due (a time.Now-based instant: the monotonic clock)
// or until Bind's context ends, and reports whether due was reached with
// that context live. Unlike For it spends the whole wait, however long,
// on the precise timer, at the cost of one system call: the timer is armed
// from inside the poller's read callback, so the goroutine parks without a
// read that finds the timer not yet expired, and the expiry count is not
// read after the wake-up (arming the timer again resets it). A sleeper
// without a precise timer sleeps as ctxsleep does.
func (s *Sleeper) Until(due time.Time) bool {
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if ctx.Err() != nil {
		return false
	}
	if !s.Precise() {
		return Until(ctx, due)
	}
	if time.Until(due) <= 0 {
		return true
	}
	if err := s.untilPrecise(due); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
			return false
		}
		// A failing timer (fd closed under it) must not stop the pacer:
		// finish on the ordinary one and stop using it.
		s.Close()
		return Until(ctx, due)
	}
	return ctx.Err() == nil
}

// untilPrecise waits in the poller on the timer armed for due.
func (s *Sleeper) untilPrecise(due time.Time) error {
	if s.rc == nil {
		rc, err := s.f.SyscallConn()
		if err != nil {
			return err
		}
		s.rc, s.onRead = rc, s.readable
	}
	s.due, s.err = due, nil
	if err := s.rc.Read(s.onRead); err != nil {
		return err
	}
	return s.err
}

// readable is the poller's read callback: it arms the timer for what is
// left of the wait and asks to wait (false), or ends the wait (true) once
// due has passed. It arms again after every wake-up before due (an event
// left over from an earlier sleep), so a wait always has a timer that
// will end it.
func (s *Sleeper) readable(fd uintptr) bool {
	d := time.Until(s.due)
	if d <= 0 {
		return true
	}
	if s.err = arm(int(fd), d); s.err != nil {
		return true
	}
	return false
}
