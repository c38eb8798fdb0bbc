package adapter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// System is an adapter file as the system under test (sut.System): the
// team's reserve script called as the file says, on the run's client. It
// is a sut.Provisioner when the file has setup: (teardown: removes the keys
// the file lists) and always a sut.StateReader exposing exactly the file's
// Facts.
//
// Error contract (lua.Store's): a script whose reply was lost is
// lua.ErrOutcomeUnknown — never re-sent behind the caller's back, as the
// run's client carries lua's no-re-send hook (lua.NewClusterClient) and
// every script is sent by lua.Script.Run (EVALSHA, EVAL on NOSCRIPT only);
// a Redis error means the script did not run; a reply mapped to ERROR or
// not covered by the mapping is a plain error (the path's, counted as an
// error of the path under test).
//
// Without release: in the file, Release answers ErrNoRelease; the planner
// sends no release operation to such a system (NoRelease).
type System struct {
	file    *File
	st      *lua.Store // the ids, and the run's script watchdog
	rdb     redis.UniversalClient
	scripts map[Op]*lua.Script
	setup   *lua.Script

	mu      sync.Mutex
	act     *lua.Activity
	reached map[string]reachedCall // reservation id -> the call that sent it
	// released are the reservations the release script answered RELEASED
	// or ALREADY_RELEASED, by bucket: a file's record read says whether a
	// record exists, not its status, so the system's own answers say which
	// are released (records RELEASED, the stock's released_total).
	released map[string]uint32
}

// reachedCall is what a reservation id was sent with: what teardown, the
// record read and the expiring keys need to render their templates.
type reachedCall struct {
	user, request string
	bucket        uint32
}

// ErrNoRelease is Release's error on a file without release:.
var ErrNoRelease = errors.New("the adapter file declares no release: script")

var (
	_ sut.System      = (*System)(nil)
	_ sut.Provisioner = (*System)(nil)
	_ sut.StateReader = (*System)(nil)
)

// NewSystem is f as the system under test on st's client (st derives the
// ids; its client must come from lua.NewClusterClient or lua.NewClient).
func NewSystem(f *File, st *lua.Store) *System {
	s := &System{file: f, st: st, rdb: st.Client(), scripts: map[Op]*lua.Script{}, reached: map[string]reachedCall{},
		released: map[string]uint32{}}
	for _, op := range []Op{OpReserve, OpRelease} {
		if sc := f.Script(op); sc != nil {
			s.scripts[op] = &lua.Script{Name: sc.Path, Source: sc.Source, SHA1: sc.SHA1}
		}
	}
	if sc := f.scripts["setup.script"]; sc != nil {
		s.setup = &lua.Script{Name: sc.Path, Source: sc.Source, SHA1: sc.SHA1}
	}
	return s
}

// File is the adapter file the system runs.
func (s *System) File() *File { return s.file }

// Name is the file's name.
func (s *System) Name() string { return s.file.Name }

// NoRelease reports whether the file has no release: script.
func (s *System) NoRelease() bool { return !s.file.Has(OpRelease) }

// activity is the activity Setup was given.
func (s *System) activity() (*lua.Activity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.act == nil {
		return nil, fmt.Errorf("adapter %s: no activity set up (the system sets its activity up itself: Setup)", s.file.Name)
	}
	return s.act, nil
}

// Reserve renders the reserve call, runs the script once and maps its reply.
func (s *System) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	a, err := s.activity()
	if err != nil {
		return lua.ReserveResult{}, err
	}
	keys, args, err := s.file.Render(OpReserve, CallValues(a, call))
	if err != nil {
		return lua.ReserveResult{}, fmt.Errorf("adapter %s: render the reserve call: %w", s.file.Name, err)
	}
	s.mu.Lock()
	s.reached[call.ReservationID] = reachedCall{call.UserID, call.RequestID, call.Scope.Bucket}
	s.mu.Unlock()
	raw, fellBack, attempts, err := s.run(ctx, s.scripts[OpReserve], keys, args)
	res := lua.ReserveResult{Attempts: attempts, EvalFallback: fellBack}
	if err != nil {
		return res, err
	}
	out, rid, err := s.file.MapReply(OpReserve, raw)
	if err != nil {
		return res, fmt.Errorf("adapter %s: reserve %w", s.file.Name, err)
	}
	code, ok := out.ReserveCode()
	if !ok {
		return res, fmt.Errorf("adapter %s: reserve reply %s maps to %s: the script gave no business answer", s.file.Name, formatReply(raw), out)
	}
	res.Code, res.ReservationID = code, rid
	if rid == "" && code == lua.Accepted {
		res.ReservationID = call.ReservationID // the mapping takes the id from the call
	}
	return res, nil
}

