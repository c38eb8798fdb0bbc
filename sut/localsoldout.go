package sut

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/reports"
)

// The local sold-out flag, an option of the reserve path: the service
// keeps, per activity bucket, a process-local flag that a SOLD_OUT answer
// from Redis sets for TTL. While it holds, the service answers SOLD_OUT
// itself (outcome LOCAL_SOLD_OUT, no Redis call); once it expires the next
// request asks Redis again. A service instance that sets its flag
// broadcasts a notice over Redis Pub/Sub, and the other instances set
// theirs from it. The harness runs Instances such service instances in
// one process, each with its own flags and its own subscription (a user
// always reaches the same instance): the notices really travel through
// the cluster. The price is the false sold-out window: a unit released
// after the sell-out stays unsold until some flag expires.

// LocalSoldOutName is the outcome name of an answer given by the local flag.
const LocalSoldOutName = "LOCAL_SOLD_OUT"

// DefaultSoldOutInstances is how many service instances share the load
// when LocalSoldOutConfig.Instances is 0.
const DefaultSoldOutInstances = 4

// RecoverySlack is what the recovery check allows beyond the TTL between a
// release and the reserve that sells the unit again: the next request to
// reach an instance whose flag expired, and scheduling on a loaded machine.
const RecoverySlack = time.Second

// ErrAnsweredLocally is the error LocalSoldOut.Reserve returns when the
// local flag answered: no script ran. The engine records it as
// OutcomeLocalSoldOut and never re-sends it.
var ErrAnsweredLocally = errors.New("answered SOLD_OUT by the local sold-out flag: Redis was not asked")

// LocalSoldOutConfig configures the flag.
type LocalSoldOutConfig struct {
	// TTL is how long a flag holds after the SOLD_OUT that set it; > 0.
	TTL time.Duration
	// Instances is the number of service instances; 0 means
	// DefaultSoldOutInstances.
	Instances int
	// NeverExpires is a negative control: a flag, once set, holds for
	// the rest of the run (a broken flag without expiry).
	NeverExpires bool
}

// LocalSoldOut wraps a system with the local sold-out flag.
type LocalSoldOut struct {
	cfg     LocalSoldOutConfig
	inner   System
	rdb     *redis.ClusterClient
	buckets uint32
	channel string
	inst    []*soldOutInstance

	dropping                                    atomic.Bool
	answered, setByAnswer, setByNotice          atomic.Int64
	published, publishErrors, received, dropped atomic.Int64
	lastPublishErr                              atomic.Value
	wg                                          sync.WaitGroup
	closeOnce                                   sync.Once
	publishCtx                                  context.Context
	stopPublish                                 context.CancelFunc
}

type soldOutInstance struct {
	until []atomic.Int64 // per bucket: Unix nanoseconds the flag holds until (0: never set)
	ps    *redis.PubSub
}

var _ System = (*LocalSoldOut)(nil)

// SoldOutChannel is the Pub/Sub channel of activity a's sold-out notices.
func SoldOutChannel(a *lua.Activity) string {
	return fmt.Sprintf("seckill:soldout-notice:%s:%s:%d", a.ID, a.SKU, a.Version)
}

// NewLocalSoldOut subscribes every instance to a's notice channel on rdb
// (waiting for each subscription to be confirmed) and returns the path
// inner with the flag in front. Close ends the subscriptions.
func NewLocalSoldOut(ctx context.Context, rdb *redis.ClusterClient, a *lua.Activity, inner System, cfg LocalSoldOutConfig) (*LocalSoldOut, error) {
	if cfg.TTL <= 0 {
		return nil, fmt.Errorf("local sold-out flag: TTL %s: want a positive duration like 1s", cfg.TTL)
	}
	if cfg.Instances < 0 {
		return nil, fmt.Errorf("local sold-out flag: %d instances: want a positive count (0: %d)", cfg.Instances, DefaultSoldOutInstances)
	}
	if cfg.Instances == 0 {
		cfg.Instances = DefaultSoldOutInstances
	}
	l := &LocalSoldOut{cfg: cfg, inner: inner, rdb: rdb, buckets: a.Buckets, channel: SoldOutChannel(a)}
	l.publishCtx, l.stopPublish = context.WithCancel(context.Background())
	for i := 0; i < cfg.Instances; i++ {
		in := &soldOutInstance{until: make([]atomic.Int64, a.Buckets)}
		l.inst = append(l.inst, in)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		in.ps = rdb.Subscribe(sctx, l.channel)
		_, err := in.ps.Receive(sctx) // the subscription's confirmation
		cancel()
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("local sold-out flag: subscribe instance %d to %s: %w", i, l.channel, err)
		}
		ch := in.ps.Channel(redis.WithChannelSize(1024))
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.listen(i, ch)
		}()
	}
	return l, nil
}

// Close stops the publishers and ends the subscriptions. Idempotent.
func (l *LocalSoldOut) Close() {
	l.closeOnce.Do(func() {
		l.stopPublish()
		for _, in := range l.inst {
			if in.ps != nil {
				_ = in.ps.Close()
			}
		}
		l.wg.Wait()
	})
}

