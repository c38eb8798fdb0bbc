package compose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
	zlog "github.com/rs/zerolog/log"
)

// quietToxics silences zerolog's global logger once: some toxics (bandwidth)
// log through it at trace level, straight to stderr, whatever logger the
// server was given. Nothing else in the harness uses zerolog.
var quietToxics sync.Once

// ErrProxiesClosed is returned by the Dialer and by AddToxic/Disable after
// Proxies.Close.
var ErrProxiesClosed = errors.New("compose: proxies are closed")

// Toxic describes one toxiproxy toxic (see the toxics/ package of
// github.com/Shopify/toxiproxy/v2 for the types and their attributes):
// latency {latency, jitter} ms; bandwidth {rate} KB/s; slicer {average_size,
// size_variation} bytes, {delay} µs; reset_peer {timeout} ms; limit_data
// {bytes}; timeout {timeout} ms; slow_close {delay} ms.
type Toxic struct {
	Name string // unique per proxy; "" means "<type>_<stream>"
	Type string
	// Stream is "downstream" (Redis → client, the default) or "upstream"
	// (client → Redis). An upstream toxic keeps requests from reaching Redis.
	Stream string
	// Toxicity is the probability that the toxic applies to a connection.
	// It is drawn per connection (and again on every connection whenever a
	// toxic of the same stream is added or removed), not per request.
	// 0 means 1.
	Toxicity   float32
	Attributes map[string]any
}

// Proxies is an embedded, in-process toxiproxy server with one TCP proxy in
// front of every node of a cluster (any Cluster whose nodes this machine can
// reach: a LocalCluster, a DockerCluster on the host network, an
// ExternalCluster). Only the harness's client
// connections go through it (via Dialer); replication and the cluster bus
// use the nodes' real addresses and are never proxied. A node that restarts
// keeps its address, so its proxy stays valid.
//
// All methods are safe for concurrent use.
type Proxies struct {
	proxyBook[*nodeProxy]
	srv *toxiproxy.ApiServer
}

type nodeProxy struct {
	proxyEntry // listen is the proxy's bound address
	px         *toxiproxy.Proxy
}

// NewProxies starts an in-process toxiproxy server and one proxy per node of
// c (listening on 127.0.0.1:0, upstream the node's real address). c may be
// nil: proxies are then only created on the fly by the Dialer, for loopback
// addresses only.
func NewProxies(c Cluster) (*Proxies, error) {
	if isNilCluster(c) {
		c = nil
	}
	quietToxics.Do(func() { zlog.Logger = zerolog.Nop() })
	p := &Proxies{
		proxyBook: newProxyBook[*nodeProxy](c, net.Dialer{Timeout: 2 * time.Second}),
		srv:       toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
	}
	if c != nil {
		for _, addr := range c.Addrs() {
			if _, err := p.ensure(addr); err != nil {
				_ = p.Close()
				return nil, err
			}
		}
	}
	return p, nil
}

// isLoopbackHost reports whether host names this machine.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ensure returns the proxy of nodeAddr, creating it if there is none yet.
func (p *Proxies) ensure(nodeAddr string) (*nodeProxy, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ensureLocked(nodeAddr)
}

func (p *Proxies) ensureLocked(nodeAddr string) (*nodeProxy, error) {
	if p.closed {
		return nil, ErrProxiesClosed
	}
	if np, ok := p.byNode[nodeAddr]; ok {
		return np, nil
	}
	host, _, err := net.SplitHostPort(nodeAddr)
	if err != nil {
		return nil, fmt.Errorf("compose: proxy for %q: %w", nodeAddr, err)
	}
	if !isLoopbackHost(host) && !p.clusterKnows(nodeAddr) {
		return nil, fmt.Errorf("compose: no proxy for %s: neither a loopback address nor a node of the cluster", nodeAddr)
	}
	px := toxiproxy.NewProxy(p.srv, "node-"+nodeAddr, "127.0.0.1:0", nodeAddr)
	if err := p.srv.Collection.Add(px, true); err != nil {
		return nil, fmt.Errorf("compose: starting the proxy for %s: %w", nodeAddr, err)
	}
	// px.Listen is the bound address once Start returned; it is rewritten
	// (to the same value) by every Enable, so it is read only here.
	np := &nodeProxy{proxyEntry: proxyEntry{node: nodeAddr, listen: px.Listen}, px: px}
	p.add(np)
	return np, nil
}

