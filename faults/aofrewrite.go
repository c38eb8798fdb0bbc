package faults

// aof-rewrite: an AOF rewrite (a fork) on the target master under load:
// appendonly yes (its initial rewrite awaited), write latency sampled, then
// BGREWRITEAOF and latency sampled while the child runs. Evidence: the
// fork time (latest_fork_usec), the rewrite window and the write latency
// during the rewrite against before it. Heal restores appendonly.

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"seckill-harness/compose"
)

var aofRewriteKind = Spec{
	Kind: "aof-rewrite",
	Help: "AOF rewrite under load on the target master: CONFIG SET appendonly yes, then BGREWRITEAOF (a fork); heal " +
		"restores appendonly. Evidence: latest_fork_usec, the rewrite window, write latency during vs before",
	Params: []Param{
		TargetParam,
		aofRewriteSamples.Param,
	},
	Build: newAOFRewrite,
	Rules: Rules{
		Destructive: DestructiveBecause("it changes node configuration (CONFIG SET appendonly) and forks the node (BGREWRITEAOF)"),
		Overlap:     Exclusive,
	},
}

var aofRewriteSamples = intParam("samples", 20, 1, math.MaxInt64, "", "timed SETs to a key in the node's (hot) slot before and during the rewrite")

func newAOFRewrite(v Values) (Fault, error) {
	return &AOFRewrite{target: v.Target(), samples: int(aofRewriteSamples.Of(v))}, nil
}

// AOFRewrite is the "aof-rewrite" fault. Build it with Plan/Parse.
type AOFRewrite struct {
	target  Target
	samples int

	healMu        sync.Mutex
	mu            sync.Mutex
	node          *compose.Node
	savedAppend   string
	touched       bool
	restored      bool
	enableWindow  time.Duration
	rewriteWindow time.Duration
	forkUsec      int64
	rewriteSec    int64
	before        *latSample
	during        *latSample
	notes         []string
	injectedAt    time.Time
	healedAt      time.Time
}

var _ Fault = (*AOFRewrite)(nil)

// Kind implements Fault.
func (f *AOFRewrite) Kind() string { return "aof-rewrite" }

// Target implements Fault.
func (f *AOFRewrite) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node != nil {
		return f.node.Addr
	}
	return f.target.String()
}

