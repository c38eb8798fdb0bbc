package compose

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// healthNode is one reachable node in a round of health checks: its
// address and admin client, and, once read, its CLUSTER NODES view and its
// own entry in it.
type healthNode struct {
	addr   string
	cl     *redis.Client
	view   []nodeEntry
	myself nodeEntry
}

// healthRound is one round of the WaitHealthy checks, shared by the local
// cluster and the clusters reached over the network; the hooks are where
// they differ.
type healthRound struct {
	// noted, when set, is called with each node (i: its index in the
	// round's nodes) as soon as its own entry is known, before the
	// topology agreement check.
	noted func(i int, n *healthNode)
	// flagged is the error for node l seeing the reachable node o flagged
	// fail, fail? or handshake in its view entry e.
	flagged func(l, o *healthNode, e nodeEntry) error
}

// check runs the round over nodes: every node reports cluster_state:ok
// with all slots assigned and ok, has a myself entry, and shows the same
// topology as the first; no node sees another reachable node flagged; and
// every replica's link to its master is up. It returns the first problem.
func (h healthRound) check(ctx context.Context, nodes []*healthNode) error {
	if err := h.readViews(ctx, nodes); err != nil {
		return err
	}
	for _, l := range nodes {
		for _, e := range l.view {
			for _, o := range nodes {
				if e.id == o.myself.id && (e.hasFlag("fail") || e.hasFlag("fail?") || e.hasFlag("handshake")) {
					return h.flagged(l, o, e)
				}
			}
		}
		if l.myself.role == "replica" {
			info, err := call(ctx, l.cl, func(ctx context.Context, cl *redis.Client) (string, error) {
				return cl.Info(ctx, "replication").Result()
			})
			if err != nil {
				return fmt.Errorf("INFO replication on %s: %w", l.addr, err)
			}
			if v := infoField(info, "master_link_status"); v != "up" {
				return fmt.Errorf("replica %s: master_link_status:%s", l.addr, v)
			}
		}
	}
	return nil
}

// readViews reads each node's CLUSTER INFO (state ok, every slot assigned
// and ok) and CLUSTER NODES view into it, node by node, and fails when a
// node has no myself entry or its view differs from the first node's.
func (h healthRound) readViews(ctx context.Context, nodes []*healthNode) error {
	var sig0 string
	for i, l := range nodes {
		info, err := call(ctx, l.cl, func(ctx context.Context, cl *redis.Client) (string, error) {
			return cl.ClusterInfo(ctx).Result()
		})
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", l.addr, err)
		}
		if v := infoField(info, "cluster_state"); v != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", l.addr, v)
		}
		for _, k := range []string{"cluster_slots_assigned", "cluster_slots_ok"} {
			if v := infoField(info, k); v != strconv.Itoa(NumSlots) {
				return fmt.Errorf("%s: %s:%s", l.addr, k, v)
			}
		}
		if l.view, err = clusterNodesOf(ctx, l.cl, l.addr); err != nil {
			return fmt.Errorf("CLUSTER NODES on %s: %w", l.addr, err)
		}
		found := false
		for _, e := range l.view {
			if e.myself {
				l.myself, found = e, true
			}
		}
		if !found {
			return fmt.Errorf("%s: no myself entry in CLUSTER NODES", l.addr)
		}
		if h.noted != nil {
			h.noted(i, l)
		}
		sig := viewSignature(l.view)
		if i == 0 {
			sig0 = sig
		} else if sig != sig0 {
			return fmt.Errorf("%s and %s disagree on the topology:\n%s\nvs\n%s", nodes[0].addr, l.addr, sig0, sig)
		}
	}
	return nil
}