// Name is the inner path's.
func (l *LocalSoldOut) Name() string { return l.inner.Name() }

// Resend is the inner path's.
func (l *LocalSoldOut) Resend(call lua.ReserveCall, send int) lua.ReserveCall {
	return l.inner.Resend(call, send)
}

// Release is the inner path's: a release does not clear any flag (the
// flags only expire).
func (l *LocalSoldOut) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	return l.inner.Release(ctx, sc, userID, rid)
}

// instanceOf is the service instance a user's requests reach.
func (l *LocalSoldOut) instanceOf(user string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(user))
	return int(h.Sum32() % uint32(len(l.inst)))
}

// Reserve answers ErrAnsweredLocally while the instance's flag for the
// call's bucket holds; otherwise it asks the inner path, and a SOLD_OUT
// answer sets the flag and broadcasts a notice.
func (l *LocalSoldOut) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	i := l.instanceOf(call.UserID)
	b := call.Scope.Bucket
	if b >= l.buckets {
		return l.inner.Reserve(ctx, call)
	}
	now := time.Now().UnixNano()
	if l.inst[i].until[b].Load() > now {
		l.answered.Add(1)
		return lua.ReserveResult{}, ErrAnsweredLocally
	}
	res, err := l.inner.Reserve(ctx, call)
	if err == nil && res.Code == lua.SoldOut {
		at := time.Now().UnixNano()
		if l.set(i, b, at) {
			l.setByAnswer.Add(1)
			l.publish(i, b, at)
		}
	}
	return res, err
}

// set raises instance i's flag for bucket b to hold until at + TTL and
// reports whether it was down before (a newly set flag).
func (l *LocalSoldOut) set(i int, b uint32, at int64) bool {
	until := at + int64(l.cfg.TTL)
	if l.cfg.NeverExpires {
		until = math.MaxInt64
	}
	f := &l.inst[i].until[b]
	now := time.Now().UnixNano()
	for {
		cur := f.Load()
		if cur >= until {
			return false
		}
		if f.CompareAndSwap(cur, until) {
			return cur <= now
		}
	}
}

// publish broadcasts "bucket set-at-ns instance" in the background.
func (l *LocalSoldOut) publish(i int, b uint32, at int64) {
	msg := fmt.Sprintf("%d %d %d", b, at, i)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.publishCtx, 2*time.Second)
		defer cancel()
		if err := l.rdb.Publish(ctx, l.channel, msg).Err(); err != nil {
			l.publishErrors.Add(1)
			l.lastPublishErr.Store(err.Error())
			return
		}
		l.published.Add(1)
	}()
}

// listen applies the notices instance i receives: its own are skipped;
// while notices are being dropped (DropNotices) the others are counted and
// discarded.
func (l *LocalSoldOut) listen(i int, ch <-chan *redis.Message) {
	for m := range ch {
		f := strings.Fields(m.Payload)
		if len(f) != 3 {
			continue
		}
		b, err1 := strconv.ParseUint(f[0], 10, 32)
		at, err2 := strconv.ParseInt(f[1], 10, 64)
		from, err3 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || err3 != nil || uint32(b) >= l.buckets {
			continue
		}
		if from == i {
			continue
		}
		if l.dropping.Load() {
			l.dropped.Add(1)
			continue
		}
		l.received.Add(1)
		if l.set(i, uint32(b), at) {
			l.setByNotice.Add(1)
		}
	}
}

// DropNotices makes every instance discard the notices it receives (on)
// or apply them again (off): the soldout-notice-lost fault.
func (l *LocalSoldOut) DropNotices(on bool) { l.dropping.Store(on) }

// NoticeState is the Pub/Sub evidence: notices published, received,
// dropped, publish errors, and whether notices are being dropped now.
func (l *LocalSoldOut) NoticeState() map[string]any {
	m := map[string]any{
		"channel":             l.channel,
		"instances":           len(l.inst),
		"dropping":            l.dropping.Load(),
		"notices_published":   l.published.Load(),
		"notices_received":    l.received.Load(),
		"notices_dropped":     l.dropped.Load(),
		"publish_errors":      l.publishErrors.Load(),
		"flags_set_by_answer": l.setByAnswer.Load(),
		"flags_set_by_notice": l.setByNotice.Load(),
		"answered_locally":    l.answered.Load(),
	}
	if e, ok := l.lastPublishErr.Load().(string); ok {
		m["last_publish_error"] = e
	}
	return m
}

// Fill adds the flag's counters to r (report.json's local_soldout, whose
// recovery figures checks.AnalyzeLocalSoldOut finds in the history).
func (l *LocalSoldOut) Fill(r *reports.LocalSoldOut) {
	r.Instances = len(l.inst)
	r.NoticesPublished, r.NoticesReceived, r.NoticesDropped = l.published.Load(), l.received.Load(), l.dropped.Load()
	r.FlagsSetByAnswer, r.FlagsSetByNotice = l.setByAnswer.Load(), l.setByNotice.Load()
}

// TTL is the flag's TTL.
func (l *LocalSoldOut) TTL() time.Duration { return l.cfg.TTL }

// Unwrap returns the wrapped system.
func (l *LocalSoldOut) Unwrap() System { return l.inner }
