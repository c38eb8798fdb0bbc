package sut

import (
	"context"
	"fmt"
	"time"

	"seckill-harness/lua"
)

// WaitPolicy is the reserve option that sends `WAIT Replicas Timeout`
// after each fresh ACCEPTED answer, on the connection that ran the script
// (see lua.WaitRequest), and records per operation whether the replicas
// confirmed it (Op.WaitConfirmed) and WAIT's round trip (Op.WaitUs). The
// operation's latency includes WAIT: it is what a user of such a path
// waits for. The zero value is off.
type WaitPolicy struct {
	Replicas int           // replicas that must acknowledge; 0: no WAIT
	Timeout  time.Duration // WAIT's timeout; positive when Replicas > 0
}

// DefaultWaitTimeout is WAIT's timeout when only the replicas are given:
// long enough for a healthy replica on loopback (a millisecond or less),
// short enough that a cut replication costs each acknowledgement half a
// second, not the call timeout.
const DefaultWaitTimeout = 500 * time.Millisecond

// Enabled reports whether WAIT is sent.
func (w WaitPolicy) Enabled() bool { return w.Replicas > 0 }

// Validate checks the policy; the error names the flag and the fix.
func (w WaitPolicy) Validate() error {
	switch {
	case w.Replicas < 0:
		return fmt.Errorf("--wait-replicas %d: want 0 (no WAIT) or the number of replicas that must acknowledge each ACCEPTED (e.g. 1)", w.Replicas)
	case w.Replicas > 0 && w.Timeout <= 0:
		return fmt.Errorf("--wait-timeout %s: want a positive timeout with --wait-replicas %d (WAIT 0 would block forever), e.g. %s", w.Timeout, w.Replicas, DefaultWaitTimeout)
	case w.Replicas == 0 && w.Timeout > 0:
		return fmt.Errorf("--wait-timeout %s without --wait-replicas: add --wait-replicas N (e.g. 1) or drop the timeout", w.Timeout)
	}
	return nil
}

func (w WaitPolicy) String() string {
	if !w.Enabled() {
		return "no WAIT"
	}
	return fmt.Sprintf("WAIT %d %dms after each ACCEPTED", w.Replicas, w.Timeout.Milliseconds())
}

// Waiting is a system whose reserve calls carry the WaitPolicy: every
// script call it makes through a client of package lua is followed, when
// it answers a fresh ACCEPTED, by WAIT on its connection. Its name and
// abilities are the wrapped system's.
type Waiting struct {
	System
	Policy WaitPolicy
}

// Reserve sends the wrapped system's reserve with a lua.WaitRequest.
func (p Waiting) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	req := &lua.WaitRequest{Replicas: p.Policy.Replicas, Timeout: p.Policy.Timeout}
	return p.System.Reserve(lua.WithWait(ctx, req), call)
}

// Unwrap returns the wrapped system.
func (p Waiting) Unwrap() System { return p.System }
