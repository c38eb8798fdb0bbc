package compose

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// NumSlots is the number of hash slots of a Redis Cluster.
const NumSlots = 16384

// callTimeout bounds one administrative command to one node.
const callTimeout = time.Second

// nodeEntry is one parsed line of CLUSTER NODES.
type nodeEntry struct {
	id       string
	addr     string // ip:port (without @cport / hostname)
	flags    []string
	myself   bool
	role     string // master | replica | "" (unknown)
	masterID string
	slots    [][2]int
}

func (e nodeEntry) hasFlag(f string) bool { return slices.Contains(e.flags, f) }

// parseClusterNodes parses the reply of CLUSTER NODES.
func parseClusterNodes(s string) ([]nodeEntry, error) {
	var out []nodeEntry
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("compose: malformed CLUSTER NODES line %q", line)
		}
		e := nodeEntry{id: f[0], addr: f[1]}
		if i := strings.IndexAny(e.addr, "@,"); i >= 0 {
			e.addr = e.addr[:i]
		}
		for _, fl := range strings.Split(f[2], ",") {
			switch fl {
			case "myself":
				e.myself = true
			case "master":
				e.role = "master"
			case "slave":
				e.role = "replica"
			case "noflags":
			default:
				e.flags = append(e.flags, fl)
			}
		}
		if f[3] != "-" {
			e.masterID = f[3]
		}
		for _, sl := range f[8:] {
			if strings.HasPrefix(sl, "[") { // migrating / importing marker
				continue
			}
			lo, hi, isRange := strings.Cut(sl, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("compose: bad slot %q in CLUSTER NODES line %q", sl, line)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("compose: bad slot range %q in CLUSTER NODES line %q", sl, line)
				}
			}
			e.slots = append(e.slots, [2]int{a, b})
		}
		out = append(out, e)
	}
	return out, nil
}

// viewSignature renders the parts of a CLUSTER NODES view that every node
// must agree on once converged: ids, roles, replication and slot ownership.
// A node the cluster flagged failed no longer gossips its own state, so
// the nodes' views of whom it replicated may stay apart for good (one
// keeps its master's id, another none: seen on Redis 7.0 after a replica
// was killed): its master is left out.
func viewSignature(entries []nodeEntry) string {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		var b strings.Builder
		master := e.masterID
		if e.hasFlag("fail") {
			master = "(failed)"
		}
		fmt.Fprintf(&b, "%s %s %s %s", e.id, e.addr, e.role, master)
		for _, r := range e.slots {
			fmt.Fprintf(&b, " %d-%d", r[0], r[1])
		}
		lines = append(lines, b.String())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// call runs fn against cl with a per-call timeout (callTimeout). If ctx
// itself expired, the error wraps ctx.Err() (go-redis reports deadlines as
// network timeouts).
func call[T any](ctx context.Context, cl *redis.Client, fn func(context.Context, *redis.Client) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	v, err := fn(cctx, cl)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		if cerr := ctxErr(ctx); cerr != nil {
			err = fmt.Errorf("%w (%w)", err, cerr)
		}
	}
	return v, err
}

// ctxErr is ctx.Err(), but already reports DeadlineExceeded once the
// deadline has passed (ctx.Err() may lag behind the clock a little).
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// clusterNodesOf returns the CLUSTER NODES view of the node at addr. A node
// that never met a peer does not know its own IP (its entry reads
// ":port@cport"); its myself entry gets addr then.
func clusterNodesOf(ctx context.Context, cl *redis.Client, addr string) ([]nodeEntry, error) {
	s, err := call(ctx, cl, func(ctx context.Context, cl *redis.Client) (string, error) {
		return cl.ClusterNodes(ctx).Result()
	})
	if err != nil {
		return nil, err
	}
	es, err := parseClusterNodes(s)
	for i := range es {
		if es[i].myself && strings.HasPrefix(es[i].addr, ":") {
			es[i].addr = addr
		}
	}
	return es, err
}

// slotRanges splits the 16384 slots over n masters like redis-cli does.
func slotRanges(n int) [][2]int {
	out := make([][2]int, n)
	per := float64(NumSlots) / float64(n)
	first, cursor := 0, 0.0
	for i := 0; i < n; i++ {
		last := int(cursor + per - 1 + 0.5)
		if last > NumSlots-1 || i == n-1 {
			last = NumSlots - 1
		}
		if last < first {
			last = first
		}
		out[i] = [2]int{first, last}
		first = last + 1
		cursor += per
	}
	return out
}

