package runner

import (
	"context"

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
