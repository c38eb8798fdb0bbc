package lua

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Activity is one flash sale of one SKU at one version, its stock split over
// Buckets buckets. Times are Unix milliseconds.
type Activity struct {
	ID               string
	SKU              string
	Version          int64
	Buckets          uint32
	Stock            int64 // total over all buckets
	State            ActivityState
	StartsAtMs       int64
	EndsAtMs         int64
	RetentionUntilMs int64 // every key of the activity expires at this absolute time
	SchemaVersion    string
}

// NewActivity returns an ACTIVE activity whose window opened a minute ago and
// closes after window, with keys retained until an hour after the close.
func NewActivity(id, sku string, stock int64, buckets uint32, window time.Duration) *Activity {
	now := time.Now().UnixMilli()
	end := now + window.Milliseconds()
	return &Activity{
		ID: id, SKU: sku, Version: 1, Buckets: buckets, Stock: stock, State: StateActive,
		StartsAtMs: now - 60_000, EndsAtMs: end, RetentionUntilMs: end + 3_600_000, SchemaVersion: "1",
	}
}

// MaxBuckets is the most buckets an activity may have: a run's history
// stores an operation's bucket index in 16 bits (0..65535), so a larger
// count would fold buckets onto each other and the stock checks would
// report false oversells and undersells.
const MaxBuckets = 1 << 16

// Validate checks ids, positive version and bucket count (at most
// MaxBuckets), stock >= buckets
// (every bucket gets at least one unit unless stock is 0), and the window order.
func (a *Activity) Validate() error {
	if err := ValidateID("activity_id", a.ID); err != nil {
		return err
	}
	if err := ValidateID("sku_id", a.SKU); err != nil {
		return err
	}
	if a.Version <= 0 {
		return fmt.Errorf("activity version must be positive, got %d", a.Version)
	}
	if a.Buckets == 0 {
		return errors.New("bucket count must be positive")
	}
	if a.Buckets > MaxBuckets {
		return fmt.Errorf("bucket count %d: at most %d buckets (the history stores a bucket index in 16 bits); use fewer buckets", a.Buckets, MaxBuckets)
	}
	if a.Stock < 0 {
		return fmt.Errorf("stock must not be negative, got %d", a.Stock)
	}
	if a.Stock > 0 && a.Stock < int64(a.Buckets) {
		return fmt.Errorf("stock %d is less than %d buckets: some buckets would hold nothing", a.Stock, a.Buckets)
	}
	switch a.State {
	case StatePrepared, StateActive, StatePaused, StateClosed:
	default:
		return fmt.Errorf("state %q is not one of PREPARED, ACTIVE, PAUSED, CLOSED", a.State)
	}
	if a.EndsAtMs < a.StartsAtMs {
		return fmt.Errorf("window ends (%d) before it starts (%d)", a.EndsAtMs, a.StartsAtMs)
	}
	if a.RetentionUntilMs <= a.EndsAtMs {
		return fmt.Errorf("retention_until_ms %d must be after ends_at_ms %d", a.RetentionUntilMs, a.EndsAtMs)
	}
	return nil
}

// Scope is bucket b of the activity.
func (a *Activity) Scope(b uint32) Scope {
	return Scope{ActivityID: a.ID, SKUID: a.SKU, Version: a.Version, Bucket: b}
}

// BucketOf is the bucket userID always lands in.
func (a *Activity) BucketOf(userID string) uint32 { return BucketFor(a.ID, a.SKU, userID, a.Buckets) }

// BucketStock is bucket b's share: total/B each, the first total%B buckets one more.
func (a *Activity) BucketStock(b uint32) int64 {
	base := a.Stock / int64(a.Buckets)
	if int64(b) < a.Stock%int64(a.Buckets) {
		return base + 1
	}
	return base
}

// ErrActivityExists is returned by Setup when a bucket's meta already exists:
// an activity's stock is never reset in place (spec §8.1) — set up a new
// version or tear the old one down.
var ErrActivityExists = errors.New("activity already set up")

// Setup writes meta and stock for every bucket (one MULTI per bucket; all
// keys expire at RetentionUntilMs). It refuses, without writing, when any
// bucket's meta or stock already exists.
func Setup(ctx context.Context, rdb redis.Cmdable, a *Activity) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("activity %s: %w", a.ID, err)
	}
	for b := uint32(0); b < a.Buckets; b++ {
		sc := a.Scope(b)
		n, err := rdb.Exists(ctx, sc.MetaKey(), sc.StockKey()).Result()
		if err != nil {
			return fmt.Errorf("activity %s bucket %d: check existing keys: %w", a.ID, b, err)
		}
		if n > 0 {
			return fmt.Errorf("activity %s version %d bucket %d: %w", a.ID, a.Version, b, ErrActivityExists)
		}
	}
	for b := uint32(0); b < a.Buckets; b++ {
		sc := a.Scope(b)
		exp := time.UnixMilli(a.RetentionUntilMs)
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, sc.MetaKey(),
				"activity_id", a.ID, "sku_id", a.SKU, "bucket_id", strconv.FormatUint(uint64(b), 10),
				"version", strconv.FormatInt(a.Version, 10), "state", string(a.State),
				"starts_at_ms", a.StartsAtMs, "ends_at_ms", a.EndsAtMs,
				"retention_until_ms", a.RetentionUntilMs, "schema_version", a.SchemaVersion)
			p.PExpireAt(ctx, sc.MetaKey(), exp)
			p.HSet(ctx, sc.StockKey(), "initial", a.BucketStock(b), "available", a.BucketStock(b),
				"reserved", 0, "released_total", 0)
			p.PExpireAt(ctx, sc.StockKey(), exp)
			return nil
		})
		if err != nil {
			return fmt.Errorf("activity %s bucket %d: set up: %w", a.ID, b, err)
		}
	}
	return nil
}