// Dialer returns a dial function for go-redis (ClusterOptions.Dialer or
// Options.Dialer). It maps a node's real address — as CLUSTER SLOTS, MOVED
// and ASK name it — to the listen address of that node's proxy. A loopback
// address with no proxy yet (a node added later) gets one on the fly; an
// address that already is a proxy's listen address, and any non-loopback
// address that is not a node of the cluster, is dialled directly. After
// Close it fails with ErrProxiesClosed.
//
// toxiproxy accepts a connection before it dials the upstream, and closes it
// if that dial fails: through a bare proxy a killed node would look like a
// connection that was accepted and then cut (EOF in the handshake) instead
// of "connection refused". So when the cluster's bookkeeping says the node
// is not running (killed, stopped or paused), the Dialer first probes the
// node directly and returns the real dial error if it refuses; a paused node
// still accepts (the kernel does) and is dialled through its proxy.
func (p *Proxies) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	notOurs := func(addr string) bool {
		host, _, err := net.SplitHostPort(addr)
		return err != nil || !isLoopbackHost(host) && !p.clusterKnows(addr)
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return p.dial(ctx, network, addr, notOurs, p.ensureLocked)
	}
}

// Replace swaps nodeAddr's proxy for a fresh one on the same listen
// address, with no toxics (and disabled if the old one was): every
// connection through the old one is closed, so its clients reconnect. It
// is the way to drop toxics from a proxy whose connections may be dying:
// toxiproxy's RemoveToxic and ResetToxics can hang for good when a
// connection's peer went away while a toxic (latency) still held data for
// it. Nil for a node without a proxy or after Close.
func (p *Proxies) Replace(nodeAddr string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	np, ok := p.byNode[nodeAddr]
	if !ok || p.closed {
		return nil
	}
	name := np.px.Name
	if err := p.srv.Collection.Remove(name); err != nil && !errors.Is(err, toxiproxy.ErrProxyNotFound) {
		return fmt.Errorf("compose: replacing the proxy of %s: %w", nodeAddr, err)
	}
	px := toxiproxy.NewProxy(p.srv, name, np.listen, nodeAddr)
	if err := p.srv.Collection.Add(px, !np.disabled); err != nil {
		return fmt.Errorf("compose: replacing the proxy of %s on %s: %w", nodeAddr, np.listen, err)
	}
	np.px = px
	return nil
}

// handle returns the toxiproxy proxy of nodeAddr (Replace may swap it)
// and whether there is one and p is open.
func (p *Proxies) handle(nodeAddr string) (*toxiproxy.Proxy, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	np, ok := p.byNode[nodeAddr]
	if !ok || p.closed {
		return nil, false
	}
	return np.px, true
}

// drop stops and forgets nodeAddr's proxy (nothing if it has none).
func (p *Proxies) drop(nodeAddr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	np, ok := p.byNode[nodeAddr]
	if !ok || p.closed {
		return
	}
	_ = p.srv.Collection.Remove(np.px.Name)
	delete(p.byNode, nodeAddr)
	delete(p.byListen, np.listen)
}

// clusterKnows reports whether addr is a node address of the cluster.
func (p *Proxies) clusterKnows(addr string) bool {
	return p.cluster != nil && slices.Contains(p.cluster.Addrs(), addr)
}

// trackedConn counts a client connection through a proxy until the client closes it.
type trackedConn struct {
	net.Conn
	counter *atomic.Int64
	once    sync.Once
}

// SyscallConn exposes the socket, as a bare *net.TCPConn would: go-redis's
// pool health check (a MSG_PEEK on the fd when a connection is taken from
// the pool) only runs on connections that implement syscall.Conn; without
// it a connection the proxy closed while idle would only be noticed when a
// command is written to it.
func (c *trackedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("compose: proxied connection has no file descriptor")
	}
	return sc.SyscallConn()
}

// NetConn returns the underlying connection.
func (c *trackedConn) NetConn() net.Conn { return c.Conn }

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.counter.Add(-1) })
	return c.Conn.Close()
}

// AddToxic adds t to nodeAddr's proxy (creating the proxy if needed). It
// fails if a toxic of that name exists, if the type is unknown or if an
// attribute is not one of the type's.
func (p *Proxies) AddToxic(nodeAddr string, t Toxic) error {
	if _, err := p.ensure(nodeAddr); err != nil {
		return err
	}
	px, ok := p.handle(nodeAddr)
	if !ok {
		return ErrProxiesClosed
	}
	t, attrs, err := normalizeToxic(t)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{
		"name": t.Name, "type": t.Type, "stream": t.Stream, "toxicity": t.Toxicity,
		"attributes": json.RawMessage(attrs),
	})
	if err != nil {
		return err
	}
	if _, err := px.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("compose: adding toxic %q (%s %s) to the proxy of %s: %w", t.Name, t.Type, t.Stream, nodeAddr, err)
	}
	return nil
}

