package history

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

// ErrClass is why an operation ended in ERROR.
type ErrClass uint8

// Error classes.
const (
	ErrNone        ErrClass = iota
	ErrClusterDown          // CLUSTERDOWN: slots uncovered or the cluster is failing
	ErrTryAgain             // TRYAGAIN: multi-key call while its slot migrates
	ErrRedirects            // MOVED/ASK still answered after go-redis' redirect budget
	ErrOOM                  // OOM command not allowed (noeviction at maxmemory)
	ErrNoScript             // NOSCRIPT that the EVAL fallback did not cure
	ErrCrossSlot            // CROSSSLOT: keys of one call in different slots
	ErrConnect              // could not reach the node (dial refused, pool timeout): never sent
	ErrMasterDown           // MASTERDOWN / LOADING / READONLY
	ErrOther
	// ErrNoReplicas: NOREPLICAS, the master refusing a write because fewer
	// than min-replicas-to-write replicas are in sync: the cluster's
	// mitigation at work, not an error of the path under test. (Last, so
	// the other classes keep their values.)
	ErrNoReplicas
	// ErrSystemBusy: a service under test answered fail-closed (the HTTP
	// contract's SYSTEM_BUSY: Redis unavailable, a slot without a master,
	// a circuit open): nothing was reserved. The service's degradation at
	// work, not an error of the path under test.
	ErrSystemBusy
	// ErrFailed: a service under test answered a definitive failure (the
	// HTTP contract's FAILED: not retryable, the request said to have no
	// effect). The contract has no such answer for a request that may
	// have run: a timeout is OUTCOME_UNKNOWN (check S4 compares each
	// FAILED with Redis).
	ErrFailed
)

var errClassNames = [...]string{"", "CLUSTERDOWN", "TRYAGAIN", "MOVED_ASK_EXHAUSTED", "OOM", "NOSCRIPT", "CROSSSLOT", "CONNECT", "MASTERDOWN", "OTHER", "NOREPLICAS", "SYSTEM_BUSY", "FAILED"}

func (c ErrClass) String() string {
	if int(c) < len(errClassNames) {
		return errClassNames[c]
	}
	return "OTHER"
}

// ErrClasses lists the error class names.
func ErrClasses() []string { return errClassNames[1:] }

// failedClosed is the error of a system that answered fail-closed: it
// refused the call and reserved nothing (sut.System's error contract).
type failedClosed interface{ FailedClosed() bool }

// definitiveFailure is the error of a system that answered the call
// failed for good (a service's FAILED): not retryable, no effect claimed.
type definitiveFailure interface{ DefinitiveFailure() bool }

// Classify turns the error of one send into an outcome. A nil error is not
// classified here. Lost replies and deadlines after the write are UNKNOWN.
func Classify(err error) (Outcome, ErrClass) {
	if lua.IsOutcomeUnknown(err) {
		return OutcomeUnknown, ErrNone
	}
	var fc failedClosed
	if errors.As(err, &fc) && fc.FailedClosed() {
		return OutcomeError, ErrSystemBusy
	}
	var df definitiveFailure
	if errors.As(err, &df) && df.DefinitiveFailure() {
		return OutcomeError, ErrFailed
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error() // Redis' own words: a wrapping ("look up request r1: …") must not hide the prefix
		switch {
		case strings.HasPrefix(msg, "CLUSTERDOWN"):
			return OutcomeError, ErrClusterDown
		case strings.HasPrefix(msg, "TRYAGAIN"):
			return OutcomeError, ErrTryAgain
		case strings.HasPrefix(msg, "MOVED"), strings.HasPrefix(msg, "ASK"):
			return OutcomeError, ErrRedirects
		case strings.HasPrefix(msg, "OOM"):
			return OutcomeError, ErrOOM
		case strings.HasPrefix(msg, "NOSCRIPT"):
			return OutcomeError, ErrNoScript
		case strings.HasPrefix(msg, "NOREPLICAS"):
			return OutcomeError, ErrNoReplicas
		case strings.HasPrefix(msg, "CROSSSLOT"):
			return OutcomeError, ErrCrossSlot
		case strings.HasPrefix(msg, "MASTERDOWN"), strings.HasPrefix(msg, "LOADING"), strings.HasPrefix(msg, "READONLY"):
			return OutcomeError, ErrMasterDown
		}
		return OutcomeError, ErrOther
	}
	// Every error of a script that reached a socket is ErrOutcomeUnknown
	// (the lua hook sees to it); what is left failed before the send: a
	// refused dial, a handshake cut, a pool timeout, a deadline while
	// waiting, or the caller's own cancel while waiting (the load's end
	// cutting an operation that waited for a connection): nothing was sent.
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) {
		return OutcomeError, ErrConnect
	}
	return OutcomeError, ErrOther
}