// SetState changes meta.state on every bucket.
func SetState(ctx context.Context, rdb redis.Cmdable, a *Activity, st ActivityState) error {
	for b := uint32(0); b < a.Buckets; b++ {
		if err := rdb.HSet(ctx, a.Scope(b).MetaKey(), "state", string(st)).Err(); err != nil {
			return fmt.Errorf("activity %s bucket %d: set state %s: %w", a.ID, b, st, err)
		}
	}
	a.State = st
	return nil
}

// Stock is one bucket's stock hash.
type Stock struct {
	Initial, Available, Reserved, ReleasedTotal int64
}

// Conserved reports initial == available + reserved with both >= 0 (I1).
func (s Stock) Conserved() bool {
	return s.Available >= 0 && s.Reserved >= 0 && s.Initial == s.Available+s.Reserved
}

// ReadStock reads one bucket's stock hash (one HMGET). A missing field is an error.
func ReadStock(ctx context.Context, rdb redis.Cmdable, sc Scope) (Stock, error) {
	v, err := rdb.HMGet(ctx, sc.StockKey(), "initial", "available", "reserved", "released_total").Result()
	if err != nil {
		return Stock{}, fmt.Errorf("read stock of bucket %d: %w", sc.Bucket, err)
	}
	var out [4]int64
	for i, x := range v {
		if x == nil {
			return Stock{}, fmt.Errorf("stock of bucket %d (%s) lacks a field", sc.Bucket, sc.StockKey())
		}
		n, err := asInt64(x)
		if err != nil {
			return Stock{}, fmt.Errorf("stock of bucket %d: %w", sc.Bucket, err)
		}
		out[i] = n
	}
	return Stock{Initial: out[0], Available: out[1], Reserved: out[2], ReleasedTotal: out[3]}, nil
}

// Teardown deletes the activity's keys and returns how many it deleted. It
// finds them only through keys it can name: per bucket meta, stock, soldout,
// both zsets and all 256 request shards (read with HSCAN of those hashes), and
// from the cached results and zset members the reservation records and user
// markers they name. It never runs KEYS, SCAN or FLUSH*, so it is safe on a
// shared cluster. Keys it cannot reach expire at RetentionUntilMs anyway.
func Teardown(ctx context.Context, rdb redis.Cmdable, a *Activity) (int64, error) {
	var deleted int64
	for b := uint32(0); b < a.Buckets; b++ {
		sc := a.Scope(b)
		keys := map[string]struct{}{}
		add := func(k string) { keys[k] = struct{}{} }
		add(sc.MetaKey())
		add(sc.StockKey())
		add(sc.SoldoutKey())
		add(sc.SendPendingKey())
		add(sc.ExpiryKey())
		rids := map[string]struct{}{}
		for n := 0; n < RequestShards; n++ {
			shard := sc.ReqShardKeyN(n)
			add(shard)
			var cursor uint64
			for {
				kv, next, err := rdb.HScan(ctx, shard, cursor, "", 1000).Result()
				if err != nil {
					return deleted, fmt.Errorf("teardown %s: hscan %s: %w", a.ID, shard, err)
				}
				for i := 1; i < len(kv); i += 2 {
					if r, err := ParseRequestResult(kv[i]); err == nil {
						if r.ReservationID != "" {
							rids[r.ReservationID] = struct{}{}
						}
						if r.UserID != "" {
							add(sc.UserKey(r.UserID))
						}
					}
				}
				if cursor = next; cursor == 0 {
					break
				}
			}
		}
		for _, z := range []string{sc.SendPendingKey(), sc.ExpiryKey()} {
			ms, err := rdb.ZRange(ctx, z, 0, -1).Result()
			if err != nil {
				return deleted, fmt.Errorf("teardown %s: zrange %s: %w", a.ID, z, err)
			}
			for _, m := range ms {
				rids[m] = struct{}{}
			}
		}
		for rid := range rids {
			if ValidateID("reservation_id", rid) != nil {
				continue
			}
			add(sc.ResvKey(rid))
			u, err := rdb.HGet(ctx, sc.ResvKey(rid), "user_id").Result()
			if err == nil && ValidateID("user_id", u) == nil {
				add(sc.UserKey(u))
			}
		}
		// One DEL per batch: all keys share the bucket's slot.
		batch := make([]string, 0, 500)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			n, err := rdb.Del(ctx, batch...).Result()
			deleted += n
			batch = batch[:0]
			return err
		}
		for k := range keys {
			batch = append(batch, k)
			if len(batch) == cap(batch) {
				if err := flush(); err != nil {
					return deleted, fmt.Errorf("teardown %s: del: %w", a.ID, err)
				}
			}
		}
		if err := flush(); err != nil {
			return deleted, fmt.Errorf("teardown %s: del: %w", a.ID, err)
		}
	}
	return deleted, nil
}
