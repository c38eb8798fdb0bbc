package faults

// slow-aof: make the target master's writes wait for a slow AOF: appendonly
// yes, appendfsync always and DEBUG AOF-FLUSH-SLEEP (Redis sleeps before each
// AOF flush, and replies only after the flush). Where DEBUG is refused the
// same delay is put on the replies with a downstream latency toxic.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
)

// Mechanisms of slow-aof, as reported in its evidence.
const (
	MechanismAOFFlushSleep = "debug-aof-flush-sleep"
	MechanismLatencyToxic  = "latency-toxic-fallback"
)

var slowAOFKind = Spec{
	Kind: "slow-aof",
	Help: "slow the target master's AOF: appendonly yes, appendfsync always, DEBUG AOF-FLUSH-SLEEP <sleep> " +
		"(every write waits about sleep); where DEBUG is refused, a downstream latency toxic of the same size " +
		"on the node's proxy instead; heal restores the previous settings",
	Params: []Param{TargetParam, slowAOFSleep.Param, slowAOFRewrite.Param, slowAOFSamples.Param},

	Build: newSlowAOF,
	Rules: Rules{
		Destructive: DestructiveBecause("it changes node configuration (CONFIG SET appendonly/appendfsync) and uses DEBUG AOF-FLUSH-SLEEP"),
		Overlap:     Exclusive,
	},
}

var (
	slowAOFSleep   = durationParam("sleep", 20*time.Millisecond, "how long Redis sleeps before each AOF flush (DEBUG AOF-FLUSH-SLEEP, in µs on the wire)")
	slowAOFRewrite = boolParam("rewrite", false, "also start BGREWRITEAOF (a fork) under the load")
	slowAOFSamples = intParam("samples", 20, 0, math.MaxInt64, "", "timed SETs to a key in the node's (hot) slot before, during (fewer if sleep is long) and after the fault; 0 disables")
)

func newSlowAOF(v Values) (Fault, error) {
	f := &SlowAOF{target: v.Target(), sleep: slowAOFSleep.Of(v), rewrite: slowAOFRewrite.Of(v), samples: int(slowAOFSamples.Of(v))}
	if f.sleep < time.Microsecond || f.sleep > 10*time.Second {
		raw, _ := v.Given(slowAOFSleep.Param)
		return nil, fmt.Errorf("sleep=%q: want a duration in [1µs, 10s]", raw)
	}
	return f, nil
}

// SlowAOF is the "slow-aof" fault. Build it with Plan/Parse.
type SlowAOF struct {
	target  Target
	sleep   time.Duration
	rewrite bool
	samples int

	healMu     sync.Mutex // serialises Heal
	mu         sync.Mutex // guards the fields below
	nodes      []*aofNode
	injectedAt time.Time
	healedAt   time.Time
	healed     bool
}

// aofNode is what slow-aof did to one node.
type aofNode struct {
	node      compose.Node
	mechanism string
	debugErr  string
	saved     map[string]string // CONFIG values before the fault (nil: not read)
	touched   bool              // CONFIG was changed: restore at heal
	sleepSet  bool
	toxic     string // name of the fallback toxic
	rewrote   bool
	aofReady  time.Duration // how long the initial AOF rewrite took
	probeKey  string
	viaLoad   bool // samples go through env.Client (the proxies) rather than directly
	before    *latSample
	inside    *latSample
	after     *latSample
	latency   []map[string]any
	notes     []string
}

// latSample is a few timed writes.
type latSample struct {
	N      int     `json:"n"`
	Errors int     `json:"errors,omitempty"`
	MinMs  float64 `json:"min_ms"`
	P50Ms  float64 `json:"p50_ms"`
	MeanMs float64 `json:"mean_ms"`
	MaxMs  float64 `json:"max_ms"`
}

var _ Fault = (*SlowAOF)(nil)

// the CONFIG parameters slow-aof changes and restores.
var aofConfigKeys = []string{"appendonly", "appendfsync", "latency-monitor-threshold"}

// Kind implements Fault.
func (f *SlowAOF) Kind() string { return "slow-aof" }

