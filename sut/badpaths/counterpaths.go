package badpaths

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// counterPath is the reserve path as a team writes it without one atomic
// script: plain commands, one round trip each, on the very keys of the
// contract (stock hash, user marker, reservation record, both zsets, the
// request-result shard, soldout), answering the contract's reply tuple.
//
//   - get-then-decr (spec §4, anti-pattern §2.1 "先GET stock，判断大于 0，
//     然后DECR stock"): HGET available → compare → HINCRBY available -1 →
//     HINCRBY reserved +1 → SET user marker NX (taken: give the unit back,
//     answer USER_ALREADY_RESERVED) → write the record, both zsets and the
//     request result. Two clients that both read 1 both take it: oversell.
//   - decr-then-incr (spec §4.1 "DECR stock，如果结果 < 0，再 INCR 补回";
//     anti-pattern §2.1): HINCRBY available -1 first; negative → HINCRBY +1
//     back and SOLD_OUT; otherwise as above. The counter never oversells,
//     but between the DECR and the INCR (a round trip) the negative stock
//     is visible to every reader, and during the reserved +1 round trip
//     available + reserved != initial.
//
// Neither looks at the request-result cache (the specification's baseline has none);
// both write it, so UNKNOWN outcomes can still be resolved by the checker.
// Release is the reference fence + compensate.
type counterPath struct {
	sut.ReferenceState // the contract's keys: set up, read back as the reference's
	name               string
	checkFirst         bool // get-then-decr: read and compare before decrementing
	st                 *lua.Store
	retention          sync.Map // hash tag -> retention_until_ms (activity config, cached client-side)
}

var _ sut.System = (*counterPath)(nil)

func newCounterPath(name string, checkFirst bool) func(st *lua.Store) sut.System {
	return func(st *lua.Store) sut.System {
		return &counterPath{ReferenceState: sut.ReferenceState{Store: st}, name: name, checkFirst: checkFirst, st: st}
	}
}

func (p *counterPath) Name() string { return p.name }

// Resend re-sends the same call: the anti-pattern here is the counter, not the ids.
func (*counterPath) Resend(call lua.ReserveCall, _ int) lua.ReserveCall { return call }

func (p *counterPath) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	return sut.FenceAndCompensate(ctx, p.st, sc, userID, rid)
}

// partialError is the error of a call that failed after a command that
// changes state was sent: part of the reservation may exist. It matches
// lua.ErrOutcomeUnknown (Path's error contract: the outcome is unknown).
type partialError struct {
	step string
	err  error
}

func (e *partialError) Error() string {
	return fmt.Sprintf("outcome unknown: %s failed after state was changed: %v", e.step, e.err)
}

func (e *partialError) Is(target error) bool { return target == lua.ErrOutcomeUnknown }

// trip counts round trips and remembers whether state may have changed.
type trip struct {
	ctx   context.Context
	rdb   redis.UniversalClient
	n     int
	wrote bool
	step  string
}

func (t *trip) mutating(step string) { t.n++; t.wrote = true; t.step = step }
func (t *trip) reading(step string)  { t.n++; t.step = step }

func (p *counterPath) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	t := &trip{ctx: ctx, rdb: p.st.Client()}
	res, err := p.reserve(t, call)
	res.Attempts = t.n
	if err != nil && t.wrote {
		err = &partialError{step: t.step, err: err}
	}
	return res, err
}

func reply(code lua.ReserveCode, rid string, remaining int64, status string) lua.ReserveResult {
	return lua.ReserveResult{Code: code, ReservationID: rid, Remaining: remaining, Status: status}
}

