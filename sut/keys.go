package sut

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/reports"
)

// The reference contract's keys as read back for K1 (checks/keys.go): which
// of the keys the contract names exist, their expiries, and their sizes.

// Key kinds, as counted in KeyFacts and report.json's keyspace.keys_by_kind.
const (
	KeyKindMeta        = "meta"
	KeyKindStock       = "stock"
	KeyKindSoldout     = "soldout"
	KeyKindSendPending = "send_pending"
	KeyKindExpiry      = "reservation_expiry"
	KeyKindRequest     = "req"
	KeyKindReservation = "resv"
	KeyKindUserMarker  = "user"
)

// harnessKeyKinds are the kinds the harness writes itself (lua.Setup)
// before the path runs: present whatever the path did, so they do not make
// the check non-vacuous.
var harnessKeyKinds = map[string]bool{KeyKindMeta: true, KeyKindStock: true}

// PTTLExpirySlackMs is the tolerance of an expiry estimated from PTTL (a
// server without PEXPIRETIME, before Redis 7.0): read time + PTTL may
// exceed the true expiry by the round trip.
const PTTLExpirySlackMs = 1000

// maxKeyFacts bounds the offending key names a KeyFacts keeps (the counts
// stay exact).
const maxKeyFacts = 1000

// memorySamples is the most reservation records MEMORY USAGE reads.
const memorySamples = 64

// KeyFacts are the activity's keys as read back: which the path's
// contract names exist, which of them expire after the retention time or
// never, and the size figures (report.json's keyspace).
type KeyFacts struct {
	// Space is report.json's keyspace section (counts and sizes).
	Space reports.KeySpace
	// WithoutTTL are keys with no expiry (at most maxKeyFacts, sorted).
	WithoutTTL []string
	// BeyondRetention are keys expiring after the retention time, with
	// their expiry (at most maxKeyFacts, sorted by key).
	BeyondRetention []KeyExpiry
	// PathKeys counts the keys present that the path wrote (every kind
	// but meta and stock, which the harness set up).
	PathKeys int64
}

// KeyExpiry is one key and its absolute expiry (Unix ms).
type KeyExpiry struct {
	Key         string `json:"key"`
	ExpiresAtMs int64  `json:"expires_at_ms"`
}

// probe is one key to read, with its kind and bucket; harness marks a key
// the activity's set-up wrote (not counted in PathKeys).
type probe struct {
	key, kind string
	bucket    uint32
	harness   bool
}

// KeyRef is one key of a system that names its keys itself (an adapter
// file): its kind (how report.json's keys_by_kind counts it), its bucket
// (for the bucket's expiry allowance) and whether the activity's set-up
// wrote it rather than the path.
type KeyRef struct {
	Key, Kind string
	Bucket    uint32
	SetUp     bool
}

// ReadKeyExpiries reads the expiry of every key of keys as ReadKeys reads
// the contract's (PEXPIRETIME, or PTTL before Redis 7.0; pipelined,
// never KEYS or SCAN), against a's retention time and the buckets'
// allowances. The size figures of the contract's keys are not read.
func ReadKeyExpiries(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, keys []KeyRef, allowances []reports.ExpiryAllowance) (*KeyFacts, error) {
	probes := make([]probe, len(keys))
	for i, k := range keys {
		probes[i] = probe{k.Key, k.Kind, k.Bucket, k.SetUp}
	}
	kf := &KeyFacts{Space: reports.KeySpace{RetentionUntilMs: a.RetentionUntilMs, KeysByKind: map[string]int64{},
		ExpiryAllowances: allowances}}
	if err := readExpiries(ctx, rdb, probes, kf); err != nil {
		return nil, err
	}
	return kf, nil
}