// Target implements Fault.
func (f *SlowAOF) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.nodes) == 0 {
		return f.target.String()
	}
	var addrs []string
	for _, n := range f.nodes {
		addrs = append(addrs, n.node.Addr)
	}
	return strings.Join(addrs, ",")
}

// Inject implements Fault.
func (f *SlowAOF) Inject(ctx context.Context, env *Env) error {
	targets, err := f.target.Resolve(ctx, env)
	if err != nil {
		return fmt.Errorf("slow-aof: %w", err)
	}
	f.mu.Lock()
	f.injectedAt = time.Now()
	for _, n := range targets {
		f.nodes = append(f.nodes, &aofNode{node: n})
	}
	nodes := append([]*aofNode(nil), f.nodes...)
	f.mu.Unlock()
	var errs []error
	for _, an := range nodes {
		if err := f.injectNode(ctx, env, an); err != nil {
			errs = append(errs, fmt.Errorf("slow-aof on %s: %w", an.node.Addr, err))
		}
	}
	return errors.Join(errs...)
}

// injectNode slows one node: it picks the mechanism, samples the write
// latency before, turns AOF on with appendfsync always, arms the delay
// (and the rewrite) and samples again inside the fault.
func (f *SlowAOF) injectNode(ctx context.Context, env *Env, an *aofNode) error {
	adm, err := env.cluster().Admin(an.node.Addr)
	if err != nil {
		return err
	}
	mech, err := f.mechanism(ctx, env, an, adm)
	if err != nil {
		return err
	}
	sampler := f.sampleBefore(ctx, env, an, adm, mech)
	if err := f.configure(ctx, an, adm); err != nil {
		return err
	}
	if err := f.arm(ctx, env, an, adm, mech); err != nil {
		return err
	}
	env.logf("slow-aof: %s on %s (sleep %v, appendfsync always)", mech, an.node.Addr, f.sleep)
	if f.rewrite {
		if err := adm.BgRewriteAOF(ctx).Err(); err != nil {
			f.nodeNote(an, "BGREWRITEAOF: %v", err)
		} else {
			f.mu.Lock()
			an.rewrote = true
			f.mu.Unlock()
		}
	}
	f.mu.Lock()
	key := an.probeKey
	f.mu.Unlock()
	if key != "" && f.sleep < time.Second {
		n := min(f.samples, max(3, int(2*time.Second/f.sleep)))
		s := aofTimedWrites(ctx, sampler, key, n)
		f.mu.Lock()
		an.inside = s
		f.mu.Unlock()
	}
	return nil
}

// mechanism says how the node is slowed: DEBUG AOF-FLUSH-SLEEP 0 is
// harmless and tells whether DEBUG is allowed; where it is refused, a
// latency toxic on the node's proxy (which must exist).
func (f *SlowAOF) mechanism(ctx context.Context, env *Env, an *aofNode, adm *redis.Client) (string, error) {
	mech := MechanismAOFFlushSleep
	if err := adm.Do(ctx, "DEBUG", "AOF-FLUSH-SLEEP", 0).Err(); err != nil {
		if !aofIsRedisErr(err) {
			return "", fmt.Errorf("DEBUG AOF-FLUSH-SLEEP 0: %w", err)
		}
		if env.proxies() == nil {
			return "", fmt.Errorf("DEBUG AOF-FLUSH-SLEEP is refused (%v) and there are no proxies for the latency-toxic fallback: "+
				"start the nodes with enable-debug-command local/yes or run with proxies", err)
		}
		mech = MechanismLatencyToxic
		f.mu.Lock()
		an.debugErr = err.Error()
		f.mu.Unlock()
		env.logf("slow-aof: DEBUG refused on %s (%v): falling back to a downstream latency toxic", an.node.Addr, err)
	}
	f.mu.Lock()
	an.mechanism = mech
	f.mu.Unlock()
	return mech, nil
}

