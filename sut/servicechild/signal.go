package servicechild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNotRunning is returned by Pause and Kill when no incarnation runs.
var ErrNotRunning = errors.New("service child: not running")

// ErrStopped is returned by Restart after Stop.
var ErrStopped = errors.New("service child: stopped")

// current is the running incarnation, or nil.
func (c *Child) current() *incarnation {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || c.cur.exited() {
		return nil
	}
	return c.cur
}

// signal sends sig to r's process group (the group the harness created)
// and to every process of the service's tree that left it (EnvTreeMark).
func (c *Child) signal(r *incarnation, sig syscall.Signal) error {
	err := syscall.Kill(-r.pgid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("service child: %s to process group %d: %w", signalNames[sig], r.pgid, err)
	}
	if n := signalMarked(c.mark, r.pgid, sig); n > 0 {
		c.logf("service: %s to process group %d and %d process(es) of its tree outside it", signalNames[sig], r.pgid, n)
		return nil
	}
	c.logf("service: %s to process group %d", signalNames[sig], r.pgid)
	return nil
}

// signalNames are the signals the child gets, as logs name them.
var signalNames = map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM",
	syscall.SIGSTOP: "SIGSTOP", syscall.SIGCONT: "SIGCONT"}

// kill SIGKILLs r's group and the rest of the service's tree, waits until
// r is reaped (bounded: Wait gives up on pipes a descendant holds after
// waitDelay) and until no marked process is left (bounded by treeSettle;
// one still there is logged by pid).
func (c *Child) kill(r *incarnation) {
	_ = c.signal(r, syscall.SIGKILL)
	<-r.done
	if left := killMarked(c.mark); len(left) > 0 {
		c.logf("service: %d process(es) of the service's tree still present %s after SIGKILL: %v", len(left), treeSettle, left)
	}
}

// terminate sends SIGTERM to r's group (SIGCONT first: a stopped process
// does not act on it) and SIGKILL after the grace; it reports whether r
// exited within the grace.
func (c *Child) terminate(r *incarnation) bool {
	_ = c.signal(r, syscall.SIGTERM)
	_ = c.signal(r, syscall.SIGCONT)
	select {
	case <-r.done:
		// The child is gone; what it left behind outside its group
		// (a setsid grandchild) gets no grace of its own.
		if left := killMarked(c.mark); len(left) > 0 {
			c.logf("service: %d process(es) of the service's tree still present %s after SIGKILL: %v", len(left), treeSettle, left)
		}
		return true
	case <-time.After(c.opt.Grace):
		c.kill(r)
		return false
	}
}

// Kill SIGKILLs the service (its whole process group) and waits until it
// is reaped: a crash. It stays down until Restart.
func (c *Child) Kill() error {
	c.life.Lock()
	defer c.life.Unlock()
	r := c.current()
	if r == nil {
		return ErrNotRunning
	}
	c.kill(r)
	return nil
}

// Terminate stops the service gracefully (SIGTERM, SIGKILL after the
// grace); it stays down until Restart. It reports whether it exited within
// the grace. Idempotent.
func (c *Child) Terminate() bool {
	c.life.Lock()
	defer c.life.Unlock()
	r := c.current()
	if r == nil {
		return true
	}
	return c.terminate(r)
}

// Pause freezes the service's process group (SIGSTOP): its sockets stay
// open, it answers nothing. It returns once the kernel shows the group's
// leader stopped (bounded to ~2s). Resume undoes it; both are idempotent.
func (c *Child) Pause() error {
	c.life.Lock()
	defer c.life.Unlock()
	r := c.current()
	if r == nil {
		return ErrNotRunning
	}
	if r.paused {
		return nil
	}
	if err := c.signal(r, syscall.SIGSTOP); err != nil {
		return err
	}
	r.paused = true
	waitStopped(r.pgid, true)
	return nil
}

// waitStopped waits (up to ~2s) until the group leader's /proc state is
// T (stopped) or, with stopped false, anything else: a signal is delivered
// asynchronously.
func waitStopped(pid int, stopped bool) {
	for i := 0; i < 200; i++ {
		if (procState(pid) == "T") == stopped {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procState is the state letter of /proc/<pid>/stat ("" if gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// Resume continues a paused service (SIGCONT). Idempotent.
func (c *Child) Resume() error {
	c.life.Lock()
	defer c.life.Unlock()
	r := c.current()
	if r == nil || !r.paused {
		return nil
	}
	r.paused = false
	if err := c.signal(r, syscall.SIGCONT); err != nil {
		return err
	}
	waitStopped(r.pgid, false)
	return nil
}

// Restart stops the running service, if any (SIGTERM, SIGKILL after the
// grace), starts the command again on the same address and waits for its
// readiness. A child that exits or never gets ready is killed and the
// error says why.
func (c *Child) Restart(ctx context.Context) error {
	c.life.Lock()
	defer c.life.Unlock()
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	if r := c.current(); r != nil {
		c.terminate(r)
	}
	return c.startAndAwait(ctx)
}

// Stop ends the service for good (SIGTERM, SIGKILL after the grace) and
// removes the temporary output directory Start made. Idempotent; safe on
// a nil *Child.
func (c *Child) Stop() error {
	if c == nil {
		return nil
	}
	c.life.Lock()
	defer c.life.Unlock()
	c.mu.Lock()
	already := c.stopped
	c.stopped = true
	c.mu.Unlock()
	if already {
		return nil
	}
	if r := c.current(); r != nil {
		if !c.terminate(r) {
			c.logf("service: process group %d did not exit within %s of SIGTERM and was SIGKILLed", r.pgid, c.opt.Grace)
		}
	}
	if c.tmpDir != "" {
		return os.RemoveAll(c.tmpDir)
	}
	return nil
}
