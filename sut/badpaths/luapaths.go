package badpaths

import (
	"context"
	"strconv"
	"strings"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// scriptPath runs a Lua variant with the reference client behaviour
// (same-id re-sends, fence then compensate). Only the script differs.
type scriptPath struct {
	sut.ReferenceState // the contract's keys: set up, read back as the reference's
	name               string
	st                 *lua.Store // the variant's scripts on the reference store's client
}

var _ sut.System = scriptPath{}

func newScriptPath(name string, v *variant) func(st *lua.Store) sut.System {
	return func(st *lua.Store) sut.System {
		scripts, err := v.get()
		if err != nil {
			// Validate (called by RunMatrix) reports this as an error first;
			// reaching it means the caller skipped it. Fail loudly.
			panic(err)
		}
		// The secret only derives ids, which the engine does with the
		// reference store: the variant store just runs scripts.
		return scriptPath{ReferenceState: sut.ReferenceState{Store: st}, name: name, st: lua.NewStore(st.Client(), scripts, nil)}
	}
}

func (p scriptPath) Name() string { return p.name }

func (p scriptPath) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	return p.st.Reserve(ctx, call)
}

func (scriptPath) Resend(call lua.ReserveCall, _ int) lua.ReserveCall { return call }

func (p scriptPath) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	return sut.FenceAndCompensate(ctx, p.st, sc, userID, rid)
}

// newRequestIDPath is the reference script driven by a client that, after
// a send whose outcome it does not know, re-sends under a FRESH request_id
// (and so a newly derived reservation_id and message_id): the behaviour
// spec §7.4 and §13.1 forbid ("禁止立即生成新 request_id").
type newRequestIDPath struct {
	sut.ReferenceState // the contract's keys: set up, read back as the reference's
	st                 *lua.Store
}

var _ sut.System = newRequestIDPath{}

func (newRequestIDPath) Name() string { return NewRequestIDOnTimeout }

func (p newRequestIDPath) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	return p.st.Reserve(ctx, call)
}

// retryMark separates the original request id from the retry number; '-'
// keeps the id within [A-Za-z0-9_-].
const retryMark = "-retry"

// Resend mints a new request id (<original>-retry<n>) and derives its
// reservation and message ids, as a client that treats a timeout as a
// failed request and "tries again" does.
func (p newRequestIDPath) Resend(call lua.ReserveCall, send int) lua.ReserveCall {
	base, _, _ := strings.Cut(call.RequestID, retryMark)
	call.RequestID = base + retryMark + strconv.Itoa(send+1)
	a := &lua.Activity{ID: call.Scope.ActivityID, SKU: call.Scope.SKUID}
	call.ReservationID = p.st.ReservationIDFor(a, call.UserID, call.RequestID)
	call.MessageID = lua.MessageID(call.ReservationID)
	return call
}

func (p newRequestIDPath) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	return sut.FenceAndCompensate(ctx, p.st, sc, userID, rid)
}

// queryHidesReleased is the reference path whose status query reads the
// request's reservation record: a RELEASED reservation reads NOT_FOUND, as
// if its request never ran (a query endpoint that filters out released
// reservations). Without a record it answers what the reference does.
type queryHidesReleased struct{ sut.Reference }

var _ sut.Querier = queryHidesReleased{}

func (queryHidesReleased) Name() string { return QueryHidesReleased }

func (p queryHidesReleased) Query(ctx context.Context, a *lua.Activity, userID, requestID string) (lua.RequestResult, bool, error) {
	rid := p.Store.ReservationIDFor(a, userID, requestID)
	r, found, err := p.Store.ReadReservation(ctx, a.Scope(a.BucketOf(userID)), rid)
	switch {
	case err != nil:
		return lua.RequestResult{}, false, err
	case found && r.Status == lua.StatusReleased:
		return lua.RequestResult{}, false, nil // the bug: released reads as never run
	}
	return p.Reference.Query(ctx, a, userID, requestID)
}