// sampleBefore times writes to a probe key in the node's (hot) slot before
// the fault and returns the client it sampled through: direct for the
// server-side delay, the load's client (the proxies) when the delay is a
// toxic on the proxy; nil when there is none.
func (f *SlowAOF) sampleBefore(ctx context.Context, env *Env, an *aofNode, adm *redis.Client, mech string) redis.Cmdable {
	var sampler redis.Cmdable = adm
	viaLoad := false
	if mech == MechanismLatencyToxic {
		if env.Client != nil {
			sampler, viaLoad = env.Client, true
		} else {
			sampler = nil
		}
	}
	if an.node.Role != "master" || len(an.node.Slots) == 0 || f.samples <= 0 || sampler == nil {
		if f.samples > 0 {
			f.nodeNote(an, "no latency samples: not a master owning slots, or no client through the proxies")
		}
		return sampler
	}
	slot := an.node.Slots[0][0]
	if len(env.HotSlots) > 0 && an.node.HasSlot(env.HotSlots[0]) {
		slot = env.HotSlots[0]
	}
	if key, err := compose.KeyInSlot("seckill-harness:slow-aof-probe:", slot); err == nil {
		f.mu.Lock()
		an.probeKey, an.viaLoad = key, viaLoad
		f.mu.Unlock()
		s := aofTimedWrites(ctx, sampler, key, f.samples)
		f.mu.Lock()
		an.before = s
		f.mu.Unlock()
	}
	return sampler
}

// configure saves the settings heal restores, then turns on the latency
// monitor, AOF (waiting for the rewrite that starts) and appendfsync always.
func (f *SlowAOF) configure(ctx context.Context, an *aofNode, adm *redis.Client) error {
	saved, err := aofConfigGet(ctx, adm, aofConfigKeys...)
	if err != nil {
		return err
	}
	f.mu.Lock()
	an.saved = saved
	an.touched = true
	f.mu.Unlock()
	_ = adm.Do(ctx, "LATENCY", "RESET").Err()
	if err := adm.ConfigSet(ctx, "latency-monitor-threshold", "1").Err(); err != nil {
		return fmt.Errorf("CONFIG SET latency-monitor-threshold 1: %w", err)
	}
	if saved["appendonly"] != "yes" {
		t0 := time.Now()
		if err := adm.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
			return fmt.Errorf("CONFIG SET appendonly yes: %w", err)
		}
		// Turning AOF on starts a rewrite; wait for it, so that the flushes
		// measured are the steady-state ones.
		if err := aofWaitRewrite(ctx, adm, 15*time.Second); err != nil {
			f.nodeNote(an, "initial AOF rewrite: %v", err)
		}
		f.mu.Lock()
		an.aofReady = time.Since(t0)
		f.mu.Unlock()
	}
	if err := adm.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
		return fmt.Errorf("CONFIG SET appendfsync always: %w", err)
	}
	return nil
}

// arm sets the delay: DEBUG AOF-FLUSH-SLEEP, or the latency toxic.
func (f *SlowAOF) arm(ctx context.Context, env *Env, an *aofNode, adm *redis.Client, mech string) error {
	switch mech {
	case MechanismAOFFlushSleep:
		f.mu.Lock()
		an.sleepSet = true
		f.mu.Unlock()
		if err := adm.Do(ctx, "DEBUG", "AOF-FLUSH-SLEEP", f.sleep.Microseconds()).Err(); err != nil {
			return fmt.Errorf("DEBUG AOF-FLUSH-SLEEP %d: %w", f.sleep.Microseconds(), err)
		}
	case MechanismLatencyToxic:
		name := fmt.Sprintf("slow-aof-%d", toxicSeq.Add(1))
		latMs := max(1, (f.sleep+time.Millisecond-1)/time.Millisecond)
		f.mu.Lock()
		an.toxic = name
		f.mu.Unlock()
		err := env.proxies().AddToxic(an.node.Addr, compose.Toxic{
			Name: name, Type: "latency", Stream: "downstream",
			Attributes: map[string]any{"latency": int64(latMs)},
		})
		if err != nil {
			return fmt.Errorf("latency-toxic fallback: %w", err)
		}
	}
	return nil
}

