package faults

// slot-down: a shard with no server left. The target master and every one
// of its replicas are killed (SIGKILL, replicas first so that none is
// promoted), so the master's slots have no server. The other masters are
// set to cluster-require-full-coverage no for the fault, so that the slots
// they own keep serving. The contract of the path under test: requests for
// the dead slots fail closed (CLUSTERDOWN, connection errors), no
// reservation is accepted for them, the other slots keep serving, and
// after the restart (heal: master first, then its replicas; the previous
// full-coverage setting restored) everything is consistent.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"seckill-harness/compose"
)

var slotDownKind = Spec{
	Kind: "slot-down",
	Help: "kill the target master and all its replicas (SIGKILL, replicas first): its slots have no server; the other " +
		"masters get cluster-require-full-coverage no so their slots keep serving; heal restarts the killed nodes " +
		"(master first) and restores the setting",
	Params: []Param{TargetParam, slotDownWait.Param},
	Build:  newSlotDown,
	Rules: Rules{
		Destructive: DestructiveBecause("it kills a master and its replicas and changes cluster-require-full-coverage on the others"),
		SignalsProcess: func(map[string]string) (string, string) {
			return "it SIGKILLs the master's and its replicas' processes", ""
		},
		Overlap:  Exclusive,
		Topology: Topology{Masters: 2, MastersWhy: "another master whose slots keep serving"},
	},
}

var slotDownWait = durationParam("wait", 30*time.Second, "how long heal waits for the restarted nodes and a healthy cluster")

func newSlotDown(v Values) (Fault, error) {
	tgt := v.Target()
	if tgt.Role == TargetAllMasters || tgt.Role == TargetHotReplica {
		return nil, fmt.Errorf("target=%s: slot-down acts on one master (hot-master, a node id or an address of a master)", tgt.Role)
	}
	return &SlotDown{target: tgt, wait: slotDownWait.Of(v)}, nil
}

// SlotDown is the "slot-down" fault. Build it with Plan/Parse.
type SlotDown struct {
	target Target
	wait   time.Duration

	healMu     sync.Mutex
	mu         sync.Mutex
	master     *compose.Node
	killed     []compose.Node // in kill order: replicas, then the master
	coverage   map[string]string
	persisted  map[string]map[string]string // appendonly/appendfsync before, per killed node
	restarted  []string
	notes      []string
	injectedAt time.Time
	healedAt   time.Time
	healed     bool
}

var _ Fault = (*SlotDown)(nil)

// Kind implements Fault.
func (f *SlotDown) Kind() string { return "slot-down" }

// Target implements Fault.
func (f *SlotDown) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.master != nil {
		return f.master.Addr
	}
	return f.target.String()
}

// Inject implements Fault.
func (f *SlotDown) Inject(ctx context.Context, env *Env) error {
	m, err := f.target.ResolveOne(ctx, env) // refuses an Env without a cluster
	if err != nil {
		return fmt.Errorf("slot-down: %w", err)
	}
	c := env.cluster()
	pc, err := env.processControl("slot-down: it kills processes")
	if err != nil {
		return err
	}
	if m.Role != "master" {
		return fmt.Errorf("slot-down: target %s is a %s, not a master", m.Addr, m.Role)
	}
	reps, err := c.ReplicasOf(ctx, m.ID)
	if err != nil {
		return fmt.Errorf("slot-down: replicas of %s: %w", m.Addr, err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("slot-down: %w", err)
	}
	f.mu.Lock()
	f.master, f.injectedAt, f.coverage = &m, time.Now(), map[string]string{}
	f.mu.Unlock()
	for _, n := range nodes {
		if n.ID == m.ID || n.MasterID == m.ID || n.Down {
			continue
		}
		adm, err := c.Admin(n.Addr)
		if err != nil {
			return err
		}
		saved, err := aofConfigGet(ctx, adm, "cluster-require-full-coverage")
		if err != nil {
			return fmt.Errorf("slot-down on %s: %w", n.Addr, err)
		}
		f.mu.Lock()
		f.coverage[n.Addr] = saved["cluster-require-full-coverage"]
		f.mu.Unlock()
		if err := adm.ConfigSet(ctx, "cluster-require-full-coverage", "no").Err(); err != nil {
			return fmt.Errorf("slot-down: CONFIG SET cluster-require-full-coverage no on %s: %w", n.Addr, err)
		}
	}
	// Durability first: the killed nodes restart from their AOF
	// (appendfsync always, written into their config file), so nothing
	// they acknowledged is lost by the restart itself.
	for _, n := range append(reps, m) {
		if err := f.persist(ctx, c, n.Addr); err != nil {
			return fmt.Errorf("slot-down on %s: %w", n.Addr, err)
		}
	}
	for _, n := range append(reps, m) {
		f.mu.Lock()
		f.killed = append(f.killed, n)
		f.mu.Unlock()
		if err := pc.Kill(n.Addr); err != nil {
			return fmt.Errorf("slot-down: SIGKILL %s: %w", n.Addr, err)
		}
		env.logf("slot-down: killed %s (%s)", n.Addr, n.Role)
	}
	return nil
}

// Heal implements Fault: restart the killed nodes (master first), wait
// for a healthy cluster, restore cluster-require-full-coverage.
func (f *SlotDown) Heal(ctx context.Context, env *Env) error {
	f.healMu.Lock()
	defer f.healMu.Unlock()
	c := env.cluster()
	f.mu.Lock()
	killed := append([]compose.Node(nil), f.killed...)
	coverage := f.coverage
	healed := f.healed
	f.mu.Unlock()
	if c == nil || healed || (len(killed) == 0 && len(coverage) == 0) {
		return nil
	}
	var errs []error
	pc, pcErr := env.processControl("slot-down heal: it restarts the killed nodes")
	for i := len(killed) - 1; i >= 0; i-- {
		n := killed[i]
		if cur, ok := c.NodeByAddr(n.Addr); ok && !cur.Down {
			continue
		}
		err := pcErr
		if err == nil {
			err = pc.Restart(ctx, n.Addr)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("slot-down heal: restart %s: %w", n.Addr, err))
			continue
		}
		f.mu.Lock()
		f.restarted = append(f.restarted, n.Addr)
		f.mu.Unlock()
		env.logf("slot-down: restarted %s", n.Addr)
	}
	hctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	if err := c.WaitHealthy(hctx); err != nil {
		errs = append(errs, fmt.Errorf("slot-down heal: %w", err))
	}
	for _, n := range killed {
		f.mu.Lock()
		saved := f.persisted[n.Addr]
		f.mu.Unlock()
		if saved == nil {
			continue
		}
		adm, err := c.Admin(n.Addr)
		if err == nil {
			for _, k := range []string{"appendfsync", "appendonly"} {
				if err = adm.ConfigSet(ctx, k, saved[k]).Err(); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = adm.Do(ctx, "CONFIG", "REWRITE").Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("slot-down heal: restoring appendonly on %s: %w", n.Addr, err))
		}
	}
	for addr, v := range coverage {
		adm, err := c.Admin(addr)
		if err == nil {
			err = adm.ConfigSet(ctx, "cluster-require-full-coverage", v).Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("slot-down heal: CONFIG SET cluster-require-full-coverage %s on %s: %w", v, addr, err))
		}
	}
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	f.mu.Lock()
	f.healed, f.healedAt = true, time.Now()
	f.mu.Unlock()
	return nil
}

