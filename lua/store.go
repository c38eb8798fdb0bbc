package lua

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// Store runs the three scripts against a cluster (or one node) and decodes
// their replies. It is safe for concurrent use.
type Store struct {
	rdb     redis.UniversalClient
	scripts *Scripts
	secret  []byte
	macs    sync.Pool // of *macState keyed with secret: one HMAC state per call, reused
	watch   atomic.Pointer[Watchdog]

	constsMu sync.RWMutex
	consts   map[scopeConstsKey]*scopeConsts
}

// SetWatchdog makes w watch every script call of the store from now on
// (nil: none). Safe to call while calls are running.
func (s *Store) SetWatchdog(w *Watchdog) { s.watch.Store(w) }

// Watchdog is the store's watchdog (nil: none).
func (s *Store) Watchdog() *Watchdog { return s.watch.Load() }

// RunScript runs a script that is not one of the store's own (an adapter
// file's) on the store's client, under the store's watchdog like the
// store's scripts: EVALSHA, EVAL on NOSCRIPT only (Script.Run).
func (s *Store) RunScript(ctx context.Context, script *Script, keys []string, args ...any) (any, bool, error) {
	return s.run(ctx, script, keys, args...)
}

// run runs script under the watchdog, if any.
func (s *Store) run(ctx context.Context, script *Script, keys []string, args ...any) (any, bool, error) {
	watched := s.watch.Load().watch(script.Name)
	reply, fellBack, err := script.Run(ctx, s.rdb, keys, args...)
	watched.done(err)
	return reply, fellBack, err
}

// NewStore binds scripts to rdb. rdb should come from NewClusterClient or
// NewClient (or have been passed through Harden), otherwise go-redis may
// re-send a script whose reply was lost. secret keys the reservation ids.
func NewStore(rdb redis.UniversalClient, scripts *Scripts, secret []byte) *Store {
	if scripts == nil {
		scripts = Embedded()
	}
	s := &Store{rdb: rdb, scripts: scripts, secret: append([]byte(nil), secret...)}
	s.macs.New = func() any { return newMACState(s.secret) }
	return s
}

// Scripts returns the scripts the store runs.
func (s *Store) Scripts() *Scripts { return s.scripts }

// Client returns the underlying client.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Secret returns (a copy of) the secret that keys the reservation ids: a
// service started on the store's cluster derives the same ids with it.
func (s *Store) Secret() []byte { return append([]byte(nil), s.secret...) }

// ReserveCall is everything one reserve.lua call sends. Build it with
// NewReserveCall; a retry of an unknown outcome must send the same value.
type ReserveCall struct {
	Scope         Scope
	UserID        string
	RequestID     string
	ReservationID string
	MessageID     string
	TTLMs         int64
	SchemaVersion string
	NowMs         int64 // 0: the script uses Redis TIME
}

// Keys returns the eight KEYS of the call, in the contract's order.
func (c ReserveCall) Keys() []string {
	return []string{
		c.Scope.MetaKey(), c.Scope.StockKey(), c.Scope.ReqShardKey(c.RequestID),
		c.Scope.UserKey(c.UserID), c.Scope.ResvKey(c.ReservationID),
		c.Scope.SendPendingKey(), c.Scope.ExpiryKey(), c.Scope.SoldoutKey(),
	}
}

// Args returns the eleven ARGV of the call, in the contract's order.
func (c ReserveCall) Args() []any {
	return []any{
		c.RequestID, c.ReservationID, c.Scope.ActivityID, c.Scope.SKUID, c.UserID,
		strconv.FormatInt(c.Scope.Version, 10), c.TTLMs, c.SchemaVersion,
		strconv.FormatUint(uint64(c.Scope.Bucket), 10), c.MessageID, c.NowMs,
	}
}

// scopeConsts are the KEYS and ARGV a reserve call shares with every
// other call of its scope (and schema version), built and boxed once: a
// call then builds only its two own keys. prefix is the scope's key
// prefix (seckill:{<hash tag>}:), reqShards its 256 request-result keys.
type scopeConsts struct {
	sha                                       any // reserve.lua's SHA1 (EVALSHA's first argument)
	meta, stock, sendPending, expiry, soldout any
	activityID, sku, version, schema, bucket  any
	prefix                                    string
	reqShards                                 [RequestShards]any
}

