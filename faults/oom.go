package faults

// oom: memory full on the target master. maxmemory is lowered to just above
// the node's used memory with maxmemory-policy noeviction, so writes that
// need memory are refused with "OOM command not allowed" while reads and
// writes that free memory go on; heal restores both settings. The contract
// of the path under test: reserves fail closed (classified OOM, never
// SOLD_OUT or ACCEPTED without a reservation), no key is evicted, nothing
// is half-written, and service resumes after heal.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

var oomKind = Spec{
	Kind: "oom",
	Help: "memory full on the target master: CONFIG SET maxmemory-policy noeviction and maxmemory to used_memory + headroom, " +
		"so writes are refused with OOM; heal restores both. Evidence: maxmemory set, used memory, OOM rejections and " +
		"evicted_keys during the fault (must stay 0)",
	Params: []Param{
		TargetParam,
		oomHeadroom.Param,
		oomPolicy.Param,
	},
	Build: newOOM,
	Rules: Rules{
		Destructive: DestructiveBecause("it changes node configuration (CONFIG SET maxmemory, maxmemory-policy)"),
		Overlap:     Exclusive,
	},
}

var (
	oomHeadroom = intParam("headroom", 65536, 0, math.MaxInt64, "", "bytes above used_memory at which maxmemory is set (at least 0)")
	oomPolicy   = textParam("policy", "noeviction", "maxmemory-policy during the fault; anything but noeviction lets Redis evict keys (a broken configuration a test uses to prove the evicted_keys figure)",
		func(v string) error {
			switch v {
			case "noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl":
				return nil
			}
			return errors.New("want a maxmemory-policy such as noeviction")
		})
)

func newOOM(v Values) (Fault, error) {
	return &OOM{target: v.Target(), headroom: int(oomHeadroom.Of(v)), policy: oomPolicy.Of(v)}, nil
}

// OOM is the "oom" fault. Build it with Plan/Parse.
type OOM struct {
	target   Target
	headroom int
	policy   string

	healMu     sync.Mutex
	mu         sync.Mutex
	nodes      []*oomNode
	injectedAt time.Time
	healedAt   time.Time
	healed     bool
}

// oomNode is what oom did to one node.
type oomNode struct {
	ref                map[string]any
	addr               string
	saved              map[string]string // maxmemory, maxmemory-policy before
	usedBefore         int64
	maxmemorySet       int64
	before, after      oomStats
	afterRead, touched bool
	restored           bool
}

// oomStats are the node's memory counters.
type oomStats struct {
	evicted, oomErrors, used int64
}

var _ Fault = (*OOM)(nil)

// Kind implements Fault.
func (f *OOM) Kind() string { return "oom" }

// Target implements Fault.
func (f *OOM) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.nodes) == 1 {
		return f.nodes[0].addr
	}
	return f.target.String()
}

// Inject implements Fault.
func (f *OOM) Inject(ctx context.Context, env *Env) error {
	targets, err := f.target.Resolve(ctx, env)
	if err != nil {
		return fmt.Errorf("oom: %w", err)
	}
	f.mu.Lock()
	f.injectedAt = time.Now()
	for _, n := range targets {
		f.nodes = append(f.nodes, &oomNode{addr: n.Addr, ref: tpNodeRef(n)})
	}
	nodes := append([]*oomNode(nil), f.nodes...)
	f.mu.Unlock()
	var errs []error
	for _, on := range nodes {
		if err := f.injectNode(ctx, env, on); err != nil {
			errs = append(errs, fmt.Errorf("oom on %s: %w", on.addr, err))
		}
	}
	return errors.Join(errs...)
}

func (f *OOM) injectNode(ctx context.Context, env *Env, on *oomNode) error {
	adm, err := env.cluster().Admin(on.addr)
	if err != nil {
		return err
	}
	saved, err := aofConfigGet(ctx, adm, "maxmemory", "maxmemory-policy")
	if err != nil {
		return err
	}
	st, err := readOOMStats(ctx, env, on.addr)
	if err != nil {
		return err
	}
	f.mu.Lock()
	on.saved, on.before, on.usedBefore, on.touched = saved, st, st.used, true
	f.mu.Unlock()
	if err := adm.ConfigSet(ctx, "maxmemory-policy", f.policy).Err(); err != nil {
		return fmt.Errorf("CONFIG SET maxmemory-policy %s: %w", f.policy, err)
	}
	limit := st.used + int64(f.headroom)
	if err := adm.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
		return fmt.Errorf("CONFIG SET maxmemory %d: %w", limit, err)
	}
	f.mu.Lock()
	on.maxmemorySet = limit
	f.mu.Unlock()
	env.logf("oom: maxmemory %d (used %d + %d), policy %s on %s", limit, st.used, f.headroom, f.policy, on.addr)
	return nil
}

