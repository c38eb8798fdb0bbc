package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

// Facts is everything the invariants judge: the run's history and inputs,
// and what was read back from Redis once, after the run, by CollectFacts.
// Judging (JudgeFacts) is a pure function of Facts: no check reads Redis,
// so each one can be tried on a hand-built Facts value.
type Facts struct {
	// Planned is each bucket's share of the activity's stock as it was set
	// up (the first total%B buckets get one more): what no-oversell bounds.
	Planned []int64
	// Stock is each bucket's stock hash as read back at the end.
	Stock []lua.Stock
	// Ops is the history (with the pipeline's releases when the run had a
	// pipeline: see WithPipelineReleases) when it is held in memory; for a
	// spooled history CollectFacts keeps the history itself and Ops is
	// empty. The judges read both through all.
	Ops []Op
	// spooled is the history CollectFacts read a spooled run from (nil
	// when the operations are in Ops).
	spooled *History
	// Samples are the stock readings taken during the run.
	Samples []StockSample
	// Records are the reservation records read back, by reservation id:
	// every id the history names or may have created (an UNKNOWN reserve's
	// derived id), every id the pipeline's log names, every member of the
	// two zsets. A reservation without a record is absent.
	Records map[string]ReservationRecord
	// Requests are the cached request results read back for the reserve
	// requests judged against Redis: those that ended UNKNOWN (I7), were
	// re-sent, or answered REQUEST_ID_CONFLICT to someone (I5).
	Requests map[RequestKey]RequestFact
	// OwnReservation is the reservation id the contract derives from a
	// user and request id, for the reserve operations I5 compares with it
	// (re-sent ones and USER_ALREADY_RESERVED answers).
	OwnReservation map[UserRequest]string
	// SendPendingLeft and ExpiryLeft are the sizes of each bucket's
	// send_pending and reservation_expiry zsets at the end.
	SendPendingLeft, ExpiryLeft []int64

	// FaultsInjected: a fault ran, so stock may legitimately stay unsold (I9).
	FaultsInjected bool
	// LocalSoldOutTTL is the TTL of the reserve path's local sold-out flag;
	// 0 without one (L1 then does not apply).
	LocalSoldOutTTL time.Duration
	// Generator is the share of the load the history holds (see CheckInput).
	Generator Generator
	// ClockSkew bounds how far apart merged histories' clocks may be (I9).
	ClockSkew time.Duration
	// Pipeline is the pipeline's event log; nil when the run had none (the
	// pipeline checks then do not apply).
	Pipeline *PipelineEvidence
	// EndToEnd are the order database's facts (CollectEndToEnd); nil when
	// they were not collected (the end-to-end checks then do not apply).
	EndToEnd *EndToEndFacts
	// Keys are the activity's keys and their expiries (K1) and sizes; nil
	// when they were not read.
	Keys *KeyFacts
	// Evictions are the servers' evicted_keys counters over the run (K2),
	// as the caller read them (CheckInput.Evictions); nil when not read.
	Evictions *EvictionFacts

	derived *derivedFacts // indexes shared by several checks, built on first use
}

// ReservationRecord is what the checks read of one reservation record.
type ReservationRecord struct {
	Status lua.Status
	User   string
	Bucket uint32
}

// RequestKey names one cached request result: request ids are cached per
// bucket.
type RequestKey struct {
	Bucket uint16
	Req    uint32
}

// RequestFact is one cached request result as read back. Found is false
// when Redis has none (never executed, or lost); Err holds a read or parse
// error (the result then is unknown, not absent).
type RequestFact struct {
	Found  bool
	Result lua.RequestResult
	Err    string
}

// UserRequest is a (user, request id) pair by index.
type UserRequest struct {
	User, Req uint32
}

// derivedFacts are views of Facts that several checks use.
type derivedFacts struct {
	ackedByBucket []map[string]struct{}    // distinct reservation ids answered ACCEPTED, per bucket
	acked         int                      // their number over every bucket
	obs           map[string][]observation // per reservation, the statuses the pipeline's answers revealed
}

// all yields every operation of the history judged, with its index (see
// History.All: copy an Op to keep it).
func (f *Facts) all() iter.Seq2[int, *Op] {
	if f.spooled != nil {
		return f.spooled.All()
	}
	return (&History{Ops: f.Ops}).All()
}

