package runner

import (
	"context"
	"fmt"
	"time"

	"seckill-harness/lua"
)

// Path is the reserve path under test as the client drives it: the
// reference (the scripts through lua.Store, same-id retries) or a known-bad
// variant for negative controls. Every method follows lua.Store's error
// contract: nil means Redis answered; lua.ErrOutcomeUnknown means the reply
// was lost; a Redis error means the script did not run; any other error
// means nothing was sent.
type Path interface {
	// Name identifies the path in reports ("reference", "get-then-decr", …).
	Name() string
	// Reserve sends one reserve of call.
	Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error)
	// Resend is the call the client sends after send number `send` (0-based)
	// failed with a retryable error. The reference re-sends call unchanged:
	// same request_id, reservation_id and message_id (spec §7.4).
	Resend(call lua.ReserveCall, send int) lua.ReserveCall
	// Release fences reservation rid of userID (-> RELEASE_PENDING) and
	// compensates it.
	Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error)
}

// ReferencePath is the project's path: the scripts of Store, retried with the same ids.
type ReferencePath struct{ Store *lua.Store }

var _ Path = ReferencePath{}

// Name is "reference".
func (ReferencePath) Name() string { return "reference" }

// Reserve runs reserve.lua once.
func (p ReferencePath) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	return p.Store.Reserve(ctx, call)
}

// Resend returns call unchanged.
func (ReferencePath) Resend(call lua.ReserveCall, _ int) lua.ReserveCall { return call }

// Release runs transition.lua (-> RELEASE_PENDING) then compensate.lua.
func (p ReferencePath) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	if _, err := p.Store.Transition(ctx, sc, rid, lua.TransitionArgs{Target: lua.StatusReleasePending}); err != nil {
		return lua.CompensateResult{}, err
	}
	return p.Store.Compensate(ctx, sc, userID, rid, "harness-release", 0)
}

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

// WaitingPath is a path whose reserve calls carry the WaitPolicy: every
// script call it makes through a client of package lua is followed, when
// it answers a fresh ACCEPTED, by WAIT on its connection. Its name is the
// wrapped path's.
type WaitingPath struct {
	Path
	Policy WaitPolicy
}

// Reserve sends the wrapped path's reserve with a lua.WaitRequest.
func (p WaitingPath) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	req := &lua.WaitRequest{Replicas: p.Policy.Replicas, Timeout: p.Policy.Timeout}
	return p.Path.Reserve(lua.WithWait(ctx, req), call)
}