// Heal implements Fault: reads the counters, then restores maxmemory and
// maxmemory-policy as they were.
func (f *OOM) Heal(ctx context.Context, env *Env) error {
	f.healMu.Lock()
	defer f.healMu.Unlock()
	if env.cluster() == nil {
		return nil
	}
	f.mu.Lock()
	nodes := append([]*oomNode(nil), f.nodes...)
	f.mu.Unlock()
	var errs []error
	for _, on := range nodes {
		f.mu.Lock()
		saved, touched, restored, afterRead := on.saved, on.touched, on.restored, on.afterRead
		f.mu.Unlock()
		if !touched || restored {
			continue
		}
		if !afterRead {
			if st, err := readOOMStats(ctx, env, on.addr); err == nil {
				f.mu.Lock()
				on.after, on.afterRead = st, true
				f.mu.Unlock()
			}
		}
		adm, err := env.cluster().Admin(on.addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var nerrs []error
		// maxmemory first: the node has room again before the policy changes.
		for _, k := range []string{"maxmemory", "maxmemory-policy"} {
			if err := adm.ConfigSet(ctx, k, saved[k]).Err(); err != nil {
				nerrs = append(nerrs, fmt.Errorf("oom heal on %s: CONFIG SET %s %s: %w", on.addr, k, saved[k], err))
			}
		}
		if len(nerrs) == 0 {
			f.mu.Lock()
			on.restored = true
			f.mu.Unlock()
		}
		errs = append(errs, nerrs...)
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

// Evidence implements Fault: per node the maxmemory set, used memory
// before and at heal, OOM rejections (errorstat_OOM) and evicted_keys
// counted during the fault; evicted_keys (total) must stay 0 under
// noeviction.
func (f *OOM) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{"target": f.target.String(), "policy": f.policy, "headroom_bytes": f.headroom}
	var per []map[string]any
	var evicted, rejected int64
	complete := len(f.nodes) > 0
	for _, on := range f.nodes {
		e := map[string]any{"node": on.ref, "used_memory_before": on.usedBefore, "maxmemory_set": on.maxmemorySet}
		if on.saved != nil {
			e["config_before"] = on.saved
		}
		if on.afterRead {
			e["used_memory_at_heal"] = on.after.used
			e["oom_rejections"] = on.after.oomErrors - on.before.oomErrors
			e["evicted_keys"] = on.after.evicted - on.before.evicted
			evicted += on.after.evicted - on.before.evicted
			rejected += on.after.oomErrors - on.before.oomErrors
		} else {
			complete = false
		}
		e["restored"] = on.restored
		per = append(per, e)
	}
	if per != nil {
		ev["nodes"] = per
	}
	if complete {
		ev["evicted_keys"] = evicted
		ev["oom_rejections"] = rejected
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

// EvictedKeys is the number of keys the targets evicted while the fault
// acted (0 under noeviction), and whether it was read (after Heal).
func (f *OOM) EvictedKeys() (int64, bool) {
	ev := f.Evidence()
	n, ok := ev["evicted_keys"].(int64)
	return n, ok
}

func readOOMStats(ctx context.Context, env *Env, addr string) (oomStats, error) {
	var st oomStats
	adm, err := env.cluster().Admin(addr)
	if err != nil {
		return st, err
	}
	info, err := adm.Info(ctx, "memory", "stats", "errorstats").Result()
	if err != nil {
		return st, fmt.Errorf("INFO memory stats errorstats: %w", err)
	}
	st.used, _ = strconv.ParseInt(aofInfoValue(info, "used_memory"), 10, 64)
	st.evicted, _ = strconv.ParseInt(aofInfoValue(info, "evicted_keys"), 10, 64)
	st.oomErrors = infoStatField(info, "errorstat_OOM", "count")
	if st.used == 0 {
		return st, errors.New("INFO memory: no used_memory")
	}
	return st, nil
}