type scopeConstsKey struct {
	scope  Scope
	schema string
}

// constsOf returns the shared parts of sc's reserve calls.
func (s *Store) constsOf(sc Scope, schema string) *scopeConsts {
	k := scopeConstsKey{sc, schema}
	s.constsMu.RLock()
	c := s.consts[k]
	s.constsMu.RUnlock()
	if c != nil {
		return c
	}
	c = &scopeConsts{sha: s.scripts.Reserve.SHA1, meta: sc.MetaKey(), stock: sc.StockKey(), sendPending: sc.SendPendingKey(),
		expiry: sc.ExpiryKey(), soldout: sc.SoldoutKey(), activityID: sc.ActivityID, sku: sc.SKUID,
		version: strconv.FormatInt(sc.Version, 10), schema: schema, bucket: strconv.FormatUint(uint64(sc.Bucket), 10),
		prefix: sc.Key("")}
	for n := range c.reqShards {
		c.reqShards[n] = sc.ReqShardKeyN(n)
	}
	s.constsMu.Lock()
	if s.consts == nil {
		s.consts = map[scopeConstsKey]*scopeConsts{}
	}
	s.consts[k] = c
	s.constsMu.Unlock()
	return c
}

// reserveWire is one reserve call's command as go-redis writes it: the
// argument slice and every per-call value it points to, in one
// allocation. The per-call strings are referenced as *string and *int64
// (which go-redis writes as their values), so none is boxed on its own;
// the first key (the slot go-redis routes by) is a plain string.
type reserveWire struct {
	argv                [22]any
	probe               writeProbe
	userKey, resvKey    string
	rid, uid, messageID string
	ttlMs, nowMs        int64
	keyBuf              [wireKeyBuf]byte // the two keys' bytes, when they fit
}

// wireKeyBuf holds both per-call keys of a usual call (a prefix of tens
// of bytes, short user and reservation ids) inside the reserveWire.
const wireKeyBuf = 192

// reserveArgv is the whole EVALSHA command of call for Script.runArgv:
// ["evalsha", SHA1, 8, call.Keys()…, call.Args()…], the shared parts (and the
// SHA1, boxed once) from the scope's
// cache and the write probe standing for ARGV[1] (see Script.Run): the same
// values, with one allocation (the reserveWire, holding its two keys'
// bytes unless they are longer than wireKeyBuf).
func (s *Store) reserveArgv(call ReserveCall) []any {
	sc := call.Scope
	c := s.constsOf(sc, call.SchemaVersion)
	w := &reserveWire{rid: call.ReservationID, uid: call.UserID, messageID: call.MessageID, ttlMs: call.TTLMs, nowMs: call.NowMs}
	w.probe.s = call.RequestID
	// user:<user> and resv:<reservation> after the prefix, in one buffer.
	n := len(c.prefix) + len("user:") + len(call.UserID)
	b := w.keyBuf[:0]
	if total := n + len(c.prefix) + len("resv:") + len(call.ReservationID); total > len(w.keyBuf) {
		b = make([]byte, 0, total)
	}
	b = append(append(append(b, c.prefix...), "user:"...), call.UserID...)
	b = append(append(append(b, c.prefix...), "resv:"...), call.ReservationID...)
	keys := unsafe.String(unsafe.SliceData(b), len(b))
	w.userKey, w.resvKey = keys[:n], keys[n:]
	w.argv = [22]any{"evalsha", c.sha, 8,
		c.meta, c.stock, c.reqShards[RequestShard(call.RequestID)], &w.userKey,
		&w.resvKey, c.sendPending, c.expiry, c.soldout,
		&w.probe, &w.rid, c.activityID, c.sku, &w.uid,
		c.version, &w.ttlMs, c.schema, c.bucket, &w.messageID, &w.nowMs}
	return w.argv[:]
}

