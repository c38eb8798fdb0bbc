package httpsut

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/sut"
)

// unknownError is an outcome the service did not tell: no answer within
// the deadline, a cut reply, or OUTCOME_UNKNOWN. errors.Is(err,
// lua.ErrOutcomeUnknown) holds.
type unknownError struct{ why string }

func (e *unknownError) Error() string { return "outcome unknown: " + e.why }

// Is makes errors.Is(err, lua.ErrOutcomeUnknown) true.
func (e *unknownError) Is(target error) bool { return target == lua.ErrOutcomeUnknown }

// BusyError is a SYSTEM_BUSY answer: the service failed closed and
// reserved nothing. It is retryable (the engine re-sends the same
// request); a busy answer that says retryable=false is a RefusedError.
type BusyError struct{ Status int }

func (e *BusyError) Error() string {
	return fmt.Sprintf("SYSTEM_BUSY (HTTP %d): the service failed closed, nothing reserved", e.Status)
}

// FailedClosed is true: the engine counts it as SYSTEM_BUSY, not as an
// error of the path (sut.System's error contract).
func (e *BusyError) FailedClosed() bool { return true }

// RefusedError is an answer that refused the request and must not be
// re-sent: INVALID, a SYSTEM_BUSY with retryable=false, or an answer the
// mapping cannot read. Like a Redis error, it means the call did not run
// (RedisError marks it so: lua.Retryable is false for it).
type RefusedError struct {
	Msg  string
	busy bool
}

func (e *RefusedError) Error() string { return e.Msg }

// RedisError marks a refusal: the call did not run, and is not re-sent.
func (e *RefusedError) RedisError() {}

// FailedClosed is true for a SYSTEM_BUSY answer.
func (e *RefusedError) FailedClosed() bool { return e.busy }

// FailedError is a FAILED answer: the service says the request failed
// for good and had no effect. Like a refusal it is not re-sent; the
// engine counts it in error class FAILED, which check S4 compares with
// what Redis recorded for the request.
type FailedError struct{ Status int }

func (e *FailedError) Error() string {
	return fmt.Sprintf("FAILED (HTTP %d): the service answered a definitive failure", e.Status)
}

// RedisError marks it as not re-sent: the service said the call had no effect.
func (e *FailedError) RedisError() {}

// DefinitiveFailure is true: error class FAILED.
func (e *FailedError) DefinitiveFailure() bool { return true }

// Reserve sends call to the submit endpoint once and maps the answer; an
// UNKNOWN outcome is looked up through the query endpoint when mapped.
func (s *System) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	a, err := s.activity()
	if err != nil {
		return lua.ReserveResult{}, err
	}
	t, err := s.target(s.m.Submit, values(a, call.UserID, call.RequestID, call.ReservationID))
	if err != nil {
		return lua.ReserveResult{}, err
	}
	if s.m.Query != nil {
		s.mu.Lock()
		s.users[call.RequestID] = call.UserID
		s.mu.Unlock()
	}
	res := lua.ReserveResult{Attempts: 1}
	status, body, timedOut, err := s.send(ctx, t)
	if timedOut {
		s.note(func(au *sut.Answers) { au.TimedOut++ })
		return s.resolve(ctx, a, call, res, &unknownError{fmt.Sprintf("no answer within %s: %v", s.m.timeout, err)})
	}
	if err != nil {
		return res, fmt.Errorf("service: %s %s not sent: %w", t.Method, t.URL, err)
	}
	ans, err := s.m.decode(status, body, s.m.Codes)
	s.audit1(call.RequestID, ans)
	if err != nil {
		return res, &RefusedError{Msg: "service: " + err.Error()}
	}
	switch ans.Meaning {
	case Unknown:
		return s.resolve(ctx, a, call, res, &unknownError{fmt.Sprintf("the service answered %s (HTTP %d)", orStatus(ans), status)})
	case Failed:
		return res, &FailedError{Status: status}
	case Busy:
		if ans.HasRetry && !ans.Retryable {
			return res, &RefusedError{Msg: fmt.Sprintf("SYSTEM_BUSY (HTTP %d) with retryable=false", status), busy: true}
		}
		return res, &BusyError{Status: status}
	case Invalid:
		return res, &RefusedError{Msg: fmt.Sprintf("service: INVALID (HTTP %d): %s", status, snippet(body))}
	case lua.SoldOut.String():
		if ans.Local {
			return res, sut.ErrAnsweredLocally // LOCAL_SOLD_OUT: the service's flag, not Redis
		}
	}
	return s.result(res, ans, call)
}