func (p *counterPath) reserve(t *trip, call lua.ReserveCall) (lua.ReserveResult, error) {
	ctx, rdb, sc := t.ctx, t.rdb, call.Scope
	retention, ok, err := p.retentionOf(t, sc)
	if err != nil {
		return lua.ReserveResult{}, err
	}
	if !ok {
		return reply(lua.ConfigMissing, "", -1, "CONFIG_MISSING"), nil
	}
	remaining, sold, err := p.takeUnit(t, sc.StockKey())
	if err != nil {
		return lua.ReserveResult{}, err
	}
	if sold {
		return p.soldOut(t, call, retention)
	}
	t.mutating("HINCRBY reserved +1")
	if err := rdb.HIncrBy(ctx, sc.StockKey(), "reserved", 1).Err(); err != nil {
		return lua.ReserveResult{}, err
	}
	t.mutating("SET user marker NX")
	_, err = rdb.Do(ctx, "SET", sc.UserKey(call.UserID), call.ReservationID, "NX", "PXAT", retention).Result()
	if errors.Is(err, redis.Nil) {
		return giveBack(t, call, retention, remaining)
	}
	if err != nil {
		return lua.ReserveResult{}, err
	}
	if err := writeRecovery(t, call, retention, remaining); err != nil {
		return lua.ReserveResult{}, err
	}
	return reply(lua.Accepted, call.ReservationID, remaining, "QUEUED"), nil
}

// takeUnit takes one unit off the stock hash's available: read and
// compare first (get-then-decr), or decrement and give back on a negative
// (decr-then-incr). sold: none was left.
func (p *counterPath) takeUnit(t *trip, stock string) (remaining int64, sold bool, err error) {
	ctx, rdb := t.ctx, t.rdb
	if p.checkFirst {
		t.reading("HGET available")
		avail, err := rdb.HGet(ctx, stock, "available").Int64()
		if err != nil || avail <= 0 {
			return 0, err == nil, err
		}
		t.mutating("HINCRBY available -1")
		remaining, err = rdb.HIncrBy(ctx, stock, "available", -1).Result()
		return remaining, false, err
	}
	t.mutating("HINCRBY available -1")
	if remaining, err = rdb.HIncrBy(ctx, stock, "available", -1).Result(); err != nil || remaining >= 0 {
		return remaining, false, err
	}
	t.mutating("HINCRBY available +1 (give back)")
	return remaining, true, rdb.HIncrBy(ctx, stock, "available", 1).Err()
}

// giveBack returns the unit of a user who already holds one (spec §4:
// INCR stock, ErrDuplicateUser) and answers USER_ALREADY_RESERVED with the
// reservation the marker names.
func giveBack(t *trip, call lua.ReserveCall, retention, remaining int64) (lua.ReserveResult, error) {
	ctx, rdb, sc := t.ctx, t.rdb, call.Scope
	t.mutating("HINCRBY available +1 (duplicate user)")
	if err := rdb.HIncrBy(ctx, sc.StockKey(), "available", 1).Err(); err != nil {
		return lua.ReserveResult{}, err
	}
	t.mutating("HINCRBY reserved -1 (duplicate user)")
	if err := rdb.HIncrBy(ctx, sc.StockKey(), "reserved", -1).Err(); err != nil {
		return lua.ReserveResult{}, err
	}
	t.reading("GET user marker")
	held, err := rdb.Get(ctx, sc.UserKey(call.UserID)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return lua.ReserveResult{}, err
	}
	t.mutating("HSET request result")
	if err := remember(ctx, rdb, call, retention, lua.UserAlreadyReserved, held, remaining+1, "USER_ALREADY_RESERVED"); err != nil {
		return lua.ReserveResult{}, err
	}
	return reply(lua.UserAlreadyReserved, held, remaining+1, "USER_ALREADY_RESERVED"), nil
}