// NewReserveCall validates the ids and derives bucket, reservation_id and
// message_id for one request of userID against activity a.
func (s *Store) NewReserveCall(a *Activity, userID, requestID string, ttl time.Duration) (ReserveCall, error) {
	if err := ValidateID("user_id", userID); err != nil {
		return ReserveCall{}, err
	}
	if err := ValidateID("request_id", requestID); err != nil {
		return ReserveCall{}, err
	}
	if ttl <= 0 {
		return ReserveCall{}, fmt.Errorf("reservation TTL must be positive, got %s", ttl)
	}
	m := s.macs.Get().(*macState)
	rid, msgID := m.reservationAndMessageID(a.ID, a.SKU, userID, requestID)
	s.macs.Put(m)
	return ReserveCall{
		Scope:         a.Scope(a.BucketOf(userID)),
		UserID:        userID,
		RequestID:     requestID,
		ReservationID: rid,
		MessageID:     msgID,
		TTLMs:         ttl.Milliseconds(),
		SchemaVersion: a.SchemaVersion,
	}, nil
}

// ReservationIDFor is the reservation id this store derives for userID's
// requestID in activity a (what reserve.lua will create for that request).
func (s *Store) ReservationIDFor(a *Activity, userID, requestID string) string {
	m := s.macs.Get().(*macState)
	id := m.reservationID(a.ID, a.SKU, userID, requestID)
	s.macs.Put(m)
	return id
}

// ReserveResult is reserve.lua's answer plus what the call did on the wire.
type ReserveResult struct {
	Code          ReserveCode
	ReservationID string
	Remaining     int64
	Status        string
	Replay        bool
	// Counted: Remaining is the count the reply carried (reserve.lua's
	// reply always does); false for a system whose answers do not carry
	// one, whose Remaining is then meaningless.
	Counted bool
	// Attempts is the number of script commands written for this call
	// (EVALSHA + EVAL fallback + redirects); EvalFallback is set when the node
	// answered NOSCRIPT and the source was sent.
	Attempts     int
	EvalFallback bool
	// Wait is what WAIT said after an ACCEPTED answer, when the call's
	// context carried a WaitRequest (see WithWait); zero otherwise.
	Wait WaitOutcome
}

// Reserve runs reserve.lua once. A nil error means Redis answered with a
// business code (any code, including SOLD_OUT or INVARIANT_VIOLATION). Errors:
// ErrOutcomeUnknown (the reply was lost: re-send the same call or look the
// request up), a Redis error (TRYAGAIN, CLUSTERDOWN, OOM, CROSSSLOT, …: the
// script did not run), or a reply that does not fit the contract. Attempts is
// filled in every case. With a WaitRequest in ctx (WithWait) a fresh
// ACCEPTED is followed by WAIT on the connection that ran the script, and
// the call returns after WAIT's reply (Wait holds it).
func (s *Store) Reserve(ctx context.Context, call ReserveCall) (ReserveResult, error) {
	ws, ctx := ensureWireStats(ctx)
	before := ws.Attempts.Load()
	watched := s.watch.Load().watch(s.scripts.Reserve.Name)
	req := waitRequestFrom(ctx)
	if req != nil && watched.t != nil {
		req.scriptAnswered = func() { watched.t.Stop() } // WAIT's time is not the script's
	}
	raw, fellBack, err := s.scripts.Reserve.runArgv(ctx, s.rdb, s.reserveArgv(call))
	watched.done(err)
	res := ReserveResult{Attempts: int(ws.Attempts.Load() - before), EvalFallback: fellBack}
	if req != nil {
		res.Wait = req.Outcome()
	}
	if err != nil {
		return res, err
	}
	vals, ok := raw.([]any)
	if !ok || len(vals) != 5 {
		return res, fmt.Errorf("reserve.lua reply %#v: want {code, reservation_id, remaining, status, replay}", raw)
	}
	code, err1 := asInt64(vals[0])
	remaining, err2 := asInt64(vals[2])
	replay, err3 := asInt64(vals[4])
	if err := errors.Join(err1, err2, err3); err != nil {
		return res, fmt.Errorf("reserve.lua reply %#v: %w", raw, err)
	}
	res.Code = ReserveCode(code)
	res.ReservationID = asString(vals[1])
	res.Remaining, res.Counted = remaining, true
	res.Status = asString(vals[3])
	res.Replay = replay == 1
	return res, nil
}

// RetryPolicy bounds ReserveRetry.
type RetryPolicy struct {
	MaxSends int           // total sends including the first; <= 0 means 3
	Backoff  time.Duration // pause before each re-send; 0 means 20ms
}

