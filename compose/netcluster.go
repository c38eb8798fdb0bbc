package compose

// netCluster is the topology core shared by ExternalCluster and
// DockerCluster: a Redis Cluster the harness reaches only over the network,
// known by the addresses its nodes announce. It never starts, stops or
// signals anything; what it knows about processes comes from state.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

type netCluster struct {
	provider     string
	base         redis.Options // credentials, TLS, dial timeout; Addr unset
	readyTimeout time.Duration
	// tolerateFailed: nodes that the cluster itself flags "fail" (or
	// "noaddr") are not required to answer (an external cluster may carry a
	// dead node for a long time; the harness cannot restart it).
	tolerateFailed bool
	logf           func(format string, args ...any)
	// state reports what the harness knows of addr's process; nil when it
	// knows nothing (external). It must not call back into netCluster.
	state func(addr string) (down, paused bool)

	mu        sync.Mutex
	order     []string // known addresses: discovery order, later discoveries appended
	admins    map[string]*redis.Client
	last      map[string]Node // last view of every node
	preferred string          // the node that answered CLUSTER NODES last
	closed    bool
}

func newNetCluster(provider string, base redis.Options, readyTimeout time.Duration, tolerateFailed bool,
	logf func(string, ...any), state func(string) (bool, bool)) *netCluster {
	if readyTimeout <= 0 {
		readyTimeout = 30 * time.Second
	}
	if base.DialTimeout <= 0 {
		base.DialTimeout = 2 * time.Second
	}
	return &netCluster{
		provider: provider, base: base, readyTimeout: readyTimeout, tolerateFailed: tolerateFailed,
		logf: logf, state: state, admins: map[string]*redis.Client{}, last: map[string]Node{},
	}
}

func (n *netCluster) log(format string, args ...any) {
	if n.logf != nil {
		n.logf(format, args...)
	}
}

// adminOptions are the options of a single-node administrative client:
// the cluster's credentials and TLS, no retries (callers poll themselves).
func (n *netCluster) adminOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                     addr,
		Username:                 n.base.Username,
		Password:                 n.base.Password,
		TLSConfig:                n.base.TLSConfig,
		Protocol:                 2,
		DisableIdentity:          true,
		MaxRetries:               -1,
		DialerRetries:            1,
		ContextTimeoutEnabled:    true,
		DialTimeout:              n.base.DialTimeout,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		PoolSize:                 4,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

func (n *netCluster) knownLocked(addr string) bool {
	return slices.Contains(n.order, addr)
}

func (n *netCluster) procState(addr string) (down, paused bool) {
	if n.state == nil {
		return false, false
	}
	return n.state(addr)
}

// Addrs implements Cluster: every known node, in discovery order.
func (n *netCluster) Addrs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.order...)
}

// Admin implements Cluster.
func (n *netCluster) Admin(addr string) (*redis.Client, error) {
	if down, paused := n.procState(addr); down || paused {
		return nil, fmt.Errorf("node %s: %w", addr, ErrNotRunning)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	if !n.knownLocked(addr) {
		return nil, fmt.Errorf("compose: no node with address %q in this cluster", addr)
	}
	cl := n.admins[addr]
	if cl == nil {
		cl = redis.NewClient(n.adminOptions(addr))
		n.admins[addr] = cl
	}
	return cl, nil
}

// dropAdmin closes and forgets the admin client of addr (after a restart,
// so that no pool in dial back-off is reused).
func (n *netCluster) dropAdmin(addr string) {
	n.mu.Lock()
	cl := n.admins[addr]
	delete(n.admins, addr)
	n.mu.Unlock()
	if cl != nil {
		_ = cl.Close()
	}
}

// liveAddrs are the known nodes the harness does not know to be down or
// paused; with tolerateFailed, nodes the last view flags fail/noaddr are
// left out too. The preferred node comes first.
func (n *netCluster) liveAddrs() ([]string, error) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	order := append([]string(nil), n.order...)
	pref := n.preferred
	last := make(map[string]Node, len(n.last))
	for k, v := range n.last {
		last[k] = v
	}
	n.mu.Unlock()
	var out []string
	for _, a := range order {
		if down, paused := n.procState(a); down || paused {
			continue
		}
		if n.tolerateFailed {
			if l, ok := last[a]; ok && (slices.Contains(l.Flags, "fail") || slices.Contains(l.Flags, "noaddr")) {
				continue
			}
		}
		out = append(out, a)
	}
	if i := slices.Index(out, pref); i > 0 {
		out = append(append([]string{pref}, out[:i]...), out[i+1:]...)
	}
	return out, nil
}