// RemoveToxic removes the named toxic from nodeAddr's proxy. Idempotent: a
// missing toxic or proxy, or closed proxies, yield nil. Removing a timeout
// toxic closes the connections it held.
func (p *Proxies) RemoveToxic(nodeAddr, name string) error {
	px, ok := p.handle(nodeAddr)
	if !ok {
		return nil
	}
	err := px.Toxics.RemoveToxic(context.Background(), name)
	if err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
		return fmt.Errorf("compose: removing toxic %q from the proxy of %s: %w", name, nodeAddr, err)
	}
	return nil
}

// ResetToxics removes every toxic of nodeAddr's proxy (nil if it has none).
func (p *Proxies) ResetToxics(nodeAddr string) error {
	px, ok := p.handle(nodeAddr)
	if !ok {
		return nil
	}
	px.Toxics.ResetToxics(context.Background())
	return nil
}

// ToxicNames lists the toxics on nodeAddr's proxy.
func (p *Proxies) ToxicNames(nodeAddr string) []string {
	px, ok := p.handle(nodeAddr)
	if !ok {
		return nil
	}
	var out []string
	for _, t := range px.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok {
			out = append(out, w.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Disable partitions nodeAddr from the clients: its proxy stops listening
// and closes every connection through it (in-flight calls lose their
// replies; new dials are refused), while the node itself keeps running and
// keeps talking to its peers. Idempotent.
func (p *Proxies) Disable(nodeAddr string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	np, err := p.ensureLocked(nodeAddr)
	if err != nil {
		return err
	}
	np.px.Stop()
	np.disabled = true
	return nil
}

// Enable undoes Disable: the proxy listens again on the same address.
// Idempotent; nil for a node without a proxy or after Close.
func (p *Proxies) Enable(nodeAddr string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	np := p.byNode[nodeAddr]
	if np == nil || p.closed {
		return nil
	}
	if err := np.px.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("compose: re-enabling the proxy of %s on %s: %w", nodeAddr, np.listen, err)
	}
	np.disabled = false
	return nil
}

// Close stops every proxy (closing their listeners and connections) and
// the server. Idempotent.
func (p *Proxies) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.srv.Collection.Clear()
}

// isNilCluster reports whether c is nil or a typed nil pointer.
func isNilCluster(c Cluster) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// normalizeToxic applies the defaults (downstream, toxicity 1, no
// attributes) and rejects bad streams, toxicities, unknown types and
// unknown attributes (toxiproxy ignores unknown attributes silently). It
// returns the attributes as JSON.
func normalizeToxic(t Toxic) (Toxic, []byte, error) {
	if t.Stream == "" {
		t.Stream = "downstream"
	}
	if t.Stream != "downstream" && t.Stream != "upstream" {
		return t, nil, fmt.Errorf("compose: toxic %q: stream %q: want downstream or upstream", t.Name, t.Stream)
	}
	if t.Toxicity == 0 {
		t.Toxicity = 1
	}
	if t.Toxicity < 0 || t.Toxicity > 1 {
		return t, nil, fmt.Errorf("compose: toxic %q: toxicity %v: want (0,1]", t.Name, t.Toxicity)
	}
	if t.Attributes == nil {
		t.Attributes = map[string]any{}
	}
	attrs, err := json.Marshal(t.Attributes)
	if err != nil {
		return t, nil, fmt.Errorf("compose: toxic %q: attributes: %w", t.Name, err)
	}
	// Reject unknown types and attributes up front (toxiproxy ignores
	// unknown attributes silently).
	inst := toxics.New(&toxics.ToxicWrapper{Type: t.Type})
	if inst == nil {
		return t, nil, fmt.Errorf("compose: toxic %q: unknown type %q", t.Name, t.Type)
	}
	dec := json.NewDecoder(bytes.NewReader(attrs))
	dec.DisallowUnknownFields()
	if err := dec.Decode(inst); err != nil {
		return t, nil, fmt.Errorf("compose: toxic %q of type %s: attributes %s: %w", t.Name, t.Type, attrs, err)
	}
	return t, attrs, nil
}
