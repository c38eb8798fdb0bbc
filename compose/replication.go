package compose

// Replication through proxies and replication lag, measured.
//
// A LocalCluster started with Options.ReplicationProxies announces, for
// every node, the port of a proxy of its own instead of its real port. A
// replica replicates from the address its master announces, so the
// master→replica stream runs through the master's proxy, where toxics can
// delay, throttle or cut it while client traffic (through the client
// Toxics, keyed by real addresses) and the cluster bus (announced with its
// real port) stay untouched.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// AnnouncedAddrs is implemented by clusters whose nodes announce (in
// CLUSTER NODES, CLUSTER SLOTS, MOVED and ASK) an address other than the
// one they listen on. RealAddr maps an announced address back to the
// node's own address, and returns any other address unchanged.
type AnnouncedAddrs interface {
	RealAddr(addr string) string
}

// ReplicationLinks is implemented by clusters whose replication streams
// run through proxies the harness controls. ReplicationToxics returns
// them, keyed by the real address of the node that sends the stream: a
// downstream toxic on node M's proxy acts on the stream from M to each of
// its replicas; disabling M's proxy cuts every replica of M off its
// master. ok is false when the cluster has no such proxies.
type ReplicationLinks interface {
	ReplicationToxics() (t Toxics, ok bool)
}

var (
	_ AnnouncedAddrs   = (*LocalCluster)(nil)
	_ ReplicationLinks = (*LocalCluster)(nil)
)

// RealAddr implements AnnouncedAddrs: the address of the node whose
// replication proxy listens on addr, or addr itself.
func (c *LocalCluster) RealAddr(addr string) string {
	if c == nil || c.repl == nil {
		return addr
	}
	if real, ok := c.repl.nodeBehind(addr); ok {
		return real
	}
	return addr
}

// ReplicationToxics implements ReplicationLinks (ok false unless the
// cluster was started with Options.ReplicationProxies).
// With Options.AnnounceClientProxies the stream runs through the client
// proxies instead (see ClientToxics): ok is false, since a toxic there
// acts on the clients too.
func (c *LocalCluster) ReplicationToxics() (Toxics, bool) {
	if c == nil || c.repl == nil || c.clientsAnnounced {
		return nil, false
	}
	return c.repl, true
}

// announceThroughProxy gives p a replication proxy (upstream its real
// address) and announces the proxy's port, when the cluster routes
// replication through proxies.
func (c *LocalCluster) announceThroughProxy(p *proc) error {
	if c.repl == nil {
		return nil
	}
	np, err := c.repl.ensure(p.addr)
	if err != nil {
		return fmt.Errorf("compose: replication proxy of %s: %w", p.addr, err)
	}
	_, port, err := net.SplitHostPort(np.listen)
	if err != nil {
		return fmt.Errorf("compose: replication proxy of %s listens on %q: %w", p.addr, np.listen, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("compose: replication proxy of %s: port %q: %w", p.addr, port, err)
	}
	c.mu.Lock()
	p.announcePort = n
	c.mu.Unlock()
	return nil
}

// AnnouncedDialer returns, for a go-redis client that does not dial
// through client proxies, a Dialer that maps the addresses c announces
// back to the nodes' own (so client traffic does not pass the replication
// proxies); nil when c announces its real addresses (no Dialer needed)
// or its client proxies (ClientRouting: dialling what it announces is the
// route through the client toxics).
// Clients that dial through a Toxics need nothing: its Dialer maps them.
func AnnouncedDialer(c Cluster) func(ctx context.Context, network, addr string) (net.Conn, error) {
	an, ok := c.(AnnouncedAddrs)
	if !ok {
		return nil
	}
	if rl, ok := c.(ReplicationLinks); ok {
		if _, on := rl.ReplicationToxics(); !on {
			return nil
		}
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, an.RealAddr(addr))
	}
}

