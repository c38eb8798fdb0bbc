package catalogue

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
)

// busyShell is the program of one busy loop: a shell spinning forever.
const busyShell = "/bin/sh"

// BusyLoops are child processes that each spin on one core, so the runs
// under test compete for the CPU (a stress run). They are ended by PID by
// Stop, by the end of the context they were started with, and by the
// kernel when the harness dies (parent-death signal SIGKILL): never left
// running.
type BusyLoops struct {
	mu   sync.Mutex
	cmds []*exec.Cmd
	done []chan struct{}
}

// StartBusyLoops starts n busy loops (n < 1: one). On an error the loops
// already started are stopped.
func StartBusyLoops(ctx context.Context, n int) (*BusyLoops, error) {
	if n < 1 {
		n = 1
	}
	b := &BusyLoops{}
	for i := 0; i < n; i++ {
		cmd := exec.Command(busyShell, "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			b.Stop()
			return nil, fmt.Errorf("start busy loop %d of %d (%s): %w; --stress needs a POSIX shell at %s", i+1, n, busyShell, err, busyShell)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		b.mu.Lock()
		b.cmds, b.done = append(b.cmds, cmd), append(b.done, done)
		b.mu.Unlock()
	}
	go func() {
		select {
		case <-ctx.Done():
			b.Stop()
		case <-b.done[0]:
		}
	}()
	return b, nil
}

// PIDs are the loops' process ids, in start order.
func (b *BusyLoops) PIDs() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []int
	for _, c := range b.cmds {
		out = append(out, c.Process.Pid)
	}
	return out
}

// Stop kills every loop by its PID (SIGKILL) and waits until each is
// reaped. It may be called more than once, from any goroutine.
func (b *BusyLoops) Stop() {
	b.mu.Lock()
	cmds, done := b.cmds, b.done
	b.mu.Unlock()
	for i, c := range cmds {
		select {
		case <-done[i]:
			continue // already ended and reaped: its PID may be someone else's now
		default:
		}
		_ = c.Process.Kill() // SIGKILL to its PID (ErrProcessDone when it just ended)
		<-done[i]
	}
}