// readKeyFacts reads the expiry of every key of a's namespace the
// path's contract names and the run can reach: per bucket meta, stock,
// soldout, both zsets and the 256 request shards; the reservation record
// of every reservation found (records) and the user marker of every user
// that holds one, was answered ACCEPTED or USER_ALREADY_RESERVED, or whose
// request ended UNKNOWN. Then the size figures: HLEN of every shard,
// MEMORY USAGE of the largest and of up to memorySamples reservations.
// Pipelined in batches of 1000; never KEYS or SCAN. A key of a bucket
// with an allowance may expire that much after the retention time.
func readKeyFacts(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, q KeyQuery) (*KeyFacts, error) {
	records := q.Records
	var probes []probe
	for b := uint32(0); b < a.Buckets; b++ {
		sc := a.Scope(b)
		probes = append(probes, probe{sc.MetaKey(), KeyKindMeta, b, true}, probe{sc.StockKey(), KeyKindStock, b, true},
			probe{sc.SoldoutKey(), KeyKindSoldout, b, false}, probe{sc.SendPendingKey(), KeyKindSendPending, b, false},
			probe{sc.ExpiryKey(), KeyKindExpiry, b, false})
		for n := 0; n < lua.RequestShards; n++ {
			probes = append(probes, probe{sc.ReqShardKeyN(n), KeyKindRequest, b, false})
		}
	}
	rids := make([]string, 0, len(records))
	for rid := range records {
		rids = append(rids, rid)
	}
	sort.Strings(rids)
	markers := map[string]bool{}
	marker := func(b uint32, user string) {
		if lua.ValidateID("user_id", user) != nil {
			return
		}
		k := a.Scope(b).UserKey(user)
		if !markers[k] {
			markers[k] = true
			probes = append(probes, probe{k, KeyKindUserMarker, b, false})
		}
	}
	for _, rid := range rids {
		r := records[rid]
		probes = append(probes, probe{a.Scope(r.Bucket).ResvKey(rid), KeyKindReservation, r.Bucket, false})
		marker(r.Bucket, r.User)
	}
	for _, u := range q.Users {
		marker(u.Bucket, u.User)
	}

	kf := &KeyFacts{Space: reports.KeySpace{RetentionUntilMs: a.RetentionUntilMs, KeysByKind: map[string]int64{},
		ExpiryAllowances: q.Allowances}}
	if err := readExpiries(ctx, rdb, probes, kf); err != nil {
		return nil, err
	}
	if err := readKeySizes(ctx, rdb, a, rids, records, kf); err != nil {
		return nil, err
	}
	return kf, nil
}

// readExpiries reads each probe's absolute expiry (PEXPIRETIME, or PTTL
// on a server without it) and records it in kf: beyond the retention time
// when later than it by more than the read's slack plus the key's bucket's
// allowance (kf.Space.ExpiryAllowances).
func readExpiries(ctx context.Context, rdb redis.UniversalClient, probes []probe, kf *KeyFacts) error {
	sp := &kf.Space
	sp.ExpiryRead = "PEXPIRETIME"
	allowed := map[uint32]int64{}
	for _, al := range sp.ExpiryAllowances {
		allowed[uint32(al.Bucket)] += al.AllowanceMs
	}
	for start := 0; start < len(probes); start += 1000 {
		batch := probes[start:min(start+1000, len(probes))]
		at, exps, err := readExpiryBatch(ctx, rdb, batch, sp.ExpiryRead == "PTTL")
		if err != nil && sp.ExpiryRead == "PEXPIRETIME" && isUnknownCommand(err) {
			sp.ExpiryRead, sp.ExpirySlackMs = "PTTL", PTTLExpirySlackMs
			at, exps, err = readExpiryBatch(ctx, rdb, batch, true)
		}
		if err != nil {
			return fmt.Errorf("checker: read key expiries: %w", err)
		}
		for i, p := range batch {
			v := exps[i]
			if v == -2 {
				continue // no such key
			}
			sp.KeysChecked++
			sp.KeysByKind[p.kind]++
			if !p.harness && !harnessKeyKinds[p.kind] {
				kf.PathKeys++
			}
			if v == -1 {
				sp.KeysWithoutTTL++
				if len(kf.WithoutTTL) < maxKeyFacts {
					kf.WithoutTTL = append(kf.WithoutTTL, p.key)
				}
				continue
			}
			exp := v
			if sp.ExpiryRead == "PTTL" {
				exp = at + v
			}
			sp.LatestExpiryMs = max(sp.LatestExpiryMs, exp)
			switch limit := sp.RetentionUntilMs + sp.ExpirySlackMs; {
			case exp <= limit:
			case exp <= limit+allowed[p.bucket]:
				sp.KeysWithinAllowance++
			default:
				sp.KeysBeyondRetention++
				if len(kf.BeyondRetention) < maxKeyFacts {
					kf.BeyondRetention = append(kf.BeyondRetention, KeyExpiry{Key: p.key, ExpiresAtMs: exp})
				}
			}
		}
	}
	sort.Strings(kf.WithoutTTL)
	sort.Slice(kf.BeyondRetention, func(i, j int) bool { return kf.BeyondRetention[i].Key < kf.BeyondRetention[j].Key })
	return nil
}

