package servers

import (
	"context"
	"sort"
	"sync"
)

// NodeEvictions is one node's evicted_keys over the run.
type NodeEvictions struct {
	Addr string
	Role string // at the first sample
	// Evicted counts the keys the node evicted from its first reading
	// (before the load) to the last (Evictions' own read, after the run).
	Evicted int64
	// Restarted: the node's run_id changed (a restart reset its counters):
	// its count is the increases before plus the whole value after.
	Restarted bool
}

// Evictions stops the sampling, reads every node's evicted_keys once more
// (call it after the run settled: evictions during heal and drain count
// too; this read adds no sample to the series), and returns each node's
// evictions over the run. A node read fewer than twice (down at the start
// or at the end, never answering) is listed in unread: its evictions are
// unknown. A nil Sampler returns nothing.
func (s *Sampler) Evictions(ctx context.Context) (nodes []NodeEvictions, unread []string) {
	if s == nil {
		return nil, nil
	}
	s.Stop()
	addrs := s.c.Addrs()
	if topo, err := s.c.Nodes(ctx); err == nil {
		for _, n := range topo {
			addrs = append(addrs, n.Addr)
		}
	}
	s.mu.Lock()
	addrs = dedupe(append(addrs, s.order...))
	s.mu.Unlock()
	infos := make([]nodeInfo, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, endCallTimeout)
			defer cancel()
			infos[i] = readNode(rctx, s.c, a)
		}()
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range infos {
		ns, ok := s.nodes[in.addr]
		if !ok {
			ns = &nodeSeries{role: in.role()}
			s.nodes[in.addr] = ns
			s.order = append(s.order, in.addr)
		}
		if in.err == nil {
			ns.evict.add(in.int("evicted_keys"), in.field("run_id"))
		}
		if ns.evict.readings < 2 {
			unread = append(unread, in.addr)
			continue
		}
		nodes = append(nodes, NodeEvictions{Addr: in.addr, Role: ns.role, Evicted: ns.evict.evicted, Restarted: ns.evict.restarted})
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Addr < nodes[j].Addr })
	sort.Strings(unread)
	return nodes, unread
}
