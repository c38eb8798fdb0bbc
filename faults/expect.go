package faults

import (
	"slices"

	"seckill-harness/reports"
)

// Expecting is implemented by kinds that may cause events the servers
// sampler detects (reports.EventKinds: a failover's role change, a kill's
// restart, a cut replication stream's full resync). It is read after the
// run, so it can name the nodes the fault resolved at Inject. An event of
// a declared kind on a declared node (any node when Nodes is nil: a
// cluster-wide effect) that begins inside the fault's window or its
// settle period is attributed to the fault instead of reported as
// unplanned. Declare only what the fault may really cause: a kind left
// out is what the report is there to surface (a graceful failover does
// not flag its master failing; a starved host does).
type Expecting interface {
	ExpectedEvents() []reports.ExpectedEvent
}

// ExpectedEvents returns what p's fault declares (nil for a kind without
// the ability).
func (p *Planned) ExpectedEvents() []reports.ExpectedEvent {
	if e, ok := p.Fault.(Expecting); ok {
		return e.ExpectedEvents()
	}
	return nil
}

// expectOn declares each of whats on nodes (empty addresses dropped;
// none left: nothing, as the fault never resolved a node).
func expectOn(nodes []string, whats ...string) []reports.ExpectedEvent {
	nodes = slices.DeleteFunc(slices.Clone(nodes), func(a string) bool { return a == "" })
	if len(nodes) == 0 {
		return nil
	}
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	var out []reports.ExpectedEvent
	for _, w := range whats {
		out = append(out, reports.ExpectedEvent{What: w, Nodes: nodes})
	}
	return out
}

// expectAnywhere declares each of whats on any node.
func expectAnywhere(whats ...string) []reports.ExpectedEvent {
	var out []reports.ExpectedEvent
	for _, w := range whats {
		out = append(out, reports.ExpectedEvent{What: w})
	}
	return out
}

// ExpectedEvents implements Expecting: every mode moves mastership among
// the old master, its replicas and the new master (the heal's fail-back
// too) and may resync a replica; kill and pause also make the cluster
// flag and fail the old master over by itself, with cluster_state:fail on
// any node meanwhile; kill restarts it.
func (f *Failover) ExpectedEvents() []reports.ExpectedEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.act.started {
		return nil
	}
	nodes := append([]string{f.aim.old.Addr, f.aim.candidate.Addr, f.seen.newMaster.Addr}, f.aim.replicas...)
	whats := []string{reports.EventFailover, reports.EventRoleChange, reports.EventFullResync, reports.EventLinkDown}
	var anywhere []reports.ExpectedEvent
	if f.cfg.mode == FailoverKill || f.cfg.mode == FailoverPause {
		whats = append(whats, reports.EventAutomaticFailover, reports.EventNodeFail, reports.EventUnreachable)
		anywhere = expectAnywhere(reports.EventClusterFail)
	}
	if f.cfg.mode == FailoverKill {
		whats = append(whats, reports.EventRestart)
	}
	return append(expectOn(nodes, whats...), anywhere...)
}

// ExpectedEvents implements Expecting: the killed nodes go silent, are
// flagged, restart and resync; their slots are uncovered, so nodes may
// report cluster_state:fail.
func (f *SlotDown) ExpectedEvents() []reports.ExpectedEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var nodes []string
	for _, n := range f.killed {
		nodes = append(nodes, n.Addr)
	}
	return append(expectOn(nodes, reports.EventUnreachable, reports.EventNodeFail, reports.EventLinkDown,
		reports.EventRestart, reports.EventRoleChange, reports.EventFullResync),
		expectAnywhere(reports.EventClusterFail)...)
}

// ExpectedEvents implements Expecting: a cut or delayed replication
// stream takes the replicas' links down and may make them resync in full
// (the master's sync_full).
func (f *replFault) ExpectedEvents() []reports.ExpectedEvent {
	f.watch.mu.Lock()
	defer f.watch.mu.Unlock()
	if !f.watch.injected {
		return nil
	}
	nodes := []string{f.watch.link.master.Addr}
	for _, r := range f.watch.link.replicas {
		nodes = append(nodes, r.Addr)
	}
	return expectOn(nodes, reports.EventLinkDown, reports.EventFullResync)
}
