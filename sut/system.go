package sut

import (
	"context"
	"time"

	"seckill-harness/lua"
)

// System is the system under test as the load reaches it. Every method
// follows lua.Store's error contract: nil means the system answered;
// lua.ErrOutcomeUnknown means the reply was lost; a Redis error means the
// call did not run; any other error means nothing was sent. An error with
// a method FailedClosed() bool that returns true is a fail-closed refusal
// of a service (SYSTEM_BUSY: nothing reserved), counted apart from the
// path's errors (the engine's error class SYSTEM_BUSY); one with a method
// DefinitiveFailure() bool that returns true is a service's definitive
// failure (FAILED: not retryable, no effect claimed; error class FAILED).
type System interface {
	// Name identifies the system in reports ("reference", "get-then-decr", …).
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

// Querier is the ability to say what became of a request without
// re-sending it (the contract's "lookup of the request result"): the
// reference reads the request's cached answer, a service asks its query
// endpoint. The load's status queries (KindQuery) go to it; a system
// without it gets none (the planner leaves the mix's query share out and
// the report says so).
type Querier interface {
	// Query returns the answer on record for userID's requestID in a;
	// found is false when no execution of the request is on record. Errors
	// follow System's contract (nil: the system answered).
	Query(ctx context.Context, a *lua.Activity, userID, requestID string) (res lua.RequestResult, found bool, err error)
}

// IDs derives the ids of a call: the harness's, whatever the system
// (*lua.Store implements it with the run's secret).
type IDs interface {
	// NewReserveCall validates the ids and derives bucket, reservation_id
	// and message_id for one request of userID against activity a.
	NewReserveCall(a *lua.Activity, userID, requestID string, ttl time.Duration) (lua.ReserveCall, error)
	// ReservationIDFor is the reservation id derived for userID's requestID.
	ReservationIDFor(a *lua.Activity, userID, requestID string) string
}

// Sale is what the harness sells through a system: the activity (its
// stock, buckets and key namespace) and how a call's ids are derived.
type Sale struct {
	Activity *lua.Activity
	IDs      IDs
}

// Provisioner is the ability to set the activity up before the load and
// remove it after: a system without it runs on an activity set up by
// other means.
type Provisioner interface {
	// Setup creates the activity with its stock; it refuses an activity
	// that already exists.
	Setup(ctx context.Context, a *lua.Activity) error
	// Teardown removes exactly the keys the activity created and returns
	// how many.
	Teardown(ctx context.Context, a *lua.Activity) (int64, error)
}

// ServiceProvisioner is a Provisioner that may set the activity up through
// a service's own API (an HTTP service's setup: and teardown: calls): its
// activity then lives (also) in the service's store, not only in keys on
// the harness's cluster. When ThroughService is true the run tears it down
// after every run, once, on every way out, also on a cluster the harness
// created and throws away (other provisioners are torn down only on a
// cluster the harness did not create). Its Teardown's count is the keys
// the harness removed itself, not what the service removed.
type ServiceProvisioner interface {
	Provisioner
	// ThroughService reports whether Setup and Teardown speak to the service.
	ThroughService() bool
}

// Wrapper is a system that decorates another (adds WAIT, a local
// sold-out flag, …): its abilities are the wrapped system's.
type Wrapper interface {
	Unwrap() System
}

// Ability returns the first system of s's wrapper chain (s, then what it
// unwraps to, …) that has ability T.
func Ability[T any](s System) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		w, ok := s.(Wrapper)
		if !ok {
			break
		}
		s = w.Unwrap()
	}
	var zero T
	return zero, false
}
