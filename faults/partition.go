package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"seckill-harness/compose"
)

// partition: the target's proxy is disabled — it stops listening and closes
// every client connection through it — while the node keeps running and
// keeps talking to its peers (replication and the cluster bus are not
// proxied), so the cluster does not fail it over: only the harness's
// clients lose it. Calls in flight on the node lose their replies
// (UNKNOWN); new dials are refused (errors, the script did not run). Heal
// re-enables the proxy on the same address and asks the load's client to
// reload the cluster state.
//
// Recovery after heal is not instant on the client side: go-redis puts a
// node's pool into dial back-off after PoolSize failed dials and probes it
// about once a second, so the first successful calls may come up to ~1 s
// after heal.

const kindPartition = "partition"

var partitionKind = Spec{
	Kind:   kindPartition,
	Help:   "make the target node unreachable for the harness's clients (its proxy is disabled); the node stays alive and in the cluster",
	Params: []Param{TargetParam},
	Rules: Rules{
		// The node, the cluster bus and replication are untouched.
		Destructive:  NotDestructive(),
		NeedsProxies: "it disables the target node's proxy",
		Overlap:      Exclusive,
	},
	Build: newPartition,
}

type partitionFault struct {
	target Target

	mu       sync.Mutex
	nodes    []compose.Node
	disabled map[string]bool
	connsAt  map[string]int
	at       time.Time
	healedAt time.Time
	reloaded bool
	pidAfter map[string]int
	errs     []string
}

var _ Fault = (*partitionFault)(nil)

func newPartition(v Values) (Fault, error) {
	return &partitionFault{target: v.Target(), disabled: map[string]bool{}, connsAt: map[string]int{}, pidAfter: map[string]int{}}, nil
}

func (f *partitionFault) Kind() string { return kindPartition }

func (f *partitionFault) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.nodes) > 0 {
		return f.target.String() + " (" + strings.Join(nodeAddrs(f.nodes), ",") + ")"
	}
	return f.target.String()
}

func (f *partitionFault) Inject(ctx context.Context, env *Env) error {
	if err := requireProxies(env, kindPartition); err != nil {
		return err
	}
	nodes, err := f.target.Resolve(ctx, env)
	if err != nil {
		return fmt.Errorf("fault %s: %w", kindPartition, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = nodes
	f.at = time.Now()
	var errs []error
	for _, n := range nodes {
		f.connsAt[n.Addr], _ = env.proxies().Stats(n.Addr)
		if err := env.proxies().Disable(n.Addr); err != nil {
			errs = append(errs, err)
			f.errs = append(f.errs, err.Error())
			continue
		}
		f.disabled[n.Addr] = true
		env.logf("fault %s: proxy of %s (%s) disabled, %d client connections cut", kindPartition, n.Addr, shortID(n.ID), f.connsAt[n.Addr])
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fault %s: %w", kindPartition, err)
	}
	return nil
}

func (f *partitionFault) Heal(ctx context.Context, env *Env) error {
	if env.proxies() == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	healed := false
	for _, n := range f.nodes {
		if !f.disabled[n.Addr] {
			continue
		}
		if err := env.proxies().Enable(n.Addr); err != nil {
			errs = append(errs, err)
			f.errs = append(f.errs, err.Error())
			continue
		}
		f.disabled[n.Addr] = false
		healed = true
		env.logf("fault %s: proxy of %s re-enabled", kindPartition, n.Addr)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fault %s: heal: %w", kindPartition, err)
	}
	if healed {
		f.healedAt = time.Now()
		if env.Client != nil {
			env.Client.ReloadState(ctx)
			f.reloaded = true
		}
		if env.cluster() != nil {
			for _, n := range f.nodes {
				if now, ok := env.cluster().NodeByAddr(n.Addr); ok {
					f.pidAfter[n.Addr] = now.PID
				}
			}
		}
	}
	return nil
}

func (f *partitionFault) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, len(f.nodes))
	var slots [][2]int
	for i, n := range f.nodes {
		ids[i] = n.ID
		slots = append(slots, n.Slots...)
	}
	pids := map[string]int{}
	for _, n := range f.nodes {
		pids[n.Addr] = n.PID
	}
	ev := map[string]any{
		"mechanism":       "toxiproxy proxy disabled (node alive, unreachable for clients)",
		"target":          f.target.String(),
		"nodes":           nodeAddrs(f.nodes),
		"node_ids":        ids,
		"slots":           slots,
		"connections_cut": maps.Clone(f.connsAt),
		"pid_at_inject":   pids,
	}
	if len(f.pidAfter) > 0 {
		// Same PID at heal: the node stayed up the whole time (it was only
		// unreachable for clients).
		ev["pid_at_heal"] = maps.Clone(f.pidAfter)
	}
	if !f.at.IsZero() {
		ev["disabled_at"] = f.at.Format(time.RFC3339Nano)
	}
	if !f.healedAt.IsZero() {
		ev["enabled_at"] = f.healedAt.Format(time.RFC3339Nano)
		ev["partitioned_for_ms"] = f.healedAt.Sub(f.at).Milliseconds()
	}
	if f.reloaded {
		ev["client_state_reloaded"] = true
	}
	if len(f.errs) > 0 {
		ev["errors"] = append([]string(nil), f.errs...)
	}
	return ev
}
