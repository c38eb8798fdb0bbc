package sut

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

// Reference is the project's system: the scripts of Store, retried with
// the same ids, on the reference contract's keys (ReferenceState).
type Reference struct{ ReferenceState }

// NewReference is the reference system on st.
func NewReference(st *lua.Store) Reference { return Reference{ReferenceState{Store: st}} }

var _ System = Reference{}

// Name is "reference".
func (Reference) Name() string { return "reference" }

// Reserve runs reserve.lua once.
func (p Reference) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	return p.Store.Reserve(ctx, call)
}

// Resend returns call unchanged.
func (Reference) Resend(call lua.ReserveCall, _ int) lua.ReserveCall { return call }

// Release runs transition.lua (-> RELEASE_PENDING) then compensate.lua.
func (p Reference) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	return FenceAndCompensate(ctx, p.Store, sc, userID, rid)
}

// FenceAndCompensate is the reference release: transition.lua to
// RELEASE_PENDING (its answer is not a reason to stop: the compensation
// decides), then compensate.lua.
func FenceAndCompensate(ctx context.Context, st *lua.Store, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	if _, err := st.Transition(ctx, sc, rid, lua.TransitionArgs{Target: lua.StatusReleasePending}); err != nil {
		return lua.CompensateResult{}, err
	}
	return st.Compensate(ctx, sc, userID, rid, "harness-release", 0)
}

// ReferenceState is the reference contract's activity and state on
// Store's client: lua.Setup / lua.Teardown, and every fact read back from
// the contract's keys. A system that speaks the contract (the known-bad
// paths) embeds it to show its state.
type ReferenceState struct{ Store *lua.Store }

var (
	_ Provisioner = ReferenceState{}
	_ StateReader = ReferenceState{}
	_ Querier     = ReferenceState{}
)

// Setup writes meta and stock for every bucket (lua.Setup).
func (r ReferenceState) Setup(ctx context.Context, a *lua.Activity) error {
	return lua.Setup(ctx, r.Store.Client(), a)
}

// Teardown deletes the activity's keys it can name (lua.Teardown).
func (r ReferenceState) Teardown(ctx context.Context, a *lua.Activity) (int64, error) {
	return lua.Teardown(ctx, r.Store.Client(), a)
}

// Exposes every fact: the contract's keys are all readable, on the
// harness's own Redis nodes.
func (ReferenceState) Exposes() []Fact { return AllFacts() }

// Query reads the answer cached for requestID in userID's bucket (one
// HGET, lua.Store.LookupRequest): what every system on the contract's
// keys says of a request. An answer cached for another user's request
// of that id (the id reused, REQUEST_ID_CONFLICT for this user) is no
// execution of this user's request: not found.
func (r ReferenceState) Query(ctx context.Context, a *lua.Activity, userID, requestID string) (lua.RequestResult, bool, error) {
	res, found, err := r.Store.LookupRequest(ctx, a.Scope(a.BucketOf(userID)), requestID)
	if err != nil || !found || res.UserID != userID {
		return lua.RequestResult{}, false, err
	}
	return res, true, nil
}

// ReadStock reads the bucket's stock hash (one HMGET).
func (r ReferenceState) ReadStock(ctx context.Context, a *lua.Activity, b uint32) (lua.Stock, error) {
	return lua.ReadStock(ctx, r.Store.Client(), a.Scope(b))
}

// ReadQueues reads both zsets of the bucket.
func (r ReferenceState) ReadQueues(ctx context.Context, a *lua.Activity, b uint32) (sendPending, expiry []string, err error) {
	sc := a.Scope(b)
	out := [2][]string{}
	for i, z := range []string{sc.SendPendingKey(), sc.ExpiryKey()} {
		if out[i], err = r.Store.Client().ZRange(ctx, z, 0, -1).Result(); err != nil {
			return nil, nil, fmt.Errorf("checker: read %s: %w", z, err)
		}
	}
	return out[0], out[1], nil
}