// opCount is the number of operations judged.
func (f *Facts) opCount() int {
	if f.spooled != nil {
		return f.spooled.Len()
	}
	return len(f.Ops)
}

// Buckets is the activity's bucket count.
func (f *Facts) Buckets() int { return len(f.Planned) }

func (f *Facts) derive() *derivedFacts {
	if f.derived != nil {
		return f.derived
	}
	d := &derivedFacts{ackedByBucket: make([]map[string]struct{}, f.Buckets())}
	for b := range d.ackedByBucket {
		d.ackedByBucket[b] = map[string]struct{}{}
	}
	for _, o := range f.all() {
		if o.Accepted() && o.RID != "" && int(o.Bucket) < len(d.ackedByBucket) {
			if _, dup := d.ackedByBucket[o.Bucket][o.RID]; !dup {
				d.ackedByBucket[o.Bucket][o.RID] = struct{}{}
				d.acked++
			}
		}
	}
	if f.Pipeline != nil {
		d.obs = observe(f.Pipeline)
	}
	f.derived = d
	return d
}

// CollectFacts reads back from Redis, once, everything the checks of in
// need about tgt's activity: the stock hashes, the two zsets, one HMGET per
// reservation id named by the history, the pipeline or the zsets, one
// HGET per request result judged against Redis, and the expiry and sizes
// of the keys the path's contract names (collectKeyFacts), pipelined.
// Never KEYS or SCAN. A Go error means the state could not be read (the checks are then
// unknown, not passed); a request result that exists but cannot be read
// (e.g. a wrong type) is a fact, kept in RequestFact.Err.
func CollectFacts(ctx context.Context, tgt Target, in CheckInput) (*Facts, error) {
	if in.History == nil {
		return nil, errors.New("checker: no history")
	}
	a := tgt.Activity
	st := tgt.Store
	rdb := st.Client()
	f := &Facts{Samples: in.Samples, FaultsInjected: in.FaultsInjected, LocalSoldOutTTL: in.LocalSoldOutTTL, Generator: in.Generator,
		ClockSkew: in.ClockSkew, Pipeline: in.Pipeline, Evictions: in.Evictions, Requests: map[RequestKey]RequestFact{},
		OwnReservation:  map[UserRequest]string{},
		SendPendingLeft: make([]int64, a.Buckets), ExpiryLeft: make([]int64, a.Buckets)}
	if in.History.Spooled() {
		f.spooled = in.History
	} else {
		f.Ops = in.History.Ops
	}
	for b := uint32(0); b < a.Buckets; b++ {
		f.Planned = append(f.Planned, a.BucketStock(b))
		s, err := lua.ReadStock(ctx, rdb, a.Scope(b))
		if err != nil {
			return nil, fmt.Errorf("checker: %w", err)
		}
		f.Stock = append(f.Stock, s)
	}

	// Reservation ids to read: every one the history names or may have
	// created, every one the pipeline's log names, and every member of the
	// two zsets.
	cand := map[string]uint32{}
	var reqs []RequestKey
	wantReq := map[RequestKey]bool{}
	needReq := func(k RequestKey) {
		if !wantReq[k] {
			wantReq[k] = true
			reqs = append(reqs, k)
		}
	}
	for _, o := range f.all() {
		if o.RID != "" {
			cand[o.RID] = uint32(o.Bucket)
		}
		if !o.Kind.IsReserve() {
			continue
		}
		if o.Outcome == OutcomeUnknown || o.HadUnknown() {
			cand[st.ReservationIDFor(a, o.UserID(), o.RequestID())] = uint32(o.Bucket)
		}
		code := lua.ReserveCode(o.Outcome)
		switch {
		case o.Outcome == OutcomeUnknown:
			needReq(RequestKey{o.Bucket, o.Req})
		case o.Outcome >= 0 && (o.Sends >= 2 || code == lua.RequestIDConflict):
			needReq(RequestKey{o.Bucket, o.Req})
		}
		if o.Outcome >= 0 && (o.Sends >= 2 || code == lua.UserAlreadyReserved) {
			k := UserRequest{o.User, o.Req}
			if _, ok := f.OwnReservation[k]; !ok {
				f.OwnReservation[k] = st.ReservationIDFor(a, o.UserID(), o.RequestID())
			}
		}
	}
	if ev := in.Pipeline; ev != nil {
		for i := range ev.Events {
			cand[ev.Events[i].RID] = ev.Events[i].Bucket
		}
		for i := range ev.Sends {
			cand[ev.Sends[i].RID] = ev.Sends[i].Bucket
		}
		for i := range ev.Orders {
			cand[ev.Orders[i].RID] = ev.Orders[i].Bucket
		}
	}
	for b := uint32(0); b < a.Buckets; b++ {
		sc := a.Scope(b)
		for zi, z := range []string{sc.SendPendingKey(), sc.ExpiryKey()} {
			ms, err := rdb.ZRange(ctx, z, 0, -1).Result()
			if err != nil {
				return nil, fmt.Errorf("checker: read %s: %w", z, err)
			}
			for _, m := range ms {
				cand[m] = b
			}
			if zi == 0 {
				f.SendPendingLeft[b] = int64(len(ms))
			} else {
				f.ExpiryLeft[b] = int64(len(ms))
			}
		}
	}
	if err := in.History.Err(); err != nil {
		return nil, fmt.Errorf("checker: %w", err)
	}
	recs, err := readRecords(ctx, rdb, a, cand)
	if err != nil {
		return nil, err
	}
	f.Records = recs
	if err := readRequests(ctx, rdb, a, reqs, f.Requests); err != nil {
		return nil, err
	}
	if f.Keys, err = collectKeyFacts(ctx, rdb, a, f.all(), recs, in.ExpiryAllowances); err != nil {
		return nil, err
	}
	return f, nil
}