// form turns the freshly started, independent nodes into a cluster.
func (c *LocalCluster) form(ctx context.Context) error {
	t0 := time.Now()
	procs := c.procs
	clients := make([]*redis.Client, len(procs))
	for i, p := range procs {
		if clients[i] = c.client(p); clients[i] == nil {
			return fmt.Errorf("node %s is not running", p.addr)
		}
	}
	// Identities and distinct config epochs (what redis-cli --cluster create
	// does: it avoids the epoch-collision dance and speeds up convergence).
	for i, p := range procs {
		id, err := call(ctx, clients[i], func(ctx context.Context, cl *redis.Client) (string, error) {
			return cl.ClusterMyID(ctx).Result()
		})
		if err != nil {
			return fmt.Errorf("CLUSTER MYID on %s: %w", p.addr, err)
		}
		c.mu.Lock()
		p.id = id
		c.mu.Unlock()
		if _, err := call(ctx, clients[i], func(ctx context.Context, cl *redis.Client) (any, error) {
			return cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Result()
		}); err != nil {
			c.logf("compose: CLUSTER SET-CONFIG-EPOCH on %s: %v (continuing)", p.addr, err)
		}
	}
	// Slots.
	m := c.opt.Masters
	for j, r := range slotRanges(m) {
		if _, err := call(ctx, clients[j], func(ctx context.Context, cl *redis.Client) (any, error) {
			return cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", r[0], r[1]).Result()
		}); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d on %s: %w", r[0], r[1], procs[j].addr, err)
		}
	}
	// Handshakes: every node meets the first one and, so that discovery does
	// not have to wait for gossip rounds, every node it precedes (one MEET
	// per pair; the cluster bus port is not port+10000 here, so it is passed
	// explicitly).
	for i := 1; i < len(procs); i++ {
		for j := 0; j < i; j++ {
			host, port, _ := net.SplitHostPort(procs[j].addr)
			cport := procs[j].cport
			if _, err := call(ctx, clients[i], func(ctx context.Context, cl *redis.Client) (any, error) {
				return cl.Do(ctx, "CLUSTER", "MEET", host, port, cport).Result()
			}); err != nil {
				return fmt.Errorf("CLUSTER MEET %s from %s: %w", procs[j].addr, procs[i].addr, err)
			}
		}
	}
	if err := c.waitAllKnown(ctx, clients); err != nil {
		return err
	}
	c.logf("compose: all %d nodes know each other after %v", len(procs), time.Since(t0).Round(time.Millisecond))
	// Replicas: replica r of master j is procs[m + j*R + r].
	rpm := c.opt.ReplicasPerMaster
	for j := 0; j < m; j++ {
		for r := 0; r < rpm; r++ {
			i := m + j*rpm + r
			mid := procs[j].id
			if _, err := call(ctx, clients[i], func(ctx context.Context, cl *redis.Client) (string, error) {
				return cl.ClusterReplicate(ctx, mid).Result()
			}); err != nil {
				return fmt.Errorf("CLUSTER REPLICATE %s on %s: %w", mid, procs[i].addr, err)
			}
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return err
	}
	c.logf("compose: cluster formed in %v", time.Since(t0).Round(time.Millisecond))
	return nil
}