// run sends script with keys and args (lua.Script.Run: EVALSHA, EVAL on
// NOSCRIPT only) under the run's script watchdog (lua.Store.RunScript:
// a call over the limit or answered BUSY starts a SCRIPT KILL sweep, as
// for the reference's scripts) and counts the script commands written.
func (s *System) run(ctx context.Context, script *lua.Script, keys, args []string) (any, bool, int, error) {
	ws := lua.WireStatsFrom(ctx)
	if ws == nil {
		ws = &lua.WireStats{}
		ctx = lua.WithWireStats(ctx, ws)
	}
	before := ws.Attempts.Load()
	argv := make([]any, len(args))
	for i, a := range args {
		argv[i] = a
	}
	raw, fellBack, err := s.st.RunScript(ctx, script, keys, argv...)
	return raw, fellBack, int(ws.Attempts.Load() - before), err
}

// Resend returns call unchanged: the same request id, reservation id and
// message id (the harness's idempotency contract).
func (*System) Resend(call lua.ReserveCall, _ int) lua.ReserveCall { return call }

// Release runs the file's release script once for reservation rid of
// userID and maps its reply to a compensate code; ErrNoRelease without one.
func (s *System) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	script := s.scripts[OpRelease]
	if script == nil {
		return lua.CompensateResult{}, ErrNoRelease
	}
	a, err := s.activity()
	if err != nil {
		return lua.CompensateResult{}, err
	}
	v := ActivityValues(a, sc.Bucket)
	v.User, v.Reservation, v.Message, v.Amount, v.Reason = userID, rid, lua.MessageID(rid), 1, "harness-release"
	s.mu.Lock()
	v.Request = s.reached[rid].request
	s.mu.Unlock()
	keys, args, err := s.file.Render(OpRelease, v)
	if err != nil {
		return lua.CompensateResult{}, fmt.Errorf("adapter %s: render the release call: %w", s.file.Name, err)
	}
	raw, _, _, err := s.run(ctx, script, keys, args)
	if err != nil {
		return lua.CompensateResult{}, err
	}
	out, _, err := s.file.MapReply(OpRelease, raw)
	if err != nil {
		return lua.CompensateResult{}, fmt.Errorf("adapter %s: release %w", s.file.Name, err)
	}
	for c := lua.CompensateReleased; c <= lua.CompensateIDConflict; c++ {
		if c.String() != string(out) {
			continue
		}
		if c == lua.CompensateReleased || c == lua.CompensateAlreadyReleased {
			s.mu.Lock()
			s.released[rid] = sc.Bucket
			s.mu.Unlock()
		}
		return lua.CompensateResult{Code: c}, nil
	}
	return lua.CompensateResult{}, fmt.Errorf("adapter %s: release reply %s maps to %s: the script gave no business answer", s.file.Name, formatReply(raw), out)
}

// reachedCalls is a copy of every call sent so far, by reservation id.
func (s *System) reachedCalls() map[string]reachedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]reachedCall, len(s.reached))
	for k, v := range s.reached {
		out[k] = v
	}
	return out
}

// truthy is the state reads' truth rule: a reply that is not nil, 0 or "".
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case int64:
		return x != 0
	case string:
		return x != "" && x != "0"
	case bool:
		return x
	}
	return true
}

// asInt reads an integer reply (an integer, or a string of one).
func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	case nil:
		return 0, errors.New("nil (no such key or field)")
	}
	return 0, fmt.Errorf("%s is not an integer", formatReply(v))
}