// Evidence implements Fault.
func (f *SlotDown) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{"target": f.target.String()}
	if f.master != nil {
		ev["master"] = tpNodeRef(*f.master)
		var slots []string
		for _, r := range f.master.Slots {
			slots = append(slots, fmt.Sprintf("%d-%d", r[0], r[1]))
		}
		ev["slots"] = slots
	}
	var killed []string
	for _, n := range f.killed {
		killed = append(killed, n.Addr)
	}
	if killed != nil {
		ev["killed"] = killed
	}
	if f.restarted != nil {
		ev["restarted"] = append([]string(nil), f.restarted...)
	}
	if len(f.coverage) > 0 {
		ev["full_coverage_before"] = f.coverage
	}
	if len(f.notes) > 0 {
		ev["notes"] = append([]string(nil), f.notes...)
	}
	if !f.injectedAt.IsZero() {
		ev["injected_at"] = f.injectedAt.UTC().Format(time.RFC3339Nano)
	}
	if f.healed {
		ev["healed"] = true
		ev["down_ms"] = tpMillis(f.healedAt.Sub(f.injectedAt))
	}
	return ev
}

// persist turns on appendonly with appendfsync always on addr, waits for
// the initial rewrite and writes the setting into the node's config file
// (CONFIG REWRITE) so that a restart loads the AOF.
func (f *SlotDown) persist(ctx context.Context, c compose.Cluster, addr string) error {
	adm, err := c.Admin(addr)
	if err != nil {
		return err
	}
	saved, err := aofConfigGet(ctx, adm, "appendonly", "appendfsync")
	if err != nil {
		return err
	}
	f.mu.Lock()
	if f.persisted == nil {
		f.persisted = map[string]map[string]string{}
	}
	f.persisted[addr] = saved
	f.mu.Unlock()
	if err := adm.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
		return fmt.Errorf("CONFIG SET appendfsync always: %w", err)
	}
	if saved["appendonly"] != "yes" {
		if err := adm.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
			return fmt.Errorf("CONFIG SET appendonly yes: %w", err)
		}
		if err := aofWaitRewrite(ctx, adm, 30*time.Second); err != nil {
			return fmt.Errorf("initial AOF rewrite: %w", err)
		}
	}
	if err := adm.Do(ctx, "CONFIG", "REWRITE").Err(); err != nil {
		return fmt.Errorf("CONFIG REWRITE: %w", err)
	}
	return nil
}

// MasterlessSlots are the slots the fault leaves without any server (the
// killed master's), once Inject returned: no request for them can be
// served until the heal (faults.Masterless).
func (f *SlotDown) MasterlessSlots() [][2]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.master == nil {
		return nil
	}
	return append([][2]int(nil), f.master.Slots...)
}
