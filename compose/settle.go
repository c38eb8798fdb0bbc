package compose

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultSettleTimeout bounds WaitSettled when the caller gives no bound.
const DefaultSettleTimeout = 30 * time.Second

// TopologyNeeds is the smallest topology a run needs of a cluster before
// it judges it: masters owning slots, and replicas of every such master.
type TopologyNeeds struct {
	Masters           int
	ReplicasPerMaster int
}

// Settled is the topology WaitSettled found settled, and how long it
// waited for it.
type Settled struct {
	Waited time.Duration
	// Masters owning slots and the fewest replicas any of them has, as
	// every reachable node agreed.
	Masters, MinReplicas int
}

// WaitSettled waits, at most bound (0: DefaultSettleTimeout), until c's
// topology has settled: WaitHealthy's checks pass (every reachable node
// answers cluster_state:ok with all 16384 slots assigned and ok, every one
// of them reports the same CLUSTER NODES topology — ids, addresses, roles,
// masters, slot ranges —, no live node is flagged failing or in handshake,
// every replica's link is up) and the agreed topology has at least
// need.Masters masters owning slots, each with at least
// need.ReplicasPerMaster replicas. A cluster somebody else just formed
// (docker compose's cluster-init, an operator attaching replicas) reaches
// that a few seconds after it answers: judging it earlier sees replicas
// some node does not know yet. Nodes the cluster announces meanwhile are
// learned (Nodes). The error, after the bound, names what never settled,
// for how long, and the fix.
func WaitSettled(ctx context.Context, c Cluster, need TopologyNeeds, bound time.Duration) (Settled, error) {
	if bound <= 0 {
		bound = DefaultSettleTimeout
	}
	t0 := time.Now()
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var last error
	for {
		s, err := settledOnce(wctx, c, need)
		s.Waited = time.Since(t0)
		if err == nil {
			return s, nil
		}
		if errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return s, err
		}
		if wctx.Err() != nil {
			if last == nil || !errors.Is(err, context.DeadlineExceeded) {
				last = err
			}
			return s, fmt.Errorf("compose: the topology of this %s cluster did not settle within %s: %v; "+
				"wait until every node agrees (CLUSTER NODES on each: same masters, replicas and slots; cluster_state:ok) and run again, "+
				"or give the cluster the topology the run needs", c.Provider(), bound.Round(time.Millisecond), last)
		}
		last = err
		select {
		case <-wctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// settledOnce waits for WaitHealthy (within ctx) and then checks need
// against the agreed topology, once.
func settledOnce(ctx context.Context, c Cluster, need TopologyNeeds) (Settled, error) {
	var s Settled
	if err := c.WaitHealthy(ctx); err != nil {
		return s, fmt.Errorf("not every node agrees yet (%w)", err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return s, err
	}
	s.Masters, s.MinReplicas = MastersAndReplicas(nodes)
	if s.Masters < need.Masters {
		return s, fmt.Errorf("%d master(s) own slots and the run needs %d", s.Masters, need.Masters)
	}
	if s.MinReplicas < need.ReplicasPerMaster {
		return s, fmt.Errorf("a master has %d replica(s) and the run's faults need %d per master", s.MinReplicas, need.ReplicasPerMaster)
	}
	return s, nil
}

// MastersAndReplicas counts the masters that own slots in nodes (one
// node's CLUSTER NODES) and the fewest replicas any of them has (0 when
// there is no such master).
func MastersAndReplicas(nodes []Node) (masters, minReplicas int) {
	replicas := map[string]int{}
	for _, n := range nodes {
		if n.Role == "replica" {
			replicas[n.MasterID]++
		}
	}
	minReplicas = -1
	for _, n := range nodes {
		if n.Role != "master" || len(n.Slots) == 0 {
			continue
		}
		masters++
		if r := replicas[n.ID]; minReplicas < 0 || r < minReplicas {
			minReplicas = r
		}
	}
	return masters, max(minReplicas, 0)
}