func orStatus(a answer) string {
	if a.Code != "" {
		return a.Code
	}
	return http.StatusText(a.Status)
}

// result is the reserve result of an answer with a reserve code.
func (s *System) result(res lua.ReserveResult, ans answer, call lua.ReserveCall) (lua.ReserveResult, error) {
	for _, c := range lua.ReserveCodes() {
		if c.String() == ans.Meaning {
			res.Code, res.ReservationID = c, ans.RID
			if c == lua.Accepted && res.ReservationID == "" {
				res.ReservationID = call.ReservationID // the answer says ACCEPTED without the id: the call's
			}
			if c == lua.Accepted && res.ReservationID != call.ReservationID {
				s.mu.Lock()
				s.rids[call.ReservationID] = res.ReservationID // the engine releases by the id it derives
				s.mu.Unlock()
			}
			return res, nil
		}
	}
	return res, &RefusedError{Msg: fmt.Sprintf("service: code %q maps to %q, no reserve answer", ans.Code, ans.Meaning)}
}

// resolve looks an UNKNOWN outcome up through the query endpoint (when
// mapped and time is left): an answer with a reserve code resolves it,
// anything else leaves it unknown (a failed query never asks for a new
// request: the engine re-sends the same one).
func (s *System) resolve(ctx context.Context, a *lua.Activity, call lua.ReserveCall, res lua.ReserveResult, unknown error) (lua.ReserveResult, error) {
	if s.m.Query == nil || ctx.Err() != nil {
		return res, unknown
	}
	rr, found, err := s.Query(ctx, a, call.UserID, call.RequestID)
	if err != nil || !found {
		return res, unknown
	}
	out, err := s.result(res, answer{Meaning: rr.Code.String(), RID: rr.ReservationID}, call)
	if err != nil {
		return res, unknown
	}
	s.note(func(*sut.Answers) { s.resolved++ })
	out.Replay = true // the answer of an earlier execution
	return out, nil
}

var _ sut.Querier = (*System)(nil)

// Query asks the query endpoint what became of request (sut.Querier, the
// load's status queries): an answer whose code means a reserve code is
// found, NOT_FOUND (a code mapped to it, or HTTP 404 with no code, code
// NOT_FOUND or one the mapping does not map) is not; no answer
// within the deadline is lua.ErrOutcomeUnknown; SYSTEM_BUSY,
// OUTCOME_UNKNOWN, INVALID and a code without a reserve meaning are
// refusals (the query said nothing of the request).
func (s *System) Query(ctx context.Context, a *lua.Activity, user, request string) (lua.RequestResult, bool, error) {
	if s.m.Query == nil {
		return lua.RequestResult{}, false, &RefusedError{Msg: "service: the mapping has no query endpoint"}
	}
	t, err := s.target(s.m.Query, values(a, user, request, ""))
	if err != nil {
		return lua.RequestResult{}, false, err
	}
	s.note(func(*sut.Answers) { s.queries++ })
	status, body, timedOut, err := s.send(ctx, t)
	switch {
	case timedOut:
		return lua.RequestResult{}, false, &unknownError{fmt.Sprintf("query: no answer within %s: %v", s.m.timeout, err)}
	case err != nil:
		return lua.RequestResult{}, false, fmt.Errorf("service: query %s %s not sent: %w", t.Method, t.URL, err)
	}
	ans, err := s.m.decode(status, body, s.m.Codes)
	if status == http.StatusNotFound && (err != nil || ans.Code == "" || ans.Code == NotFound) {
		ans.Meaning, err = NotFound, nil // the contract's 404 {"code":"NOT_FOUND"}
	}
	switch {
	case err != nil:
		return lua.RequestResult{}, false, &RefusedError{Msg: "service: query: " + err.Error()}
	case ans.Meaning == NotFound:
		return lua.RequestResult{}, false, nil
	}
	for _, c := range lua.ReserveCodes() {
		if c.String() == ans.Meaning {
			return lua.RequestResult{Code: c, ReservationID: ans.RID, Remaining: -1, UserID: user}, true, nil
		}
	}
	return lua.RequestResult{}, false, &RefusedError{Msg: fmt.Sprintf("service: query answered %s (HTTP %d), no reserve answer", orStatus(ans), status), busy: ans.Meaning == Busy}
}

// note changes the audit under the lock.
func (s *System) note(f func(*sut.Answers)) {
	s.mu.Lock()
	f(&s.audit)
	s.mu.Unlock()
}