func (f *AOFRewrite) note(format string, args ...any) {
	f.mu.Lock()
	f.notes = append(f.notes, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

// Inject implements Fault. It returns once the rewrite has finished (or
// after 30 s of it), having timed writes before and while it ran.
func (f *AOFRewrite) Inject(ctx context.Context, env *Env) error {
	n, err := f.target.ResolveOne(ctx, env)
	if err != nil {
		return fmt.Errorf("aof-rewrite: %w", err)
	}
	f.mu.Lock()
	f.node, f.injectedAt = &n, time.Now()
	f.mu.Unlock()
	adm, err := env.cluster().Admin(n.Addr)
	if err != nil {
		return err
	}
	slot := -1
	if len(n.Slots) > 0 {
		slot = n.Slots[0][0]
	}
	if len(env.HotSlots) > 0 && n.HasSlot(env.HotSlots[0]) {
		slot = env.HotSlots[0]
	}
	key := ""
	if slot >= 0 {
		key, _ = compose.KeyInSlot("seckill-harness:aof-rewrite-probe:", slot)
		defer adm.Del(context.WithoutCancel(ctx), key)
	}
	saved, err := aofConfigGet(ctx, adm, "appendonly")
	if err != nil {
		return fmt.Errorf("aof-rewrite: %w", err)
	}
	f.mu.Lock()
	f.savedAppend, f.touched = saved["appendonly"], true
	f.mu.Unlock()
	if saved["appendonly"] != "yes" {
		t0 := time.Now()
		if err := adm.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
			return fmt.Errorf("aof-rewrite: CONFIG SET appendonly yes: %w", err)
		}
		if err := aofWaitRewrite(ctx, adm, 30*time.Second); err != nil {
			f.note("initial AOF rewrite: %v", err)
		}
		f.mu.Lock()
		f.enableWindow = time.Since(t0)
		f.mu.Unlock()
	}
	if key != "" {
		s := aofTimedWrites(ctx, adm, key, f.samples)
		f.mu.Lock()
		f.before = s
		f.mu.Unlock()
	}
	t0 := time.Now()
	if err := adm.BgRewriteAOF(ctx).Err(); err != nil {
		return fmt.Errorf("aof-rewrite: BGREWRITEAOF: %w", err)
	}
	env.logf("aof-rewrite: BGREWRITEAOF on %s", n.Addr)
	if key != "" {
		s := aofTimedWrites(ctx, adm, key, f.samples)
		f.mu.Lock()
		f.during = s
		f.mu.Unlock()
	}
	if err := aofWaitRewrite(ctx, adm, 30*time.Second); err != nil {
		f.note("rewrite: %v", err)
	}
	window := time.Since(t0)
	info, err := adm.Info(ctx, "persistence", "stats").Result()
	if err != nil {
		return fmt.Errorf("aof-rewrite: INFO persistence stats: %w", err)
	}
	fork, _ := strconv.ParseInt(aofInfoValue(info, "latest_fork_usec"), 10, 64)
	sec, _ := strconv.ParseInt(aofInfoValue(info, "aof_last_rewrite_time_sec"), 10, 64)
	f.mu.Lock()
	f.rewriteWindow, f.forkUsec, f.rewriteSec = window, fork, sec
	f.mu.Unlock()
	if st := aofInfoValue(info, "aof_last_bgrewrite_status"); st != "ok" {
		return fmt.Errorf("aof-rewrite: aof_last_bgrewrite_status %q", st)
	}
	return nil
}

// Heal implements Fault: appendonly back to what it was.
func (f *AOFRewrite) Heal(ctx context.Context, env *Env) error {
	f.healMu.Lock()
	defer f.healMu.Unlock()
	f.mu.Lock()
	node, touched, restored, saved := f.node, f.touched, f.restored, f.savedAppend
	f.mu.Unlock()
	if env.cluster() == nil || node == nil || !touched || restored {
		return nil
	}
	adm, err := env.cluster().Admin(node.Addr)
	if err != nil {
		return err
	}
	if saved != "yes" {
		// A rewrite still running is stopped by turning AOF off.
		if err := adm.ConfigSet(ctx, "appendonly", saved).Err(); err != nil {
			return fmt.Errorf("aof-rewrite heal: CONFIG SET appendonly %s: %w", saved, err)
		}
	}
	f.mu.Lock()
	f.restored, f.healedAt = true, time.Now()
	f.mu.Unlock()
	return nil
}

// Evidence implements Fault.
func (f *AOFRewrite) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{"target": f.target.String()}
	if f.node != nil {
		ev["node"] = tpNodeRef(*f.node)
	}
	if f.touched {
		ev["appendonly_before"] = f.savedAppend
	}
	if f.enableWindow > 0 {
		ev["aof_enable_ms"] = tpMillis(f.enableWindow)
	}
	if f.rewriteWindow > 0 {
		ev["rewrite_window_ms"] = tpMillis(f.rewriteWindow)
		ev["latest_fork_usec"] = f.forkUsec
		ev["aof_last_rewrite_time_sec"] = f.rewriteSec
	}
	if f.before != nil {
		ev["write_latency_before"] = *f.before
	}
	if f.during != nil {
		ev["write_latency_during"] = *f.during
	}
	if f.before != nil && f.during != nil && f.before.N > 0 && f.during.N > 0 {
		ev["latency_shift_ms"] = aofRound3(f.during.P50Ms - f.before.P50Ms)
	}
	if len(f.notes) > 0 {
		ev["notes"] = append([]string(nil), f.notes...)
	}
	if !f.injectedAt.IsZero() {
		ev["injected_at"] = f.injectedAt.UTC().Format(time.RFC3339Nano)
	}
	if f.restored {
		ev["healed"] = true
		ev["duration_ms"] = tpMillis(f.healedAt.Sub(f.injectedAt))
	}
	return ev
}