// Heal implements Fault: DEBUG AOF-FLUSH-SLEEP 0 (or the toxic removed),
// LATENCY LATEST read, the previous appendfsync / appendonly /
// latency-monitor-threshold restored, a last latency sample taken.
func (f *SlowAOF) Heal(ctx context.Context, env *Env) error {
	f.healMu.Lock()
	defer f.healMu.Unlock()
	if env.cluster() == nil {
		return nil
	}
	f.mu.Lock()
	nodes := append([]*aofNode(nil), f.nodes...)
	f.mu.Unlock()
	var errs []error
	for _, an := range nodes {
		if err := f.healNode(ctx, env, an); err != nil {
			errs = append(errs, fmt.Errorf("slow-aof heal on %s: %w", an.node.Addr, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	f.mu.Lock()
	if !f.healed && len(nodes) > 0 {
		f.healed, f.healedAt = true, time.Now()
	}
	f.mu.Unlock()
	return nil
}

func (f *SlowAOF) healNode(ctx context.Context, env *Env, an *aofNode) error {
	f.mu.Lock()
	toxic, sleepSet, touched := an.toxic, an.sleepSet, an.touched
	saved := an.saved
	key, viaLoad, needAfter := an.probeKey, an.viaLoad, an.after == nil
	f.mu.Unlock()
	addr := an.node.Addr
	var errs []error
	if toxic != "" && env.proxies() != nil {
		if err := env.proxies().RemoveToxic(addr, toxic); err != nil {
			errs = append(errs, err)
		}
	}
	if !touched && !sleepSet {
		return errors.Join(errs...)
	}
	adm, err := env.cluster().Admin(addr)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if sleepSet {
		if err := adm.Do(ctx, "DEBUG", "AOF-FLUSH-SLEEP", 0).Err(); err != nil {
			errs = append(errs, fmt.Errorf("DEBUG AOF-FLUSH-SLEEP 0: %w", err))
		}
	}
	if touched && needAfter {
		if ev, err := aofLatencyLatest(ctx, adm); err == nil {
			f.mu.Lock()
			an.latency = ev
			f.mu.Unlock()
		} else {
			f.nodeNote(an, "LATENCY LATEST: %v", err)
		}
	}
	if saved != nil {
		// appendfsync before appendonly: turning AOF off last.
		for _, k := range []string{"appendfsync", "appendonly", "latency-monitor-threshold"} {
			v, ok := saved[k]
			if !ok {
				continue
			}
			if err := adm.ConfigSet(ctx, k, v).Err(); err != nil {
				errs = append(errs, fmt.Errorf("CONFIG SET %s %s: %w", k, v, err))
			}
		}
	}
	if key != "" {
		var sampler redis.Cmdable = adm
		if viaLoad && env.Client != nil {
			sampler = env.Client
		}
		if needAfter && len(errs) == 0 {
			s := aofTimedWrites(ctx, sampler, key, f.samples)
			f.mu.Lock()
			an.after = s
			f.mu.Unlock()
		}
		_ = sampler.Del(ctx, key).Err()
	}
	return errors.Join(errs...)
}

// Evidence implements Fault.
func (f *SlowAOF) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{
		"sleep_ms": tpMillis(f.sleep), "sleep_us": f.sleep.Microseconds(),
		"rewrite": f.rewrite, "target": f.target.String(),
	}
	if len(f.nodes) == 0 {
		return ev
	}
	var mechs []string
	var per []map[string]any
	for _, an := range f.nodes {
		if an.mechanism != "" && !slices.Contains(mechs, an.mechanism) {
			mechs = append(mechs, an.mechanism)
		}
		e := map[string]any{"node": tpNodeRef(an.node), "mechanism": an.mechanism}
		if an.debugErr != "" {
			e["debug_refused"] = an.debugErr
		}
		if an.saved != nil {
			e["config_before"] = an.saved
		}
		if an.aofReady > 0 {
			e["aof_enable_ms"] = tpMillis(an.aofReady)
		}
		if an.toxic != "" {
			e["toxic"] = an.toxic
		}
		if an.rewrote {
			e["bgrewriteaof"] = true
		}
		if an.probeKey != "" {
			e["probe_key"] = an.probeKey
			if an.viaLoad {
				e["sample_path"] = "load client (proxies)"
			} else {
				e["sample_path"] = "direct"
			}
		}
		if an.before != nil {
			e["write_latency_before"] = *an.before
		}
		if an.inside != nil {
			e["write_latency_during"] = *an.inside
		}
		if an.after != nil {
			e["write_latency_after"] = *an.after
		}
		if an.before != nil && an.inside != nil && an.before.N > 0 && an.inside.N > 0 {
			e["latency_shift_ms"] = aofRound3(an.inside.P50Ms - an.before.P50Ms)
		}
		if an.latency != nil {
			e["latency_latest"] = an.latency
		}
		if len(an.notes) > 0 {
			e["notes"] = append([]string(nil), an.notes...)
		}
		per = append(per, e)
	}
	ev["mechanism"] = strings.Join(mechs, ",")
	ev["nodes"] = per
	if len(per) == 1 {
		for _, k := range []string{"write_latency_before", "write_latency_during", "write_latency_after", "latency_shift_ms", "latency_latest"} {
			if v, ok := per[0][k]; ok {
				ev[k] = v
			}
		}
	}
	if !f.injectedAt.IsZero() {
		ev["injected_at"] = f.injectedAt.UTC().Format(time.RFC3339Nano)
	}
	if f.healed {
		ev["healed"] = true
		ev["duration_ms"] = tpMillis(f.healedAt.Sub(f.injectedAt))
	}
	return ev
}

func (f *SlowAOF) nodeNote(an *aofNode, format string, args ...any) {
	f.mu.Lock()
	an.notes = append(an.notes, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

// timedWrites times n sequential SETs of key (with a 10-minute expiry).
func aofTimedWrites(ctx context.Context, cl redis.Cmdable, key string, n int) *latSample {
	s := &latSample{}
	var ds []float64
	for i := 0; i < n && ctx.Err() == nil; i++ {
		t0 := time.Now()
		err := cl.Set(ctx, key, strconv.Itoa(i), 10*time.Minute).Err()
		d := time.Since(t0)
		if err != nil {
			s.Errors++
			continue
		}
		ds = append(ds, float64(d.Microseconds())/1000)
	}
	s.N = len(ds)
	if len(ds) == 0 {
		return s
	}
	slices.Sort(ds)
	sum := 0.0
	for _, d := range ds {
		sum += d
	}
	s.MinMs, s.MaxMs = aofRound3(ds[0]), aofRound3(ds[len(ds)-1])
	s.P50Ms = aofRound3(ds[(len(ds)-1)/2])
	s.MeanMs = aofRound3(sum / float64(len(ds)))
	return s
}

func aofRound3(x float64) float64 {
	return float64(int64(x*1000+0.5)) / 1000
}

func aofIsRedisErr(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// configGet reads CONFIG values by exact name.
func aofConfigGet(ctx context.Context, cl *redis.Client, keys ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range keys {
		m, err := cl.ConfigGet(ctx, k).Result()
		if err != nil {
			return nil, fmt.Errorf("CONFIG GET %s: %w", k, err)
		}
		v, ok := m[k]
		if !ok {
			return nil, fmt.Errorf("CONFIG GET %s: no such parameter", k)
		}
		out[k] = v
	}
	return out, nil
}

// waitAOFRewrite waits until no AOF rewrite is scheduled or running.
func aofWaitRewrite(ctx context.Context, cl *redis.Client, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		info, err := cl.Info(ctx, "persistence").Result()
		if err == nil && aofInfoValue(info, "aof_rewrite_in_progress") == "0" && aofInfoValue(info, "aof_rewrite_scheduled") == "0" {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("still rewriting")
			}
			return fmt.Errorf("after %v: %w", limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func aofInfoValue(info, key string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), key+":"); ok {
			return v
		}
	}
	return ""
}

// latencyLatest reads LATENCY LATEST: event, time, latest and max ms.
func aofLatencyLatest(ctx context.Context, cl *redis.Client) ([]map[string]any, error) {
	raw, err := cl.Do(ctx, "LATENCY", "LATEST").Slice()
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, r := range raw {
		row, ok := r.([]any)
		if !ok || len(row) < 4 {
			continue
		}
		e := map[string]any{"event": fmt.Sprint(row[0])}
		if ts, ok := row[1].(int64); ok {
			e["at"] = time.Unix(ts, 0).UTC().Format(time.RFC3339)
		}
		e["latest_ms"] = row[2]
		e["max_ms"] = row[3]
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(a["event"].(string), b["event"].(string)) })
	return out, nil
}
