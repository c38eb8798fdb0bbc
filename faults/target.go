package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"seckill-harness/compose"
)

// Target roles understood by ParseTarget and Target.Resolve.
const (
	// TargetHotMaster is the master that currently owns the sale's hot
	// slot: env.HotSlots[0] (the slot of bucket 0 as the system under test
	// keeps it), or, without HotSlots, the one observed (AimObserved).
	// The default.
	TargetHotMaster = "hot-master"
	// TargetHotReplica is one live replica of the hot master.
	TargetHotReplica = "hot-replica"
	// TargetAllMasters is every master that currently owns slots.
	TargetAllMasters = "all-masters"
	// TargetNode is one node named by its cluster node id or its address.
	TargetNode = "node"
	// TargetSlotMaster is the master that currently owns a given slot.
	TargetSlotMaster = "slot"
)

// TargetParam is the "target" parameter: a Target, hot-master when absent
// or empty. A kind lists it among its Params and reads it with Values.Target.
var TargetParam = targetParam(TargetHotMaster)

// targetParam is the target parameter with the default role def.
func targetParam(def string) Param {
	return Param{
		Name:    "target",
		Default: def,
		Help: "what the fault acts on: hot-master (master of the hot slot where the system under test keeps its sale: its hash tag, or observed), hot-replica (a replica of it), " +
			"all-masters, node=<node id or host:port> (or the id / host:port alone), slot=<n> (master of slot n)",
		def:   Target{Role: def},
		parse: func(v string) (any, error) { return parseTargetValue(v) },
	}
}

// Target is the target parameter's value (its kind must declare it).
func (v Values) Target() Target { return v.vals[TargetParam.Name].(Target) }

// Target names what a fault acts on. It is resolved against the live
// topology at Inject time (roles move with failovers and migrations).
type Target struct {
	Role string // one of the Target* constants
	Node string // TargetNode: node id (40 hex chars) or "host:port"; TargetSlotMaster: the slot number
}

// String renders the target the way ParseTarget reads it.
func (t Target) String() string {
	switch t.Role {
	case TargetNode, TargetSlotMaster:
		return t.Role + "=" + t.Node
	case "":
		return TargetHotMaster
	}
	return t.Role
}

// ParseTarget reads a target parameter's value; empty means hot-master.
// Accepted values: hot-master, hot-replica, all-masters,
// node=<id|host:port>, slot=<0..16383>, or a bare node id (40 hex chars) or
// host:port. The error names the parameter.
func ParseTarget(v string) (Target, error) {
	t, err := TargetParam.value(v, true)
	if err != nil {
		return Target{}, fmt.Errorf("target=%q: %w", v, err)
	}
	return t.(Target), nil
}

func parseTargetValue(v string) (Target, error) {
	switch v {
	case TargetHotMaster, TargetHotReplica, TargetAllMasters:
		return Target{Role: v}, nil
	}
	if rest, ok := strings.CutPrefix(v, "node="); ok {
		rest = strings.TrimSpace(rest)
		if !isNodeID(rest) && !isHostPort(rest) {
			return Target{}, errors.New("node= wants a 40-hex-char node id or host:port")
		}
		return Target{Role: TargetNode, Node: rest}, nil
	}
	if rest, ok := strings.CutPrefix(v, "slot="); ok {
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || n < 0 || n >= compose.NumSlots {
			return Target{}, fmt.Errorf("slot= wants a slot number in [0,%d)", compose.NumSlots)
		}
		return Target{Role: TargetSlotMaster, Node: strconv.Itoa(n)}, nil
	}
	if isNodeID(v) || isHostPort(v) {
		return Target{Role: TargetNode, Node: v}, nil
	}
	return Target{}, errors.New("want hot-master, hot-replica, all-masters, node=<id|host:port> or slot=<n>")
}

func isNodeID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

func isHostPort(s string) bool {
	h, p, err := net.SplitHostPort(s)
	if err != nil || h == "" {
		return false
	}
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536
}