func readRecords(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, cand map[string]uint32) (map[string]ReservationRecord, error) {
	ids := make([]string, 0, len(cand))
	for id := range cand {
		if lua.ValidateID("reservation_id", id) == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make(map[string]ReservationRecord, len(ids))
	for start := 0; start < len(ids); start += 1000 {
		end := min(start+1000, len(ids))
		cmds := make([]*redis.SliceCmd, 0, end-start)
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids[start:end] {
				cmds = append(cmds, p.HMGet(ctx, a.Scope(cand[id]).ResvKey(id), "status", "user_id", "bucket_id"))
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			return nil, fmt.Errorf("checker: read reservation records: %w", err)
		}
		for i, c := range cmds {
			v := c.Val()
			if len(v) != 3 || v[0] == nil {
				continue // no such record
			}
			s, _ := v[0].(string)
			u, _ := v[1].(string)
			out[ids[start+i]] = ReservationRecord{Status: lua.Status(s), User: u, Bucket: cand[ids[start+i]]}
		}
	}
	return out, nil
}

// readRequests reads the cached results of keys into out, pipelined. A
// Redis error answer for one key (a wrong type: the path wrote something
// else there) and an unparsable result are kept as that key's Err; a
// failure of the connection is a Go error.
func readRequests(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, keys []RequestKey, out map[RequestKey]RequestFact) error {
	for start := 0; start < len(keys); start += 1000 {
		batch := keys[start:min(start+1000, len(keys))]
		cmds := make([]*redis.StringCmd, 0, len(batch))
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				id := RequestID(k.Req)
				cmds = append(cmds, p.HGet(ctx, a.Scope(uint32(k.Bucket)).ReqShardKey(id), id))
			}
			return nil
		})
		for i, c := range cmds {
			k := batch[i]
			v, err := c.Result()
			var rerr redis.Error
			switch {
			case errors.Is(err, redis.Nil):
				out[k] = RequestFact{}
			case errors.As(err, &rerr):
				out[k] = RequestFact{Err: fmt.Sprintf("look up request %s: %v", RequestID(k.Req), err)}
			case err != nil:
				return fmt.Errorf("checker: read request results: %w", err)
			default:
				res, perr := lua.ParseRequestResult(v)
				if perr != nil {
					out[k] = RequestFact{Err: perr.Error()}
				} else {
					out[k] = RequestFact{Found: true, Result: res}
				}
			}
		}
	}
	return nil
}