// ReplicaLag is the replication state of one replica at one instant.
type ReplicaLag struct {
	Replica string `json:"replica"` // the replica's address
	Master  string `json:"master"`  // its master's address ("" if unknown)
	// LinkStatus is the replica's master_link_status: "up" or "down" (""
	// when the replica did not answer).
	LinkStatus string `json:"link_status"`
	// MasterOffset is the master's master_repl_offset, read just before
	// the replica's offset; nil when the master did not answer.
	MasterOffset *int64 `json:"master_repl_offset,omitempty"`
	// ReplicaOffset is the replica's slave_repl_offset (what it has
	// received and applied); nil when the replica did not answer.
	ReplicaOffset *int64 `json:"replica_offset,omitempty"`
	// LagBytes is MasterOffset − ReplicaOffset (≥ 0; nil when either is
	// unknown): the bytes of the replication stream the master has
	// produced and the replica has not received yet.
	LagBytes *int64 `json:"lag_bytes,omitempty"`
}

// ReplicationSample is every replica's state at one instant.
type ReplicationSample struct {
	// TS is the time of the sample in seconds since the sampler started.
	TS       float64      `json:"t_s"`
	Replicas []ReplicaLag `json:"replicas"`
}

// ReadReplicationLag reads, for every replica in c's current topology, its
// link status, its offset and its master's offset (the master is read
// first, so a write in between can only make the lag look larger). A node
// that does not answer (down, paused, partitioned) leaves its fields
// unknown; the error is non-nil only when the topology cannot be read.
func ReadReplicationLag(ctx context.Context, c Cluster) ([]ReplicaLag, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	var out []ReplicaLag
	for _, n := range nodes {
		if n.Role != "replica" {
			continue
		}
		r := ReplicaLag{Replica: n.Addr}
		if m, ok := byID[n.MasterID]; ok {
			r.Master = m.Addr
			if info, err := replicationInfo(ctx, c, m.Addr); err == nil {
				r.MasterOffset = infoInt(info, "master_repl_offset")
			}
		}
		if info, err := replicationInfo(ctx, c, n.Addr); err == nil {
			r.LinkStatus = infoField(info, "master_link_status")
			r.ReplicaOffset = infoInt(info, "slave_repl_offset")
		}
		if r.MasterOffset != nil && r.ReplicaOffset != nil {
			lag := max(*r.MasterOffset-*r.ReplicaOffset, 0)
			r.LagBytes = &lag
		}
		out = append(out, r)
	}
	return out, nil
}

// replicationInfo is INFO replication of the node at addr (admin client,
// bounded to one call timeout).
func replicationInfo(ctx context.Context, c Cluster, addr string) (string, error) {
	cl, err := c.Admin(addr)
	if err != nil {
		return "", err
	}
	return call(ctx, cl, func(ctx context.Context, cl *redis.Client) (string, error) {
		return cl.Info(ctx, "replication").Result()
	})
}

// infoInt parses an integer INFO field (nil when absent or malformed).
func infoInt(info, key string) *int64 {
	v, err := strconv.ParseInt(infoField(info, key), 10, 64)
	if err != nil {
		return nil
	}
	return &v
}

// SampleReplicationLag reads ReadReplicationLag every interval (0 means
// one second), the first time at once, until ctx ends, and returns the
// series. Run it beside the load in its own goroutine, with a ctx that
// ends with the load. A round whose topology could not be read is kept
// with no replicas (the cluster did not answer then).
func SampleReplicationLag(ctx context.Context, c Cluster, interval time.Duration) []ReplicationSample {
	if interval <= 0 {
		interval = time.Second
	}
	t0 := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var out []ReplicationSample
	for {
		at := time.Since(t0)
		rctx, cancel := context.WithTimeout(ctx, interval)
		reps, err := ReadReplicationLag(rctx, c)
		cancel()
		if ctx.Err() != nil {
			return out // a round cut short by the end is not a sample
		}
		if err != nil {
			reps = nil
		}
		out = append(out, ReplicationSample{TS: at.Seconds(), Replicas: reps})
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}
