package runner

import (
	"context"
	"sync"
	"time"
)

// callCtx is a worker's reusable per-send deadline. Between begin(d) and
// end() it behaves as context.WithTimeout(parent, d) does: Deadline is
// the earlier of parent's and now+d, Done is closed and Err is
// context.DeadlineExceeded once that deadline passes (or Done closed and
// Err parent's error once parent is done), Value is parent's. Unlike
// WithTimeout it allocates nothing per send (WithTimeout costs a
// timerCtx, a timer, its function and a Done channel per send, about 5
// of the hot path's allocations): one timer, re-armed per send, and one
// Done channel, replaced only after it was closed. It serves one worker,
// one send at a time.
type callCtx struct {
	parent context.Context
	timer  *time.Timer
	endFn  func() // c.end, made once (a method value allocates)

	mu        sync.Mutex
	active    bool
	deadline  time.Time
	done      chan struct{}
	closed    bool  // done is closed
	err       error // of the current send
	parentErr error // set once parent is done
}

type callCtxKey struct{}

// withCallCtx returns parent carrying a reusable callCtx for the sends
// made with it (see callTimeout), and the function that releases it.
func withCallCtx(parent context.Context) (context.Context, func()) {
	c := &callCtx{done: make(chan struct{})}
	ctx := context.WithValue(parent, callCtxKey{}, c)
	c.parent, c.endFn = ctx, c.end
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	stop := context.AfterFunc(parent, c.parentDone)
	return ctx, func() { stop(); c.timer.Stop() }
}

// callTimeout is context.WithTimeout(ctx, d), on ctx's reusable callCtx
// when it has one (a worker's context) and that callCtx is free.
func callTimeout(ctx context.Context, d time.Duration) (context.Context, func()) {
	if c, ok := ctx.Value(callCtxKey{}).(*callCtx); ok && c.parent == ctx && c.begin(d) {
		return c, c.endFn
	}
	return context.WithTimeout(ctx, d)
}

// begin starts a send with timeout d; false if a send is already active.
func (c *callCtx) begin(d time.Duration) bool {
	c.mu.Lock()
	if c.active {
		c.mu.Unlock()
		return false
	}
	c.active, c.deadline, c.err = true, time.Now().Add(d), c.parentErr
	if c.closed && c.parentErr == nil {
		c.done, c.closed = make(chan struct{}), false
	}
	c.mu.Unlock()
	c.timer.Reset(d)
	return true
}

// end ends the current send (its cancel function).
func (c *callCtx) end() {
	c.timer.Stop()
	c.mu.Lock()
	c.active = false
	c.mu.Unlock()
}

// expire is the timer's function: it closes Done if the current send's
// deadline has passed (a stale firing, from a send that ended, finds a
// later deadline or no active send and does nothing).
func (c *callCtx) expire() {
	c.mu.Lock()
	if c.active && c.err == nil && !time.Now().Before(c.deadline) {
		c.err = context.DeadlineExceeded
		c.closeDone()
	}
	c.mu.Unlock()
}

func (c *callCtx) parentDone() {
	err := c.parent.Err()
	c.mu.Lock()
	c.parentErr = err
	if c.err == nil {
		c.err = err
	}
	c.closeDone()
	c.mu.Unlock()
}

func (c *callCtx) closeDone() {
	if !c.closed {
		close(c.done)
		c.closed = true
	}
}

func (c *callCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	d := c.deadline
	c.mu.Unlock()
	if pd, ok := c.parent.Deadline(); ok && pd.Before(d) {
		return pd, true
	}
	return d, true
}

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	d := c.done
	c.mu.Unlock()
	return d
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	return err
}

func (c *callCtx) Value(key any) any { return c.parent.Value(key) }
