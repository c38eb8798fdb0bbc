package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"math"
	"sort"
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

// LocalSoldOut wraps a reserve path with the local sold-out flag.
type LocalSoldOut struct {
	cfg     LocalSoldOutConfig
	inner   Path
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

var _ Path = (*LocalSoldOut)(nil)

// SoldOutChannel is the Pub/Sub channel of activity a's sold-out notices.
func SoldOutChannel(a *lua.Activity) string {
	return fmt.Sprintf("seckill:soldout-notice:%s:%s:%d", a.ID, a.SKU, a.Version)
}

// NewLocalSoldOut subscribes every instance to a's notice channel on rdb
// (waiting for each subscription to be confirmed) and returns the path
// inner with the flag in front. Close ends the subscriptions.
func NewLocalSoldOut(ctx context.Context, rdb *redis.ClusterClient, a *lua.Activity, inner Path, cfg LocalSoldOutConfig) (*LocalSoldOut, error) {
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

// Report is report.json's local_soldout: the flag's counters and the
// recovery figures AnalyzeLocalSoldOut finds in ops.
func (l *LocalSoldOut) Report(ops iter.Seq2[int, *Op], buckets int) *reports.LocalSoldOut {
	r := AnalyzeLocalSoldOut(ops, buckets, l.cfg.TTL)
	r.Instances = len(l.inst)
	r.NoticesPublished, r.NoticesReceived, r.NoticesDropped = l.published.Load(), l.received.Load(), l.dropped.Load()
	r.FlagsSetByAnswer, r.FlagsSetByNotice = l.setByAnswer.Load(), l.setByNotice.Load()
	return r
}

// AnalyzeLocalSoldOut measures, from a history alone, what a local
// sold-out flag of the given TTL saved and cost (with ttl 0 — no flag —
// the same figures serve as the baseline of a comparison):
//
//   - answers given locally (= Redis calls saved) and the reserve calls
//     Redis got after its bucket's first SOLD_OUT;
//   - per unit released after its bucket's first SOLD_OUT from Redis, the
//     time until the reserve that sold it again: releases, in the order
//     they were sent, are matched one each with the bucket's first-time
//     ACCEPTED answers (replays and repeated reservation ids excluded) in
//     the order they came back, a sale matching a release when it came
//     back after the release was sent (the unit is free somewhere between
//     the release's send and its answer, so a reserve sent meanwhile may
//     take it). The window is from the release's send to the sale's
//     answer. A release that finds no sale is unrecovered when the load
//     went on for TTL plus RecoverySlack after it, not judged otherwise;
//   - the LOCAL_SOLD_OUT answers given in a bucket inside such a window.
func AnalyzeLocalSoldOut(ops iter.Seq2[int, *Op], buckets int, ttl time.Duration) *reports.LocalSoldOut {
	r := &reports.LocalSoldOut{TTLMs: ttl.Milliseconds(), RecoverySlackMs: RecoverySlack.Milliseconds()}
	firstSold, loadEnd := firstSoldOut(ops, buckets)
	releases := releasesAfterSellOut(ops, firstSold)
	sales := make([][]time.Duration, buckets)
	locals := make([][]time.Duration, buckets)
	seen := map[string]bool{}
	for _, o := range ops {
		if int(o.Bucket) >= buckets {
			continue
		}
		b := o.Bucket
		if o.Outcome == OutcomeLocalSoldOut {
			r.AnsweredLocally++
			locals[b] = append(locals[b], o.Start)
			continue
		}
		if firstSold[b] < 0 {
			continue
		}
		switch {
		case o.Kind.IsReserve():
			if o.Start >= firstSold[b] {
				r.RedisCallsAfterSellOut += int64(o.Attempts)
			}
			if o.Accepted() && !o.Replay() && o.RID != "" && !seen[o.RID] && o.End >= firstSold[b] {
				seen[o.RID] = true
				sales[b] = append(sales[b], o.End)
			}
		}
	}
	r.RedisCallsSaved = r.AnsweredLocally
	var windows []float64
	for b := 0; b < buckets; b++ {
		rel, sold, loc := releases[b], sales[b], locals[b]
		sort.Slice(rel, func(i, j int) bool { return rel[i] < rel[j] })
		sort.Slice(sold, func(i, j int) bool { return sold[i] < sold[j] })
		sort.Slice(loc, func(i, j int) bool { return loc[i] < loc[j] })
		inWindow := make([]bool, len(loc)) // local answers inside some window
		j := 0
		for _, t := range rel {
			r.ReleasesAfterSellOut++
			for j < len(sold) && sold[j] < t {
				j++
			}
			if j == len(sold) {
				if t+ttl+RecoverySlack <= loadEnd {
					r.Unrecovered++
					if len(r.UnrecoveredExamples) < 5 {
						r.UnrecoveredExamples = append(r.UnrecoveredExamples,
							fmt.Sprintf("bucket %d: unit released at %.3fs never sold again (load ran to %.3fs, TTL %s)", b, t.Seconds(), loadEnd.Seconds(), ttl))
					}
				} else {
					r.NotJudged++
				}
				continue
			}
			w := sold[j] - t
			j++
			r.Recovered++
			if w <= ttl+RecoverySlack {
				r.RecoveredWithinTTL++
			}
			windows = append(windows, float64(w.Microseconds())/1000)
			lo := sort.Search(len(loc), func(k int) bool { return loc[k] >= t })
			hi := sort.Search(len(loc), func(k int) bool { return loc[k] >= t+w })
			for k := lo; k < hi; k++ {
				inWindow[k] = true
			}
		}
		for _, in := range inWindow {
			if in {
				r.FalseSoldOutAnswers++
			}
		}
	}
	r.FalseSoldOutWindowMs = percentilesOf(windows)
	return r
}

// firstSoldOut is, per bucket, the first send of its first SOLD_OUT answer
// (-1 for none), and the last send of any operation (the load's end).
func firstSoldOut(ops iter.Seq2[int, *Op], buckets int) (firstSold []time.Duration, loadEnd time.Duration) {
	firstSold = make([]time.Duration, buckets)
	for b := range firstSold {
		firstSold[b] = -1
	}
	for _, o := range ops {
		loadEnd = max(loadEnd, o.Start)
		if int(o.Bucket) >= buckets || !o.Kind.IsReserve() {
			continue
		}
		if o.Outcome == Outcome(lua.SoldOut) && (firstSold[o.Bucket] < 0 || o.Start < firstSold[o.Bucket]) {
			firstSold[o.Bucket] = o.Start
		}
	}
	return firstSold, loadEnd
}

// releasesAfterSellOut is, per bucket, when each reservation released after
// its bucket first answered SOLD_OUT (firstSold, -1 for never) was released:
// the first send of the earliest operation that may have run the release.
// A release whose reply was lost and whose same-id re-send answered
// ALREADY_RELEASED freed its unit as much as one answered RELEASED; each
// reservation counts once, since another operation may have been the one.
func releasesAfterSellOut(ops iter.Seq2[int, *Op], firstSold []time.Duration) [][]time.Duration {
	type releaseAt struct {
		bucket uint16
		at     time.Duration
	}
	released := map[string]releaseAt{}
	for _, o := range ops {
		b := int(o.Bucket)
		if o.Kind != KindRelease || o.RID == "" || b >= len(firstSold) || firstSold[b] < 0 || o.End < firstSold[b] {
			continue
		}
		ran := o.Outcome == Outcome(lua.CompensateReleased) || o.Outcome == Outcome(lua.CompensateAlreadyReleased) && o.HadUnknown()
		if t, seen := released[o.RID]; ran && (!seen || o.Start < t.at) {
			released[o.RID] = releaseAt{o.Bucket, o.Start}
		}
	}
	out := make([][]time.Duration, len(firstSold))
	for _, r := range released {
		out[r.bucket] = append(out[r.bucket], r.at)
	}
	return out
}

// percentilesOf is the nearest-rank percentiles of v (zero when empty).
func percentilesOf(v []float64) reports.Percentiles {
	if len(v) == 0 {
		return reports.Percentiles{}
	}
	sort.Float64s(v)
	at := func(q float64) float64 {
		k := int(math.Ceil(q/100*float64(len(v)))) - 1
		return v[max(0, min(k, len(v)-1))]
	}
	return reports.Percentiles{P50: at(50), P95: at(95), P99: at(99), P999: at(99.9), Max: v[len(v)-1]}
}

// judgeL1: with the local sold-out flag, every unit released after its
// bucket's sell-out is sold again within the TTL plus RecoverySlack (the
// flags expire and the next request re-checks Redis); the undersell is
// bounded by the window.
func judgeL1(f *Facts) Verdict {
	r := AnalyzeLocalSoldOut(f.all(), f.Buckets(), f.LocalSoldOutTTL)
	late := r.Recovered - r.RecoveredWithinTTL
	ev := map[string]any{"ttl_ms": r.TTLMs, "answered_locally": r.AnsweredLocally, "releases_after_sell_out": r.ReleasesAfterSellOut,
		"recovered": r.Recovered, "recovered_within_ttl": r.RecoveredWithinTTL, "unrecovered": r.Unrecovered, "not_judged": r.NotJudged,
		"false_sold_out_window_max_ms": r.FalseSoldOutWindowMs.Max, "false_sold_out_answers": r.FalseSoldOutAnswers,
		"late_or_unrecovered": late + r.Unrecovered}
	if r.Unrecovered > 0 || late > 0 {
		detail := fmt.Sprintf("%d released unit(s) never sold again and %d sold only after TTL %s + %s: the flag did not expire into a re-check", r.Unrecovered, late, f.LocalSoldOutTTL, RecoverySlack)
		if len(r.UnrecoveredExamples) > 0 {
			detail += "; e.g. " + r.UnrecoveredExamples[0]
			ev["unrecovered_examples"] = r.UnrecoveredExamples
		}
		return Verdict{true, detail, ev}
	}
	return Verdict{false, fmt.Sprintf("%d unit(s) released after the sell-out, all sold again within TTL %s + %s (false sold-out window max %.0f ms, %d answers given locally meanwhile); %d answered locally in all",
		r.Recovered, f.LocalSoldOutTTL, RecoverySlack, r.FalseSoldOutWindowMs.Max, r.FalseSoldOutAnswers, r.AnsweredLocally), ev}
}

// vacuousL1: no unit came back after a sell-out, so recovery was not tested.
func vacuousL1(_ *Facts, v Verdict) string {
	if v.Evidence["recovered"] == 0 && v.Evidence["unrecovered"] == 0 {
		return fmt.Sprintf("no unit was released after its bucket sold out (%v not judged: too near the end): recovery not tested", v.Evidence["not_judged"])
	}
	return ""
}
