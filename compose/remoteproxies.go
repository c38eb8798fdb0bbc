package compose

// RemoteProxies: the Toxics of an existing toxiproxy server (a container of
// the docker compose stack, a CI service), driven over its HTTP API with
// the v2 client. One proxy per node is created on the server; the Dialer
// maps node addresses to them.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// RemoteProxies drives a toxiproxy server. It implements Toxics. All
// methods are safe for concurrent use.
//
// Proxies are named "seckill-<host>_<port>" after the node they front; a
// proxy of that name left on the server by an earlier run is replaced, so
// one toxiproxy server serves one harness run at a time. Close deletes the
// proxies this value created (and nothing else on the server).
type RemoteProxies struct {
	api        *toxiclient.Client
	apiURL     string
	cluster    Cluster
	listenHost string
	dialer     net.Dialer

	mu       sync.Mutex
	byNode   map[string]*remoteProxy
	byListen map[string]string // dial address → node address
	closed   bool
}

type remoteProxy struct {
	px       *toxiclient.Proxy
	node     string
	dial     string // listenHost:port, what the harness dials
	disabled bool   // guarded by RemoteProxies.mu
	conns    atomic.Int64
}

// NewRemoteProxies connects to the toxiproxy server whose HTTP API is at
// apiURL (e.g. "http://127.0.0.1:8474") and creates one proxy per node of
// c, upstream the node's address as the cluster announces it (the server
// must reach it), listening on listenHost:<a port the server picks>.
// listenHost is both where the server binds and where the harness dials:
// "" means 127.0.0.1 (a server on this host, e.g. with host networking).
func NewRemoteProxies(apiURL string, c Cluster, listenHost string) (*RemoteProxies, error) {
	if isNilCluster(c) {
		c = nil
	}
	if listenHost == "" {
		listenHost = "127.0.0.1"
	}
	if strings.Contains(listenHost, ":") && !strings.HasPrefix(listenHost, "[") && net.ParseIP(listenHost) == nil {
		return nil, fmt.Errorf("compose: toxiproxy listen host %q: want a host name or IP without a port", listenHost)
	}
	p := &RemoteProxies{
		api:        toxiclient.NewClient(apiURL),
		apiURL:     apiURL,
		cluster:    c,
		listenHost: strings.TrimSuffix(strings.TrimPrefix(listenHost, "["), "]"),
		dialer:     net.Dialer{Timeout: 2 * time.Second},
		byNode:     map[string]*remoteProxy{},
		byListen:   map[string]string{},
	}
	p.api.UserAgent = "seckill-harness"
	if _, err := p.api.Version(); err != nil {
		return nil, fmt.Errorf("compose: toxiproxy server at %s does not answer: %w (start it, e.g. docker compose -f compose/docker-compose.yml up -d)", apiURL, err)
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

// proxyName is the server-side name of nodeAddr's proxy.
func proxyName(nodeAddr string) string {
	r := strings.NewReplacer(":", "_", "[", "", "]", "", "/", "_")
	return "seckill-" + r.Replace(nodeAddr)
}

func apiStatus(err error) int {
	var ae *toxiclient.ApiError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

func (p *RemoteProxies) ensure(nodeAddr string) (*remoteProxy, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ensureLocked(nodeAddr)
}

func (p *RemoteProxies) ensureLocked(nodeAddr string) (*remoteProxy, error) {
	if p.closed {
		return nil, ErrProxiesClosed
	}
	if rp, ok := p.byNode[nodeAddr]; ok {
		return rp, nil
	}
	if _, _, err := splitHostPort(nodeAddr); err != nil {
		return nil, fmt.Errorf("compose: proxy for %q: %w", nodeAddr, err)
	}
	name := proxyName(nodeAddr)
	listen := net.JoinHostPort(p.listenHost, "0")
	px, err := p.api.CreateProxy(name, listen, nodeAddr)
	if err != nil && apiStatus(err) == 409 { // left over from an earlier run
		if old, gerr := p.api.Proxy(name); gerr == nil {
			_ = old.Delete()
		}
		px, err = p.api.CreateProxy(name, listen, nodeAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("compose: creating toxiproxy proxy %s (%s → %s) on %s: %w", name, listen, nodeAddr, p.apiURL, err)
	}
	_, port, err := net.SplitHostPort(px.Listen)
	if err != nil {
		_ = px.Delete()
		return nil, fmt.Errorf("compose: toxiproxy proxy %s listens on %q: %w", name, px.Listen, err)
	}
	rp := &remoteProxy{px: px, node: nodeAddr, dial: net.JoinHostPort(p.listenHost, port)}
	p.byNode[nodeAddr] = rp
	p.byListen[rp.dial] = nodeAddr
	return rp, nil
}

func (p *RemoteProxies) lookup(nodeAddr string) (*remoteProxy, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byNode[nodeAddr], p.closed
}

// Dialer implements Toxics: every address but a proxy's own is dialled
// through that node's proxy on the server (created on the fly for a node
// not seen before). A node the cluster says is down (Admin fails) is
// probed directly first, so that a dead node gives "connection refused"
// rather than a connection the proxy accepts and then cuts.
func (p *RemoteProxies) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, fmt.Errorf("dial %s: %w", addr, ErrProxiesClosed)
		}
		if _, isProxy := p.byListen[addr]; isProxy {
			p.mu.Unlock()
			return p.dialer.DialContext(ctx, network, addr)
		}
		rp, err := p.ensureLocked(addr)
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if p.cluster != nil {
			if _, aerr := p.cluster.Admin(addr); aerr != nil {
				c, derr := p.dialer.DialContext(ctx, network, addr)
				if derr != nil {
					return nil, derr
				}
				_ = c.Close()
			}
		}
		conn, err := p.dialer.DialContext(ctx, network, rp.dial)
		if err != nil {
			return nil, err
		}
		rp.conns.Add(1)
		return &trackedConn{Conn: conn, counter: &rp.conns}, nil
	}
}

// ListenAddr implements Toxics.
func (p *RemoteProxies) ListenAddr(nodeAddr string) (string, bool) {
	rp, _ := p.lookup(nodeAddr)
	if rp == nil {
		return "", false
	}
	return rp.dial, true
}

// NodeAddrs implements Toxics.
func (p *RemoteProxies) NodeAddrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.byNode))
	for a := range p.byNode {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ProxyName returns the server-side name of nodeAddr's proxy.
func (p *RemoteProxies) ProxyName(nodeAddr string) string { return proxyName(nodeAddr) }

// AddToxic implements Toxics.
func (p *RemoteProxies) AddToxic(nodeAddr string, t Toxic) error {
	rp, err := p.ensure(nodeAddr)
	if err != nil {
		return err
	}
	t, _, err = normalizeToxic(t)
	if err != nil {
		return err
	}
	if t.Name == "" {
		t.Name = t.Type + "_" + t.Stream
	}
	if _, err := rp.px.AddToxic(t.Name, t.Type, t.Stream, t.Toxicity, toxiclient.Attributes(t.Attributes)); err != nil {
		return fmt.Errorf("compose: adding toxic %q (%s %s) to the proxy of %s on %s: %w", t.Name, t.Type, t.Stream, nodeAddr, p.apiURL, err)
	}
	return nil
}

// RemoveToxic implements Toxics: a missing toxic or proxy, or closed
// proxies, yield nil.
func (p *RemoteProxies) RemoveToxic(nodeAddr, name string) error {
	rp, closed := p.lookup(nodeAddr)
	if rp == nil || closed {
		return nil
	}
	if err := rp.px.RemoveToxic(name); err != nil && apiStatus(err) != 404 {
		return fmt.Errorf("compose: removing toxic %q from the proxy of %s on %s: %w", name, nodeAddr, p.apiURL, err)
	}
	return nil
}

// ResetToxics implements Toxics: it removes every toxic of this node's
// proxy only (the server's /reset would touch every proxy on it).
func (p *RemoteProxies) ResetToxics(nodeAddr string) error {
	rp, closed := p.lookup(nodeAddr)
	if rp == nil || closed {
		return nil
	}
	ts, err := rp.px.Toxics()
	if err != nil {
		return fmt.Errorf("compose: listing the toxics of the proxy of %s: %w", nodeAddr, err)
	}
	var errs []error
	for _, t := range ts {
		if err := rp.px.RemoveToxic(t.Name); err != nil && apiStatus(err) != 404 {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ToxicNames implements Toxics (nil when the server does not answer).
func (p *RemoteProxies) ToxicNames(nodeAddr string) []string {
	rp, closed := p.lookup(nodeAddr)
	if rp == nil || closed {
		return nil
	}
	ts, err := rp.px.Toxics()
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// Disable implements Toxics: the server closes the proxy's listener and
// every connection through it. Idempotent.
func (p *RemoteProxies) Disable(nodeAddr string) error {
	rp, err := p.ensure(nodeAddr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A fresh handle: Save rewrites the proxy value it is called on, and
	// rp.px is read concurrently by the toxic calls.
	h, err := p.api.Proxy(rp.px.Name)
	if err == nil {
		err = h.Disable()
	}
	if err != nil {
		return fmt.Errorf("compose: disabling the proxy of %s on %s: %w", nodeAddr, p.apiURL, err)
	}
	rp.disabled = true
	return nil
}

// Enable implements Toxics: the proxy listens again on the same port.
// Idempotent; nil for a node without a proxy or after Close.
func (p *RemoteProxies) Enable(nodeAddr string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	rp := p.byNode[nodeAddr]
	if rp == nil || p.closed {
		return nil
	}
	h, err := p.api.Proxy(rp.px.Name)
	if err == nil {
		err = h.Enable()
	}
	if err != nil {
		return fmt.Errorf("compose: re-enabling the proxy of %s on %s: %w", nodeAddr, p.apiURL, err)
	}
	rp.disabled = false
	return nil
}

// Disabled implements Toxics.
func (p *RemoteProxies) Disabled(nodeAddr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	rp := p.byNode[nodeAddr]
	return rp != nil && rp.disabled
}

// Stats implements Toxics: the harness's open connections through
// nodeAddr's proxy (counted by the Dialer).
func (p *RemoteProxies) Stats(nodeAddr string) (int, error) {
	rp, _ := p.lookup(nodeAddr)
	if rp == nil {
		return 0, fmt.Errorf("compose: no proxy for %s", nodeAddr)
	}
	return int(rp.conns.Load()), nil
}

// Close deletes the proxies this value created on the server (which closes
// their connections). Idempotent.
func (p *RemoteProxies) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for addr, rp := range p.byNode {
		if err := rp.px.Delete(); err != nil && apiStatus(err) != 404 && !strings.Contains(err.Error(), "404") {
			errs = append(errs, fmt.Errorf("compose: deleting the proxy of %s: %w", addr, err))
		}
	}
	return errors.Join(errs...)
}

// String describes the proxies for logs.
func (p *RemoteProxies) String() string {
	return "toxiproxy server " + p.apiURL + " (" + strconv.Itoa(len(p.NodeAddrs())) + " proxies, listening on " + p.listenHost + ")"
}