// ReadRecords reads the records of want, pipelined HMGETs in batches of 1000.
func (r ReferenceState) ReadRecords(ctx context.Context, a *lua.Activity, want map[string]uint32) (map[string]Record, error) {
	rdb := r.Store.Client()
	ids := make([]string, 0, len(want))
	for id := range want {
		if lua.ValidateID("reservation_id", id) == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make(map[string]Record, len(ids))
	for start := 0; start < len(ids); start += 1000 {
		end := min(start+1000, len(ids))
		cmds := make([]*redis.SliceCmd, 0, end-start)
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids[start:end] {
				cmds = append(cmds, p.HMGet(ctx, a.Scope(want[id]).ResvKey(id), "status", "user_id", "order_id", "release_reason", "error_code"))
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			return nil, fmt.Errorf("checker: read reservation records: %w", err)
		}
		for i, c := range cmds {
			v := c.Val()
			if len(v) != 5 || v[0] == nil {
				continue // no such record
			}
			s := func(k int) string { x, _ := v[k].(string); return x }
			id := ids[start+i]
			out[id] = Record{Status: lua.Status(s(0)), User: s(1), Bucket: want[id], OrderID: s(2), ReleaseReason: s(3), ErrorCode: s(4)}
		}
	}
	return out, nil
}

// ReadRequests reads the cached results, pipelined. A Redis error answer
// for one key (a wrong type: the path wrote something else there) and an
// unparsable result are kept as that request's Err; a failure of the
// connection is a Go error.
func (r ReferenceState) ReadRequests(ctx context.Context, a *lua.Activity, reqs []RequestRef) ([]RequestFact, error) {
	out := make([]RequestFact, len(reqs))
	for start := 0; start < len(reqs); start += 1000 {
		batch := reqs[start:min(start+1000, len(reqs))]
		cmds := make([]*redis.StringCmd, 0, len(batch))
		_, _ = r.Store.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				cmds = append(cmds, p.HGet(ctx, a.Scope(k.Bucket).ReqShardKey(k.ID), k.ID))
			}
			return nil
		})
		for i, c := range cmds {
			fact, err := requestFact(batch[i].ID, c)
			if err != nil {
				return nil, err
			}
			out[start+i] = fact
		}
	}
	return out, nil
}

func requestFact(id string, c *redis.StringCmd) (RequestFact, error) {
	v, err := c.Result()
	var rerr redis.Error
	switch {
	case errors.Is(err, redis.Nil):
		return RequestFact{}, nil
	case errors.As(err, &rerr):
		return RequestFact{Err: fmt.Sprintf("look up request %s: %v", id, err)}, nil
	case err != nil:
		return RequestFact{}, fmt.Errorf("checker: read request results: %w", err)
	}
	res, perr := lua.ParseRequestResult(v)
	if perr != nil {
		return RequestFact{Err: perr.Error()}, nil
	}
	return RequestFact{Found: true, Result: res}, nil
}

// ReadKeys reads the expiry and size of the contract's keys (readKeyFacts).
func (r ReferenceState) ReadKeys(ctx context.Context, a *lua.Activity, q KeyQuery) (*KeyFacts, error) {
	return readKeyFacts(ctx, r.Store.Client(), a, q)
}

var _ RequestLister = ReferenceState{}

// ListRequestIDs lists the request ids cached in each bucket's 256
// request shards (HKEYS of keys the contract names; never KEYS or SCAN).
func (r ReferenceState) ListRequestIDs(ctx context.Context, a *lua.Activity) (map[uint32][]string, error) {
	out := map[uint32][]string{}
	for b := uint32(0); b < a.Buckets; b++ {
		sc := a.Scope(b)
		cmds := make([]*redis.StringSliceCmd, lua.RequestShards)
		_, err := r.Store.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
			for n := range cmds {
				cmds[n] = p.HKeys(ctx, sc.ReqShardKeyN(n))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("list the cached request ids of bucket %d: %w", b, err)
		}
		for _, c := range cmds {
			out[b] = append(out[b], c.Val()...)
		}
	}
	return out, nil
}
