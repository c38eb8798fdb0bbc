package lua

import "strconv"

// ReserveCode is the business answer of reserve.lua. Network errors,
// timeouts, OOM, CROSSSLOT and NOSCRIPT are never ReserveCodes.
type ReserveCode int64

// Reserve codes (docs/ARCHITECTURE.md, "The path under test").
const (
	Accepted              ReserveCode = 0
	UserAlreadyReserved   ReserveCode = 10
	ActivityNotStarted    ReserveCode = 11
	ActivityEnded         ReserveCode = 12
	ActivityNotActive     ReserveCode = 13
	VersionMismatch       ReserveCode = 14
	SoldOut               ReserveCode = 15
	RequestIDConflict     ReserveCode = 16
	ConfigMissing         ReserveCode = 17
	ReservationIDConflict ReserveCode = 18
	InvariantViolation    ReserveCode = 19
	BadArgument           ReserveCode = 20

	// DuplicateRequest is never answered by reserve.lua: it is the answer
	// of a system under test (an adapter's DUPLICATE_REQUEST) that refuses
	// a request id it has seen before instead of repeating that request's
	// first answer. The contract says every answer to one request id
	// agrees, so the idempotency check (I5) counts every such answer as a
	// violation. Kept apart from the contract's codes (10-20).
	DuplicateRequest ReserveCode = 30
)

var reserveCodeNames = map[ReserveCode]string{
	Accepted:              "ACCEPTED",
	UserAlreadyReserved:   "USER_ALREADY_RESERVED",
	ActivityNotStarted:    "ACTIVITY_NOT_STARTED",
	ActivityEnded:         "ACTIVITY_ENDED",
	ActivityNotActive:     "ACTIVITY_NOT_ACTIVE",
	VersionMismatch:       "VERSION_MISMATCH",
	SoldOut:               "SOLD_OUT",
	RequestIDConflict:     "REQUEST_ID_CONFLICT",
	ConfigMissing:         "CONFIG_MISSING",
	ReservationIDConflict: "RESERVATION_ID_CONFLICT",
	InvariantViolation:    "INVARIANT_VIOLATION",
	BadArgument:           "BAD_ARGUMENT",
	DuplicateRequest:      "DUPLICATE_REQUEST",
}

// String is the code's name (ACCEPTED, SOLD_OUT, …) or CODE_<n> when unknown.
func (c ReserveCode) String() string {
	if n, ok := reserveCodeNames[c]; ok {
		return n
	}
	return "CODE_" + strconv.FormatInt(int64(c), 10)
}

// Known reports whether c is one of the contract's codes.
func (c ReserveCode) Known() bool { _, ok := reserveCodeNames[c]; return ok }

// ReserveCodes lists every reserve code a system under test can answer,
// in ascending order: the contract's (reserve.lua's) and DuplicateRequest.
func ReserveCodes() []ReserveCode {
	return []ReserveCode{Accepted, UserAlreadyReserved, ActivityNotStarted, ActivityEnded,
		ActivityNotActive, VersionMismatch, SoldOut, RequestIDConflict, ConfigMissing,
		ReservationIDConflict, InvariantViolation, BadArgument, DuplicateRequest}
}

// Status is a reservation's state.
type Status string

// Reservation statuses (spec §8.4).
const (
	StatusReserved       Status = "RESERVED"
	StatusSendUnknown    Status = "SEND_UNKNOWN"
	StatusEnqueued       Status = "ENQUEUED"
	StatusOrderCreated   Status = "ORDER_CREATED"
	StatusRejected       Status = "REJECTED"
	StatusReleasePending Status = "RELEASE_PENDING"
	StatusReleased       Status = "RELEASED"
)

// ActivityState is meta.state.
type ActivityState string

// Activity states.
const (
	StatePrepared ActivityState = "PREPARED"
	StateActive   ActivityState = "ACTIVE"
	StatePaused   ActivityState = "PAUSED"
	StateClosed   ActivityState = "CLOSED"
)

// TransitionCode is transition.lua's rc.
type TransitionCode int64

// Transition codes.
const (
	TransitionUpdated    TransitionCode = 0
	TransitionIdempotent TransitionCode = 1
	TransitionNotFound   TransitionCode = 2
	TransitionIllegal    TransitionCode = 3
	TransitionIDConflict TransitionCode = 4
)

// String is the code's name.
func (c TransitionCode) String() string {
	switch c {
	case TransitionUpdated:
		return "UPDATED"
	case TransitionIdempotent:
		return "IDEMPOTENT"
	case TransitionNotFound:
		return "NOT_FOUND"
	case TransitionIllegal:
		return "ILLEGAL_TRANSITION"
	case TransitionIDConflict:
		return "ID_CONFLICT"
	}
	return "CODE_" + strconv.FormatInt(int64(c), 10)
}

// CompensateCode is compensate.lua's rc.
type CompensateCode int64

// Compensate codes.
const (
	CompensateReleased           CompensateCode = 0
	CompensateAlreadyReleased    CompensateCode = 1
	CompensateNotFound           CompensateCode = 2
	CompensateNotCompensatable   CompensateCode = 3
	CompensateInvariantViolation CompensateCode = 4
	CompensateIDConflict         CompensateCode = 5
)

// String is the code's name.
func (c CompensateCode) String() string {
	switch c {
	case CompensateReleased:
		return "RELEASED"
	case CompensateAlreadyReleased:
		return "ALREADY_RELEASED"
	case CompensateNotFound:
		return "NOT_FOUND"
	case CompensateNotCompensatable:
		return "NOT_COMPENSATABLE"
	case CompensateInvariantViolation:
		return "INVARIANT_VIOLATION"
	case CompensateIDConflict:
		return "RESERVATION_ID_CONFLICT"
	}
	return "CODE_" + strconv.FormatInt(int64(c), 10)
}
