package sut

import (
	"context"
	"errors"
	"time"

	"seckill-harness/lua"
	"seckill-harness/reports"
)

// Service is the ability of a system reached over HTTP (a running access
// service) to say what it answered: the report's service section and the
// facts of the service-level checks, which only its answers show.
type Service interface {
	// ServiceSection is report.json's service section, as of now.
	ServiceSection() *reports.ServiceSection
	// Answers is what the service's answers showed, as of now.
	Answers() *Answers
}

// Answers are the facts of a service's answers that the history does not
// keep: the contract fields of each answer, and which requests got none.
type Answers struct {
	// Deadline is the per-request deadline the client gave every request.
	Deadline time.Duration
	// Total counts the answers (HTTP responses) to reserve requests.
	Total int64
	// TimedOut counts the requests that got no answer within the deadline.
	TimedOut int64
	// Busy counts the SYSTEM_BUSY answers; BusyNotRetryable those without
	// retryable=true; WrongRequestID the answers (of any code) whose
	// request_id is not the request's own, BusyWrongRequestID the busy
	// ones among them.
	Busy, BusyNotRetryable, WrongRequestID, BusyWrongRequestID int64
	// Unknown counts the OUTCOME_UNKNOWN answers (the service could not
	// tell: its own timeout or a lost reply); Failed the definitive
	// failures (FAILED, not retryable) it answered.
	Unknown, Failed int64
	// Examples are the first few offending answers, in words.
	Examples []string
}

// ErrNoState is the error of a state read of a system that keeps no
// state the harness can read (a service without state: reference).
var ErrNoState = errors.New("the system under test keeps no state the harness can read")

// RequestLister is the ability to list every request id a system cached
// for an activity (the reference contract's request shards): what
// no-new-request-id compares with the ids the harness sent.
type RequestLister interface {
	// ListRequestIDs returns, per bucket, the request ids cached.
	ListRequestIDs(ctx context.Context, a *lua.Activity) (map[uint32][]string, error)
}