// readExpiryBatch returns, per key, PEXPIRETIME (absolute ms, -1 no
// expiry, -2 no key) or, with pttl, PTTL (remaining ms) and the local time
// the batch was sent at.
func readExpiryBatch(ctx context.Context, rdb redis.UniversalClient, batch []probe, pttl bool) (int64, []int64, error) {
	cmds := make([]*redis.DurationCmd, len(batch))
	at := time.Now().UnixMilli()
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pr := range batch {
			if pttl {
				cmds[i] = p.PTTL(ctx, pr.key)
			} else {
				cmds[i] = p.PExpireTime(ctx, pr.key)
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	out := make([]int64, len(batch))
	for i, c := range cmds {
		d := c.Val()
		if d < 0 {
			out[i] = int64(d) // -1, -2 as is
		} else {
			out[i] = d.Milliseconds()
		}
	}
	return at, out, nil
}

func isUnknownCommand(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command")
}

// readKeySizes fills the size figures: HLEN of every request shard,
// MEMORY USAGE (SAMPLES 0) of the largest one, and of up to memorySamples
// reservation records (evenly spread over rids) and their user markers.
func readKeySizes(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, rids []string, records map[string]Record, kf *KeyFacts) error {
	sp := &kf.Space
	type shardAt struct {
		b   uint32
		n   int
		key string
	}
	var shards []shardAt
	for b := uint32(0); b < a.Buckets; b++ {
		for n := 0; n < lua.RequestShards; n++ {
			shards = append(shards, shardAt{b, n, a.Scope(b).ReqShardKeyN(n)})
		}
	}
	sp.RequestShards = len(shards)
	var largest *shardAt
	var largestLen int64
	for start := 0; start < len(shards); start += 1000 {
		batch := shards[start:min(start+1000, len(shards))]
		cmds := make([]*redis.IntCmd, len(batch))
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, s := range batch {
				cmds[i] = p.HLen(ctx, s.key)
			}
			return nil
		})
		for i, c := range cmds {
			n, err := c.Result()
			var rerr redis.Error
			switch {
			case errors.As(err, &rerr):
				continue // not a hash (WRONGTYPE): a fact for I5/I7, no size here
			case err != nil:
				return fmt.Errorf("checker: HLEN of the request shards: %w", err)
			}
			sp.RequestResults += n
			if n > largestLen {
				largestLen, largest = n, &batch[i]
			}
		}
	}
	if largest != nil {
		mem, err := rdb.MemoryUsage(ctx, largest.key, 0).Result()
		if err != nil {
			return fmt.Errorf("checker: MEMORY USAGE %s: %w", largest.key, err)
		}
		sp.LargestRequestShard = &reports.RequestShardSize{Key: largest.key, Bucket: int(largest.b), Shard: largest.n, HLen: largestLen, MemoryBytes: mem}
		sp.RequestResultBytes = roundBytes(float64(mem) / float64(largestLen))
		sp.RequestShardSkew = float64(largestLen) / (float64(sp.RequestResults) / float64(sp.RequestShards))
		sp.RequestShardSkew = float64(int64(sp.RequestShardSkew*100+0.5)) / 100
	}
	if len(rids) == 0 {
		return nil
	}
	step := max(1, len(rids)/memorySamples)
	var resvKeys, userKeys []string
	for i := 0; i < len(rids) && len(resvKeys) < memorySamples; i += step {
		r := records[rids[i]]
		sc := a.Scope(r.Bucket)
		resvKeys = append(resvKeys, sc.ResvKey(rids[i]))
		if lua.ValidateID("user_id", r.User) == nil {
			userKeys = append(userKeys, sc.UserKey(r.User))
		}
	}
	resv, err := meanMemoryUsage(ctx, rdb, resvKeys)
	if err != nil {
		return err
	}
	users, err := meanMemoryUsage(ctx, rdb, userKeys)
	if err != nil {
		return err
	}
	sp.ReservationsSampled = len(resvKeys)
	sp.ReservationRecordBytes, sp.UserMarkerBytes = roundBytes(resv), roundBytes(users)
	sp.MemoryPerReservationBytes = roundBytes(resv + users)
	return nil
}

// meanMemoryUsage is the mean MEMORY USAGE (SAMPLES 0) of the keys that
// exist (0 when none does).
func meanMemoryUsage(ctx context.Context, rdb redis.UniversalClient, keys []string) (float64, error) {
	cmds := make([]*redis.IntCmd, len(keys))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.MemoryUsage(ctx, k, 0)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, fmt.Errorf("checker: MEMORY USAGE: %w", err)
	}
	var sum, n int64
	for _, c := range cmds {
		if v, err := c.Result(); err == nil {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return float64(sum) / float64(n), nil
}

func roundBytes(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