// Retryable reports whether re-sending the same call is both safe and useful:
// the outcome is unknown, the call never reached a socket (refused dial, cut
// handshake, pool timeout), or Redis refused without running the script for a
// transient reason (TRYAGAIN, CLUSTERDOWN, MASTERDOWN, LOADING).
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if IsOutcomeUnknown(err) {
		return true
	}
	if !isRedisError(err) {
		return true // never sent: with this package's clients every sent script's failure is ErrOutcomeUnknown
	}
	msg := err.Error()
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "LOADING"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// ReserveRetry sends call and, while the error is Retryable, re-sends the very
// same call (same request_id, reservation_id and message_id — never a new
// request) up to p.MaxSends times. It returns the last result and error and
// the number of sends; the result's Attempts sums every send's wire attempts.
func (s *Store) ReserveRetry(ctx context.Context, call ReserveCall, p RetryPolicy) (ReserveResult, int, error) {
	if p.MaxSends <= 0 {
		p.MaxSends = 3
	}
	if p.Backoff <= 0 {
		p.Backoff = 20 * time.Millisecond
	}
	total := 0
	fell := false
	for send := 1; ; send++ {
		res, err := s.Reserve(ctx, call)
		total += res.Attempts
		fell = fell || res.EvalFallback
		res.Attempts, res.EvalFallback = total, fell
		if !Retryable(err) || send >= p.MaxSends || ctx.Err() != nil {
			return res, send, err
		}
		t := time.NewTimer(p.Backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, send, err
		case <-t.C:
		}
	}
}

// TransitionArgs are transition.lua's ARGV after reservation_id.
type TransitionArgs struct {
	Target        Status
	NowMs         int64 // 0: Redis TIME
	NextRetryAtMs int64 // for SEND_UNKNOWN; 0: now
	MessageID     string
	OrderID       string
	ErrorCode     string
}

// TransitionResult is transition.lua's answer.
type TransitionResult struct {
	Code     TransitionCode
	Previous Status
	Target   Status
}

// Transition runs transition.lua on one reservation of scope. A nil error
// means the script answered; errors are as for Reserve.
func (s *Store) Transition(ctx context.Context, scope Scope, reservationID string, a TransitionArgs) (TransitionResult, error) {
	keys := []string{scope.ResvKey(reservationID), scope.SendPendingKey(), scope.ExpiryKey()}
	raw, _, err := s.run(ctx, s.scripts.Transition, keys,
		reservationID, string(a.Target), a.NowMs, a.NextRetryAtMs, a.MessageID, a.OrderID, a.ErrorCode)
	if err != nil {
		return TransitionResult{}, err
	}
	vals, ok := raw.([]any)
	if !ok || len(vals) != 3 {
		return TransitionResult{}, fmt.Errorf("transition.lua reply %#v: want {rc, previous_status, target}", raw)
	}
	rc, err := asInt64(vals[0])
	if err != nil {
		return TransitionResult{}, fmt.Errorf("transition.lua reply %#v: %w", raw, err)
	}
	return TransitionResult{Code: TransitionCode(rc), Previous: Status(asString(vals[1])), Target: Status(asString(vals[2]))}, nil
}

// CompensateResult is compensate.lua's answer.
type CompensateResult struct {
	Code      CompensateCode
	Available int64
	// Counted: Available is the count the reply carried (compensate.lua's
	// reply always does).
	Counted       bool
	MarkerDeleted bool
	Status        string
}