// writeRecovery writes the recovery data after the unit was taken: the
// record, both zsets, the request result, soldout at zero (pipelined: one
// round trip, but not atomic with anything before it).
func writeRecovery(t *trip, call lua.ReserveCall, retention, remaining int64) error {
	ctx, rdb, sc := t.ctx, t.rdb, call.Scope
	now := call.NowMs
	if now <= 0 {
		now = time.Now().UnixMilli()
	}
	t.mutating("write reservation record, zsets, request result")
	expires := now + call.TTLMs
	exp := time.UnixMilli(retention)
	_, err := rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.HSet(ctx, sc.ResvKey(call.ReservationID),
			"reservation_id", call.ReservationID, "request_id", call.RequestID, "message_id", call.MessageID,
			"activity_id", sc.ActivityID, "sku_id", sc.SKUID, "user_id", call.UserID,
			"activity_version", strconv.FormatInt(sc.Version, 10), "bucket_id", strconv.FormatUint(uint64(sc.Bucket), 10),
			"status", string(lua.StatusReserved), "reserved_at_ms", now, "expires_at_ms", expires, "updated_at_ms", now,
			"order_id", "", "error_code", "", "release_reason", "", "schema_version", call.SchemaVersion)
		pl.PExpireAt(ctx, sc.ResvKey(call.ReservationID), exp)
		pl.ZAdd(ctx, sc.SendPendingKey(), redis.Z{Score: float64(now), Member: call.ReservationID})
		pl.PExpireAt(ctx, sc.SendPendingKey(), exp)
		pl.ZAdd(ctx, sc.ExpiryKey(), redis.Z{Score: float64(expires), Member: call.ReservationID})
		pl.PExpireAt(ctx, sc.ExpiryKey(), exp)
		pl.HSet(ctx, sc.ReqShardKey(call.RequestID), call.RequestID, packResult(lua.Accepted, call.ReservationID, remaining, "QUEUED", call.UserID))
		pl.PExpireAt(ctx, sc.ReqShardKey(call.RequestID), exp)
		if remaining == 0 {
			pl.Do(ctx, "SET", sc.SoldoutKey(), "1", "PXAT", retention)
		}
		return nil
	})
	return err
}

// soldOut marks the bucket sold out and caches the answer, as reserve.lua does.
func (p *counterPath) soldOut(t *trip, call lua.ReserveCall, retention int64) (lua.ReserveResult, error) {
	ctx, sc := t.ctx, call.Scope
	t.mutating("SET soldout, HSET request result")
	_, err := t.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.Do(ctx, "SET", sc.SoldoutKey(), "1", "PXAT", retention)
		pl.HSet(ctx, sc.ReqShardKey(call.RequestID), call.RequestID, packResult(lua.SoldOut, "", 0, "SOLD_OUT", call.UserID))
		pl.PExpireAt(ctx, sc.ReqShardKey(call.RequestID), time.UnixMilli(retention))
		return nil
	})
	if err != nil {
		return lua.ReserveResult{}, err
	}
	return reply(lua.SoldOut, "", 0, "SOLD_OUT"), nil
}

func remember(ctx context.Context, rdb redis.UniversalClient, call lua.ReserveCall, retention int64, code lua.ReserveCode, rid string, remaining int64, status string) error {
	sc := call.Scope
	_, err := rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.HSet(ctx, sc.ReqShardKey(call.RequestID), call.RequestID, packResult(code, rid, remaining, status, call.UserID))
		pl.PExpireAt(ctx, sc.ReqShardKey(call.RequestID), time.UnixMilli(retention))
		return nil
	})
	return err
}

// packResult is reserve.lua's request-result format: code|reservation_id|remaining|status|user_id.
func packResult(code lua.ReserveCode, rid string, remaining int64, status, user string) string {
	return strconv.FormatInt(int64(code), 10) + "|" + rid + "|" + strconv.FormatInt(remaining, 10) + "|" + status + "|" + user
}

// retentionOf reads the bucket's retention_until_ms once (activity config
// cached by the client) so every key gets the contract's absolute expiry.
// ok is false when the bucket has no meta (CONFIG_MISSING).
func (p *counterPath) retentionOf(t *trip, sc lua.Scope) (int64, bool, error) {
	tag := sc.HashTag()
	if v, ok := p.retention.Load(tag); ok {
		return v.(int64), true, nil
	}
	t.reading("HGET meta retention_until_ms")
	v, err := t.rdb.HGet(t.ctx, sc.MetaKey(), "retention_until_ms").Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	p.retention.Store(tag, v)
	return v, true, nil
}