// waitAllKnown waits until every node lists every other node (by id, with no
// handshake/noaddr flags).
func (c *LocalCluster) waitAllKnown(ctx context.Context, clients []*redis.Client) error {
	want := make(map[string]bool, len(c.procs))
	for _, p := range c.procs {
		want[p.id] = true
	}
	var lastErr error
	for {
		lastErr = func() error {
			for i, cl := range clients {
				entries, err := clusterNodesOf(ctx, cl, c.procs[i].addr)
				if err != nil {
					return fmt.Errorf("CLUSTER NODES on %s: %w", c.procs[i].addr, err)
				}
				seen := 0
				for _, e := range entries {
					if e.hasFlag("handshake") || e.hasFlag("noaddr") {
						return fmt.Errorf("%s still has node %s in flags %v", c.procs[i].addr, e.id, e.flags)
					}
					if want[e.id] {
						seen++
					}
				}
				if seen != len(want) {
					return fmt.Errorf("%s knows %d of %d nodes", c.procs[i].addr, seen, len(want))
				}
			}
			return nil
		}()
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes did not discover each other: %v: %w", lastErr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitHealthy waits until the cluster is healthy, polling every 50ms, and
// returns nil as soon as it is; otherwise it returns an error describing the
// last unmet condition (wrapping ctx.Err()). If ctx has no deadline,
// Options.ReadyTimeout bounds the wait.
//
// Healthy means, for every node that is running and not paused:
// cluster_state:ok with all 16384 slots assigned and ok (no slot owned by a
// failing master); its CLUSTER NODES view agrees with every other such node's
// view on ids, addresses, roles, master of every replica and slot ownership
// (the slot→master map); no such node is flagged fail/fail?/handshake in
// anyone's view; and every replica among them has master_link_status:up.
// Stopped or killed nodes are not required to be up; paused nodes are
// ignored (they cannot answer) — their peers will flag them eventually.
func (c *LocalCluster) WaitHealthy(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opt.ReadyTimeout)
		defer cancel()
	}
	for {
		err := c.checkHealthy(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrClosed) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("compose: cluster not healthy: %v: %w", err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkHealthy performs one round of the WaitHealthy checks over the
// running, unpaused nodes (see healthRound.check), recording each node's
// cluster id as it is read.
func (c *LocalCluster) checkHealthy(ctx context.Context) error {
	c.mu.Lock()
	closed := c.closed
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	var lives []*proc
	var nodes []*healthNode
	for _, p := range procs {
		if cl := c.client(p); cl != nil {
			lives = append(lives, p)
			nodes = append(nodes, &healthNode{addr: p.addr, cl: cl})
		}
	}
	if len(nodes) == 0 {
		return errors.New("no node is running")
	}
	return healthRound{
		noted: func(i int, n *healthNode) {
			c.mu.Lock()
			lives[i].id = n.myself.id
			c.mu.Unlock()
		},
		flagged: func(l, o *healthNode, e nodeEntry) error {
			return fmt.Errorf("%s sees running node %s (%s) with flags %v", l.addr, o.addr, e.id, e.flags)
		},
	}.check(ctx, nodes)
}

// Nodes returns the current topology: the CLUSTER NODES view of a reachable
// node (running, not paused; the longest-running one is asked first, since
// a just-restarted node may hold a stale view), so roles reflect failovers.
// PID, Dir and Paused come from the harness's own bookkeeping. Nodes are
// ordered as in Addrs. It fails only if no node answers.
func (c *LocalCluster) Nodes(ctx context.Context) ([]Node, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	type cand struct {
		p       *proc
		cl      *redis.Client
		started time.Time
	}
	var cands []cand
	for _, p := range procs {
		if cl := c.client(p); cl != nil {
			c.mu.Lock()
			st := p.cur.started
			c.mu.Unlock()
			cands = append(cands, cand{p, cl, st})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.started.Compare(b.started) })
	var errs []error
	for _, cd := range cands {
		view, err := clusterNodesOf(ctx, cd.cl, cd.p.addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", cd.p.addr, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		return c.enrich(view), nil
	}
	if len(cands) == 0 {
		return nil, errors.New("compose: no node is running (and not paused)")
	}
	return nil, fmt.Errorf("compose: no node answered CLUSTER NODES: %w", errors.Join(errs...))
}

// enrich converts a CLUSTER NODES view into Nodes, adding bookkeeping and
// caching the result per node.
func (c *LocalCluster) enrich(view []nodeEntry) []Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	idx := func(addr string) int {
		if p, ok := c.byAddr[addr]; ok {
			return p.idx
		}
		return len(c.procs)
	}
	out := make([]Node, 0, len(view))
	for _, e := range view {
		e.addr = c.RealAddr(e.addr)
		n := Node{ID: e.id, Addr: e.addr, Role: e.role, MasterID: e.masterID, Slots: e.slots, Flags: e.flags}
		if _, port, err := net.SplitHostPort(e.addr); err == nil {
			n.Port, _ = strconv.Atoi(port)
		}
		if p, ok := c.byAddr[e.addr]; ok {
			c.fillLocked(&n, p)
			p.last = n
		}
		out = append(out, n)
	}
	slices.SortStableFunc(out, func(a, b Node) int {
		if d := idx(a.Addr) - idx(b.Addr); d != 0 {
			return d
		}
		return strings.Compare(a.Addr, b.Addr)
	})
	return out
}

// fillLocked sets the bookkeeping fields of n from p (c.mu held).
func (c *LocalCluster) fillLocked(n *Node, p *proc) {
	n.Addr, n.Port, n.Dir, n.Paused, n.PID = p.addr, p.port, p.dir, p.paused, 0
	if n.ID == "" {
		n.ID = p.id
	}
	if !c.closed && !p.cur.exited() {
		n.PID = p.cur.pid
	}
	n.Down = n.PID == 0
}

// MasterOfSlot returns the master that currently owns slot (0..16383)
// according to Nodes.
func (c *LocalCluster) MasterOfSlot(ctx context.Context, slot int) (Node, error) {
	if slot < 0 || slot >= NumSlots {
		return Node{}, fmt.Errorf("compose: slot %d out of range [0,%d)", slot, NumSlots)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if n.Role == "master" && n.HasSlot(slot) {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("compose: no master owns slot %d", slot)
}

// ReplicasOf returns the nodes that currently replicate masterID according
// to Nodes (possibly none; failed replicas included, see Node.Flags).
func (c *LocalCluster) ReplicasOf(ctx context.Context, masterID string) ([]Node, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []Node
	for _, n := range nodes {
		if n.Role == "replica" && n.MasterID == masterID {
			out = append(out, n)
		}
	}
	return out, nil
}

// NodeByAddr returns the node at addr and whether addr belongs to this
// cluster. It first tries a fresh Nodes refresh (bounded to ~1s); if no node
// answers it returns the last known cluster view of that node combined with
// current bookkeeping (PID, Paused, Dir).
func (c *LocalCluster) NodeByAddr(addr string) (Node, bool) {
	if _, err := c.proc(addr); err != nil {
		return Node{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if nodes, err := c.Nodes(ctx); err == nil {
		for _, n := range nodes {
			if n.Addr == addr {
				return n, true
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.byAddr[addr]
	n := p.last
	c.fillLocked(&n, p)
	return n, true
}