// Nodes implements Cluster: the CLUSTER NODES view of the first live node
// that answers (the one that answered last time is asked first).
func (n *netCluster) Nodes(ctx context.Context) ([]Node, error) {
	addrs, err := n.liveAddrs()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		cl, err := n.Admin(a)
		if err != nil {
			continue
		}
		view, err := clusterNodesOf(ctx, cl, a)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		n.mu.Lock()
		n.preferred = a
		n.mu.Unlock()
		return n.enrich(view), nil
	}
	if len(addrs) == 0 {
		return nil, errors.New("compose: no node is reachable (all known nodes are down, paused or failed)")
	}
	return nil, fmt.Errorf("compose: no node answered CLUSTER NODES: %w", errors.Join(errs...))
}

// enrich converts a view into Nodes, learns new addresses, caches the view
// per node and orders the result like Addrs.
func (n *netCluster) enrich(view []nodeEntry) []Node {
	out := make([]Node, 0, len(view))
	for _, e := range view {
		nd := Node{ID: e.id, Addr: e.addr, Role: e.role, MasterID: e.masterID, Slots: e.slots, Flags: e.flags}
		if _, port, err := splitHostPort(e.addr); err == nil {
			nd.Port = port
		}
		nd.Down, nd.Paused = n.procState(e.addr)
		out = append(out, nd)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nd := range out {
		if nd.Addr == "" || strings.HasPrefix(nd.Addr, ":") || slices.Contains(nd.Flags, "handshake") {
			continue
		}
		if !n.knownLocked(nd.Addr) && !slices.Contains(nd.Flags, "noaddr") {
			n.order = append(n.order, nd.Addr)
			n.log("compose: %s cluster: learned node %s (%s)", n.provider, nd.Addr, shortID(nd.ID))
		}
		n.last[nd.Addr] = nd
	}
	idx := func(addr string) int {
		if i := slices.Index(n.order, addr); i >= 0 {
			return i
		}
		return len(n.order)
	}
	slices.SortStableFunc(out, func(a, b Node) int {
		if d := idx(a.Addr) - idx(b.Addr); d != 0 {
			return d
		}
		return strings.Compare(a.Addr, b.Addr)
	})
	return out
}

// NodeByAddr implements Cluster.
func (n *netCluster) NodeByAddr(addr string) (Node, bool) {
	n.mu.Lock()
	known := n.knownLocked(addr)
	n.mu.Unlock()
	if !known {
		return Node{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if nodes, err := n.Nodes(ctx); err == nil {
		for _, nd := range nodes {
			if nd.Addr == addr {
				return nd, true
			}
		}
	}
	n.mu.Lock()
	nd, ok := n.last[addr]
	n.mu.Unlock()
	if !ok {
		nd = Node{Addr: addr}
		if _, port, err := splitHostPort(addr); err == nil {
			nd.Port = port
		}
	}
	nd.Down, nd.Paused = n.procState(addr)
	return nd, true
}

// NodeByID implements Cluster.
func (n *netCluster) NodeByID(ctx context.Context, id string) (Node, error) {
	nodes, err := n.Nodes(ctx)
	if err != nil {
		return Node{}, err
	}
	return nodesByID(nodes, id)
}

// MasterOfSlot implements Cluster.
func (n *netCluster) MasterOfSlot(ctx context.Context, slot int) (Node, error) {
	if slot < 0 || slot >= NumSlots {
		return Node{}, fmt.Errorf("compose: slot %d out of range [0,%d)", slot, NumSlots)
	}
	nodes, err := n.Nodes(ctx)
	if err != nil {
		return Node{}, err
	}
	return nodesMasterOfSlot(nodes, slot)
}

// ReplicasOf implements Cluster.
func (n *netCluster) ReplicasOf(ctx context.Context, masterID string) ([]Node, error) {
	nodes, err := n.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	return nodesReplicasOf(nodes, masterID), nil
}

// SlotOwners implements Cluster: nodes that do not answer are left out; the
// error is non-nil only if none answered.
func (n *netCluster) SlotOwners(ctx context.Context, slot int) (map[string]string, error) {
	addrs, err := n.liveAddrs()
	if err != nil {
		return nil, err
	}
	clients := map[string]*redis.Client{}
	for _, a := range addrs {
		if cl, err := n.Admin(a); err == nil {
			clients[a] = cl
		}
	}
	return slotOwnersFrom(ctx, clients, slot, "no node is reachable")
}

// WaitSlotOwner implements Cluster (polling every 20ms; without a deadline
// on ctx, at most the cluster's ready timeout).
func (n *netCluster) WaitSlotOwner(ctx context.Context, slot int, ownerID string) error {
	return waitSlotOwner(ctx, n.readyTimeout, slot, ownerID, n.SlotOwners)
}

// waitSlotOwner polls owners until every node names ownerID for slot.
func waitSlotOwner(ctx context.Context, def time.Duration, slot int, ownerID string,
	owners func(context.Context, int) (map[string]string, error)) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, def)
		defer cancel()
	}
	var last string
	for {
		m, err := owners(ctx, slot)
		if err == nil {
			var disagree []string
			for addr, id := range m {
				if id != ownerID {
					disagree = append(disagree, addr+"→"+shortID(id))
				}
			}
			if len(disagree) == 0 {
				return nil
			}
			slices.Sort(disagree)
			last = "nodes naming another owner: " + strings.Join(disagree, ", ")
		} else {
			if errors.Is(err, ErrClosed) {
				return err
			}
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("compose: slot %d not owned by %s everywhere: %s: %w", slot, shortID(ownerID), last, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// OpenSlots implements Cluster: a live node that does not answer is an error.
func (n *netCluster) OpenSlots(ctx context.Context) ([]OpenSlot, error) {
	addrs, err := n.liveAddrs()
	if err != nil {
		return nil, err
	}
	var out []OpenSlot
	for _, a := range addrs {
		cl, err := n.Admin(a)
		if err != nil {
			continue
		}
		s, err := call(ctx, cl, func(ctx context.Context, cl *redis.Client) (string, error) {
			return cl.ClusterNodes(ctx).Result()
		})
		if err != nil {
			return nil, fmt.Errorf("compose: CLUSTER NODES on %s: %w", a, err)
		}
		marks, err := parseOpenSlots(s, a)
		if err != nil {
			return nil, err
		}
		out = append(out, marks...)
	}
	slices.SortFunc(out, func(a, b OpenSlot) int {
		if d := strings.Compare(a.Addr, b.Addr); d != 0 {
			return d
		}
		return a.Slot - b.Slot
	})
	return out, nil
}

// WaitHealthy implements Cluster; without a deadline on ctx it waits at
// most the cluster's ready timeout. Healthy: for every live node (not
// known down or paused; on an external cluster, not flagged fail by the
// cluster itself) cluster_state:ok with all slots assigned and ok, the
// same topology in every view, no live node flagged fail/fail?/handshake,
// every live replica with master_link_status:up.
func (n *netCluster) WaitHealthy(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.readyTimeout)
		defer cancel()
	}
	for {
		err := n.checkHealthy(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrClosed) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("compose: %s cluster not healthy: %v: %w", n.provider, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkHealthy performs one round of the WaitHealthy checks over the
// reachable nodes (see healthRound.check), after refreshing their flags; a
// node without an admin client is left out.
func (n *netCluster) checkHealthy(ctx context.Context) error {
	if _, err := n.Nodes(ctx); err != nil { // refreshes the flags liveAddrs looks at
		return err
	}
	addrs, err := n.liveAddrs()
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return errors.New("no node is reachable")
	}
	var nodes []*healthNode
	for _, a := range addrs {
		if cl, err := n.Admin(a); err == nil {
			nodes = append(nodes, &healthNode{addr: a, cl: cl})
		}
	}
	return healthRound{
		flagged: func(l, o *healthNode, e nodeEntry) error {
			return fmt.Errorf("%s sees live node %s (%s) with flags %v", l.addr, o.addr, shortID(e.id), e.flags)
		},
	}.check(ctx, nodes)
}

// close closes the admin clients. Idempotent.
func (n *netCluster) close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	admins := n.admins
	n.admins = map[string]*redis.Client{}
	n.mu.Unlock()
	var errs []error
	for _, cl := range admins {
		if err := cl.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// discover reads the topology from the first seed that answers and sets
// the known addresses: masters by first slot, masters without slots, then
// replicas in their masters' order.
func (n *netCluster) discover(ctx context.Context, seeds []string) error {
	var errs []error
	for _, seed := range seeds {
		cl := redis.NewClient(n.adminOptions(seed))
		view, err := clusterNodesOf(ctx, cl, seed)
		_ = cl.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("seed %s: %w", seed, explainConnErr(err)))
			if ctxErr(ctx) != nil {
				break
			}
			continue
		}
		n.setOrder(view)
		n.enrich(view)
		n.log("compose: %s cluster: %d nodes discovered from seed %s", n.provider, len(n.Addrs()), seed)
		return nil
	}
	return errors.Join(errs...)
}

func (n *netCluster) setOrder(view []nodeEntry) {
	var masters, empty, replicas []nodeEntry
	for _, e := range view {
		if e.hasFlag("noaddr") || e.hasFlag("handshake") || e.addr == "" || strings.HasPrefix(e.addr, ":") {
			continue
		}
		switch {
		case e.role == "master" && len(e.slots) > 0:
			masters = append(masters, e)
		case e.role == "master":
			empty = append(empty, e)
		default:
			replicas = append(replicas, e)
		}
	}
	slices.SortFunc(masters, func(a, b nodeEntry) int { return a.slots[0][0] - b.slots[0][0] })
	slices.SortFunc(empty, func(a, b nodeEntry) int { return strings.Compare(a.addr, b.addr) })
	mpos := map[string]int{}
	for i, m := range append(append([]nodeEntry(nil), masters...), empty...) {
		mpos[m.id] = i
	}
	slices.SortFunc(replicas, func(a, b nodeEntry) int {
		pa, oka := mpos[a.masterID]
		pb, okb := mpos[b.masterID]
		if !oka {
			pa = len(mpos)
		}
		if !okb {
			pb = len(mpos)
		}
		if pa != pb {
			return pa - pb
		}
		return strings.Compare(a.addr, b.addr)
	})
	var order []string
	for _, group := range [][]nodeEntry{masters, empty, replicas} {
		for _, e := range group {
			order = append(order, e.addr)
		}
	}
	n.mu.Lock()
	n.order = order
	n.mu.Unlock()
}

// explainConnErr adds a hint to the errors a wrong setup typically gives.
func explainConnErr(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "cluster support disabled"):
		return fmt.Errorf("%w (this node is not in cluster mode: the harness needs a Redis Cluster, cluster-enabled yes)", err)
	case strings.HasPrefix(msg, "NOAUTH"):
		return fmt.Errorf("%w (the node requires authentication: give a user/password in the URL, the options or SECKILL_REDIS_USERNAME / SECKILL_REDIS_PASSWORD)", err)
	case strings.HasPrefix(msg, "WRONGPASS"):
		return fmt.Errorf("%w (the user name or password is wrong)", err)
	case strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:"):
		return fmt.Errorf("%w (TLS handshake failed: check rediss:// versus redis://, the CA file and the server name)", err)
	}
	return err
}

// splitHostPort splits "host:port" and parses the port.
func splitHostPort(addr string) (string, int, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("compose: %q is not host:port", addr)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr[:i], "["), "]")
	port, err := strconv.Atoi(addr[i+1:])
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("compose: %q: bad port", addr)
	}
	return host, port, nil
}