// Compensate runs compensate.lua for one reservation of userID in scope.
// A nil error means the script answered; errors are as for Reserve.
func (s *Store) Compensate(ctx context.Context, scope Scope, userID, reservationID, reason string, nowMs int64) (CompensateResult, error) {
	keys := []string{scope.StockKey(), scope.UserKey(userID), scope.ResvKey(reservationID),
		scope.SendPendingKey(), scope.ExpiryKey(), scope.SoldoutKey()}
	raw, _, err := s.run(ctx, s.scripts.Compensate, keys, reservationID, reason, nowMs)
	if err != nil {
		return CompensateResult{}, err
	}
	vals, ok := raw.([]any)
	if !ok || len(vals) != 4 {
		return CompensateResult{}, fmt.Errorf("compensate.lua reply %#v: want {rc, available, marker_deleted, status}", raw)
	}
	rc, err1 := asInt64(vals[0])
	avail, err2 := asInt64(vals[1])
	del, err3 := asInt64(vals[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return CompensateResult{}, fmt.Errorf("compensate.lua reply %#v: %w", raw, err)
	}
	return CompensateResult{Code: CompensateCode(rc), Available: avail, Counted: true, MarkerDeleted: del == 1, Status: asString(vals[3])}, nil
}

// RequestResult is a cached answer of one request_id, as the script packed it:
// code|reservation_id|remaining|status|user_id.
type RequestResult struct {
	Code          ReserveCode
	ReservationID string
	Remaining     int64
	Status        string
	UserID        string
}

// ParseRequestResult decodes a packed request result.
func ParseRequestResult(packed string) (RequestResult, error) {
	f := strings.Split(packed, "|")
	if len(f) != 5 {
		return RequestResult{}, fmt.Errorf("request result %q: want 5 fields separated by |", packed)
	}
	code, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return RequestResult{}, fmt.Errorf("request result %q: code: %w", packed, err)
	}
	rem, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return RequestResult{}, fmt.Errorf("request result %q: remaining: %w", packed, err)
	}
	return RequestResult{Code: ReserveCode(code), ReservationID: f[1], Remaining: rem, Status: f[3], UserID: f[4]}, nil
}

// LookupRequest reads the cached result of requestID in scope (one HGET).
// found is false when the request never executed (or its result expired).
// This is how an UNKNOWN outcome is resolved without re-sending.
func (s *Store) LookupRequest(ctx context.Context, scope Scope, requestID string) (res RequestResult, found bool, err error) {
	v, err := s.rdb.HGet(ctx, scope.ReqShardKey(requestID), requestID).Result()
	if errors.Is(err, redis.Nil) {
		return RequestResult{}, false, nil
	}
	if err != nil {
		return RequestResult{}, false, fmt.Errorf("look up request %s: %w", requestID, err)
	}
	res, err = ParseRequestResult(v)
	return res, err == nil, err
}

// Reservation is a reservation record (the resv hash).
type Reservation struct {
	ReservationID, RequestID, MessageID, ActivityID, SKUID, UserID string
	ActivityVersion                                                int64
	Bucket                                                         uint32
	Status                                                         Status
	ReservedAtMs, ExpiresAtMs, UpdatedAtMs                         int64
	OrderID, ErrorCode, ReleaseReason, SchemaVersion               string
}

// ReadReservation reads one reservation record (one HGETALL). found is false
// when the key does not exist.
func (s *Store) ReadReservation(ctx context.Context, scope Scope, reservationID string) (r Reservation, found bool, err error) {
	m, err := s.rdb.HGetAll(ctx, scope.ResvKey(reservationID)).Result()
	if err != nil {
		return Reservation{}, false, fmt.Errorf("read reservation %s: %w", reservationID, err)
	}
	if len(m) == 0 {
		return Reservation{}, false, nil
	}
	i64 := func(k string) int64 { n, _ := strconv.ParseInt(m[k], 10, 64); return n }
	return Reservation{
		ReservationID: m["reservation_id"], RequestID: m["request_id"], MessageID: m["message_id"],
		ActivityID: m["activity_id"], SKUID: m["sku_id"], UserID: m["user_id"],
		ActivityVersion: i64("activity_version"), Bucket: uint32(i64("bucket_id")),
		Status: Status(m["status"]), ReservedAtMs: i64("reserved_at_ms"), ExpiresAtMs: i64("expires_at_ms"),
		UpdatedAtMs: i64("updated_at_ms"), OrderID: m["order_id"], ErrorCode: m["error_code"],
		ReleaseReason: m["release_reason"], SchemaVersion: m["schema_version"],
	}, true, nil
}

func ensureWireStats(ctx context.Context) (*WireStats, context.Context) {
	if ws := WireStatsFrom(ctx); ws != nil {
		return ws, ctx
	}
	ws := &WireStats{}
	return ws, WithWireStats(ctx, ws)
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func asInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	case []byte:
		return strconv.ParseInt(string(x), 10, 64)
	}
	return 0, fmt.Errorf("want an integer, got %T", v)
}