// audit1 records one answer to request: its meaning, and what breaks the
// contract (a SYSTEM_BUSY without retryable=true, another request's id).
func (s *System) audit1(request string, ans answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	au := &s.audit
	au.Total++
	switch {
	case ans.Local && ans.Meaning == lua.SoldOut.String():
		s.answers["SOLD_OUT (local flag)"]++
	case ans.Meaning != "":
		s.answers[ans.Meaning]++
	}
	example := func(what string) {
		if len(au.Examples) < maxExamples {
			au.Examples = append(au.Examples, fmt.Sprintf("request %s: %s", request, what))
		}
	}
	switch ans.Meaning {
	case Unknown:
		au.Unknown++
	case Failed:
		au.Failed++
	}
	if ans.Meaning == Busy {
		au.Busy++
		if !ans.Retryable {
			au.BusyNotRetryable++
			example(fmt.Sprintf("SYSTEM_BUSY (HTTP %d) without retryable=true", ans.Status))
		}
	}
	if ans.RequestID != request && (ans.RequestID != "" || ans.Meaning == Busy) {
		au.WrongRequestID++
		if ans.Meaning == Busy {
			au.BusyWrongRequestID++
		}
		example(fmt.Sprintf("%s answered with request_id %q", orStatus(ans), ans.RequestID))
	}
}

// Resend returns call unchanged: the same request_id (and the ids derived
// from it), as the HTTP contract demands of a retry.
func (*System) Resend(call lua.ReserveCall, _ int) lua.ReserveCall { return call }

// ErrNoRelease is Release's error when the mapping has no release endpoint.
var ErrNoRelease = errors.New("the service mapping has no release endpoint")

// Release sends the release endpoint once for reservation rid of userID
// (the id the harness derives; the service's own when its ACCEPTED named
// another).
func (s *System) Release(ctx context.Context, _ lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	if s.m.Release == nil {
		return lua.CompensateResult{}, ErrNoRelease
	}
	a, err := s.activity()
	if err != nil {
		return lua.CompensateResult{}, err
	}
	s.mu.Lock()
	if own, ok := s.rids[rid]; ok {
		rid = own // the service named the reservation otherwise
	}
	s.mu.Unlock()
	t, err := s.target(s.m.Release, values(a, userID, "", rid))
	if err != nil {
		return lua.CompensateResult{}, err
	}
	status, body, timedOut, err := s.send(ctx, t)
	switch {
	case timedOut:
		return lua.CompensateResult{}, &unknownError{fmt.Sprintf("release: no answer within %s: %v", s.m.timeout, err)}
	case err != nil:
		return lua.CompensateResult{}, fmt.Errorf("service: %s %s not sent: %w", t.Method, t.URL, err)
	}
	ans, err := s.m.decode(status, body, s.m.ReleaseCodes)
	if err != nil {
		return lua.CompensateResult{}, &RefusedError{Msg: "service: release " + err.Error()}
	}
	switch ans.Meaning {
	case Unknown:
		return lua.CompensateResult{}, &unknownError{"release: the service answered " + orStatus(ans)}
	case Busy:
		return lua.CompensateResult{}, &BusyError{Status: status}
	}
	for c := lua.CompensateReleased; c <= lua.CompensateIDConflict; c++ {
		if c.String() == ans.Meaning {
			return lua.CompensateResult{Code: c}, nil
		}
	}
	return lua.CompensateResult{}, &RefusedError{Msg: fmt.Sprintf("service: release answered %q (HTTP %d), no compensate code", ans.Code, status)}
}

// Answers is what the answers showed so far.
func (s *System) Answers() *sut.Answers {
	s.mu.Lock()
	defer s.mu.Unlock()
	au := s.audit
	au.Examples = append([]string(nil), s.audit.Examples...)
	return &au
}

// ServiceSection is report.json's service section as of now.
func (s *System) ServiceSection() *reports.ServiceSection {
	s.mu.Lock()
	defer s.mu.Unlock()
	vm := s.vm
	vm.StatusCodes = make(map[string]int, len(s.vm.StatusCodes))
	for k, v := range s.vm.StatusCodes {
		vm.StatusCodes[k] = v
	}
	vm.Errors = append([]string(nil), s.vm.Errors...)
	vm.Close()
	answers := make(map[string]int64, len(s.answers))
	for k, v := range s.answers {
		answers[k] = v
	}
	return &reports.ServiceSection{URL: s.base, Policy: s.m.Policy(), TimeoutMs: ms(s.m.timeout), Resends: s.m.Retry.Sends,
		BackoffMs: ms(s.m.backoff), Answers: answers, Timeouts: s.audit.TimedOut, Queries: s.queries, Resolved: s.resolved, Vegeta: &vm}
}
