package compose

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
)

// proxyEntry is what both Toxics implementations know of one node's proxy:
// the node it fronts, the address the harness dials to reach it, whether it
// is disabled and how many client connections the Dialer has open through it.
type proxyEntry struct {
	node     string // upstream: the node's address
	listen   string // the address the harness dials (fixed for the proxy's lifetime)
	disabled bool   // guarded by proxyBook.mu
	conns    atomic.Int64
	dialed   atomic.Int64
}

func (e *proxyEntry) entry() *proxyEntry { return e }

// proxyBook is the bookkeeping shared by the embedded (Proxies) and the
// remote (RemoteProxies) toxiproxy: node address → proxy, proxy address →
// node address, the closed flag and the Dialer's mapping. P is the
// implementation's own proxy type, which embeds a proxyEntry.
type proxyBook[P interface{ entry() *proxyEntry }] struct {
	cluster Cluster
	dialer  net.Dialer

	mu       sync.Mutex
	byNode   map[string]P      // real node address → its proxy
	byListen map[string]string // proxy address → real node address
	closed   bool
}

func newProxyBook[P interface{ entry() *proxyEntry }](c Cluster, dialer net.Dialer) proxyBook[P] {
	return proxyBook[P]{cluster: c, dialer: dialer, byNode: map[string]P{}, byListen: map[string]string{}}
}

// add records a new proxy; the caller holds mu.
func (b *proxyBook[P]) add(px P) {
	e := px.entry()
	b.byNode[e.node] = px
	b.byListen[e.listen] = e.node
}

// lookup returns the proxy of nodeAddr (ok false if it has none) and
// whether the book is closed.
func (b *proxyBook[P]) lookup(nodeAddr string) (px P, ok, closed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	px, ok = b.byNode[nodeAddr]
	return px, ok, b.closed
}

// dial is the Dialer both implementations share. An address the cluster
// announces in place of a node's own (AnnouncedAddrs) is first mapped back
// to the node's address. An address that already
// is a proxy's is dialled directly, as is any address for which direct
// says so; every other address goes through its node's proxy, created by
// ensureLocked (called with mu held) if there is none yet. When the
// cluster's bookkeeping says the node is not running (killed, stopped or
// paused: Admin fails), the node is first probed directly and its own dial
// error is returned if it refuses: toxiproxy accepts a connection before it
// dials the upstream, so through a bare proxy a dead node would look like a
// connection accepted and then cut instead of "connection refused"; a
// paused node still accepts (the kernel does) and is dialled through its
// proxy. After close it fails with ErrProxiesClosed.
func (b *proxyBook[P]) dial(ctx context.Context, network, addr string, direct func(addr string) bool, ensureLocked func(addr string) (P, error)) (net.Conn, error) {
	if an, ok := b.cluster.(AnnouncedAddrs); ok {
		addr = an.RealAddr(addr)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, fmt.Errorf("dial %s: %w", addr, ErrProxiesClosed)
	}
	if _, isProxy := b.byListen[addr]; isProxy || direct(addr) {
		b.mu.Unlock()
		return b.dialer.DialContext(ctx, network, addr)
	}
	px, err := ensureLocked(addr)
	b.mu.Unlock()
	if err != nil {
		return nil, err // never bypass the proxies silently
	}
	if err := b.probeDown(ctx, network, addr); err != nil {
		return nil, err
	}
	e := px.entry()
	conn, err := b.dialer.DialContext(ctx, network, e.listen)
	if err != nil {
		return nil, err
	}
	e.dialed.Add(1)
	e.conns.Add(1)
	return &trackedConn{Conn: conn, counter: &e.conns}, nil
}

// probeDown returns the node's own dial error when the cluster's bookkeeping
// says the node is not running and a direct dial is refused.
func (b *proxyBook[P]) probeDown(ctx context.Context, network, addr string) error {
	if b.cluster == nil {
		return nil
	}
	if _, err := b.cluster.Admin(addr); err == nil {
		return nil // running and not paused
	}
	c, err := b.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	_ = c.Close()
	return nil
}

// nodeBehind returns the node address whose proxy listens on listen.
func (b *proxyBook[P]) nodeBehind(listen string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.byListen[listen]
	return n, ok
}

// ListenAddr returns the address the harness dials to reach nodeAddr's
// proxy, if it has one.
func (b *proxyBook[P]) ListenAddr(nodeAddr string) (string, bool) {
	px, ok, _ := b.lookup(nodeAddr)
	if !ok {
		return "", false
	}
	return px.entry().listen, true
}

// NodeAddrs returns the node addresses that have a proxy, sorted.
func (b *proxyBook[P]) NodeAddrs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.byNode))
	for a := range b.byNode {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Disabled reports whether nodeAddr's proxy is disabled.
func (b *proxyBook[P]) Disabled(nodeAddr string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	px, ok := b.byNode[nodeAddr]
	return ok && px.entry().disabled
}

// Stats returns how many client connections the Dialer opened through
// nodeAddr's proxy and the client has not closed yet (the warm pool).
func (b *proxyBook[P]) Stats(nodeAddr string) (connections int, err error) {
	px, ok, _ := b.lookup(nodeAddr)
	if !ok {
		return 0, fmt.Errorf("compose: no proxy for %s", nodeAddr)
	}
	return int(px.entry().conns.Load()), nil
}