// Resolve returns the nodes the target names in the current topology
// (env.cluster().Nodes): one node for every role but all-masters. It fails
// when the cluster is missing, when a hot-* role has no sale to aim at
// (no env.HotSlots and no observed traffic), or
// when nothing matches (e.g. the hot master has no live replica).
func (t Target) Resolve(ctx context.Context, env *Env) ([]compose.Node, error) {
	nodes, err := env.nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t, err)
	}
	one := func(n compose.Node, err error) ([]compose.Node, error) {
		if err != nil {
			return nil, err
		}
		return []compose.Node{n}, nil
	}
	switch t.Role {
	case TargetHotMaster, "":
		return one(t.hotMaster(ctx, env, nodes))
	case TargetHotReplica:
		return one(t.hotReplica(ctx, env, nodes))
	case TargetAllMasters:
		var out []compose.Node
		for _, n := range nodes {
			if n.Role == "master" && len(n.Slots) > 0 {
				out = append(out, n)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("target %s: no master owns slots", t)
		}
		return out, nil
	case TargetSlotMaster:
		slot, err := strconv.Atoi(t.Node)
		if err != nil {
			return nil, fmt.Errorf("target %s: bad slot %q", t, t.Node)
		}
		return one(t.masterOf(nodes, slot))
	case TargetNode:
		return one(t.node(env, nodes))
	}
	return nil, fmt.Errorf("target: unknown role %q", t.Role)
}

// masterOf is the master in nodes that owns slot.
func (t Target) masterOf(nodes []compose.Node, slot int) (compose.Node, error) {
	for _, n := range nodes {
		if n.Role == "master" && n.HasSlot(slot) {
			return n, nil
		}
	}
	return compose.Node{}, fmt.Errorf("target %s: no master owns slot %d", t, slot)
}

// hotMaster is the master that owns the sale's hot slot (env.saleSlots).
func (t Target) hotMaster(ctx context.Context, env *Env, nodes []compose.Node) (compose.Node, error) {
	slots, err := env.saleSlots(ctx)
	if err != nil {
		return compose.Node{}, fmt.Errorf("target %s: %w", t, err)
	}
	return t.masterOf(nodes, slots[0])
}

// hotReplica is a healthy replica of the hot master, else any replica of it.
func (t Target) hotReplica(ctx context.Context, env *Env, nodes []compose.Node) (compose.Node, error) {
	m, err := t.hotMaster(ctx, env, nodes)
	if err != nil {
		return compose.Node{}, err
	}
	var fallback *compose.Node
	for i, n := range nodes {
		if n.Role != "replica" || n.MasterID != m.ID {
			continue
		}
		if healthy(n) {
			return n, nil
		}
		if fallback == nil {
			fallback = &nodes[i]
		}
	}
	if fallback != nil {
		return *fallback, nil
	}
	return compose.Node{}, fmt.Errorf("target %s: master %s (%s) has no replica", t, m.Addr, shortID(m.ID))
}

// node is the node named by id or address; a node that is down is absent
// from the live view, but the harness's bookkeeping still knows it by
// address.
func (t Target) node(env *Env, nodes []compose.Node) (compose.Node, error) {
	for _, n := range nodes {
		if strings.EqualFold(n.ID, t.Node) || n.Addr == t.Node {
			return n, nil
		}
	}
	if isHostPort(t.Node) {
		if n, ok := env.cluster().NodeByAddr(t.Node); ok {
			return n, nil
		}
	}
	return compose.Node{}, fmt.Errorf("target %s: no such node in the cluster", t)
}

// ResolveOne is Resolve for faults that act on exactly one node: it fails
// when the target names more than one (all-masters).
func (t Target) ResolveOne(ctx context.Context, env *Env) (compose.Node, error) {
	ns, err := t.Resolve(ctx, env)
	if err != nil {
		return compose.Node{}, err
	}
	if len(ns) != 1 {
		return compose.Node{}, fmt.Errorf("target %s names %d nodes; this fault acts on one", t, len(ns))
	}
	return ns[0], nil
}

// healthy: not known down or paused, not flagged failing.
func healthy(n compose.Node) bool {
	if n.Paused || n.Down {
		return false
	}
	for _, f := range n.Flags {
		if f == "fail" || f == "fail?" || f == "handshake" || f == "noaddr" {
			return false
		}
	}
	return true
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// nodeAddrs lists the addresses of ns.
func nodeAddrs(ns []compose.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Addr
	}
	return out
}
