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
	proxyBook[*remoteProxy]
	api        *toxiclient.Client
	apiURL     string
	listenHost string
}

type remoteProxy struct {
	proxyEntry // listen is listenHost:port, what the harness dials
	px         *toxiclient.Proxy
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
		proxyBook:  newProxyBook[*remoteProxy](c, net.Dialer{Timeout: 2 * time.Second}),
		api:        toxiclient.NewClient(apiURL),
		apiURL:     apiURL,
		listenHost: strings.TrimSuffix(strings.TrimPrefix(listenHost, "["), "]"),
	}
	p.api.UserAgent = "seckill-harness"
	if _, err := p.api.Version(); err != nil {
		return nil, fmt.Errorf("compose: toxiproxy server at %s does not answer: %w (start it, e.g. docker compose -p seckill -f compose/docker-compose.yml up -d)", apiURL, err)
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
	rp := &remoteProxy{proxyEntry: proxyEntry{node: nodeAddr, listen: net.JoinHostPort(p.listenHost, port)}, px: px}
	p.add(rp)
	return rp, nil
}

// Dialer implements Toxics: every address but a proxy's own is dialled
// through that node's proxy on the server (created on the fly for a node
// not seen before). A node the cluster says is down (Admin fails) is
// probed directly first, so that a dead node gives "connection refused"
// rather than a connection the proxy accepts and then cuts.
func (p *RemoteProxies) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	never := func(string) bool { return false }
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return p.dial(ctx, network, addr, never, p.ensureLocked)
	}
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
	rp, ok, closed := p.lookup(nodeAddr)
	if !ok || closed {
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
	rp, ok, closed := p.lookup(nodeAddr)
	if !ok || closed {
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
	rp, ok, closed := p.lookup(nodeAddr)
	if !ok || closed {
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
