package compose

import (
	"context"
	"crypto/tls"
	"net"
)

// Toxics is what faults use of the toxiproxy layer in front of the nodes,
// whether it is embedded in the harness ([Proxies]) or a toxiproxy server
// driven over its HTTP API ([RemoteProxies]). Nodes are named by their real
// addresses (as the cluster announces them); each has one proxy.
type Toxics interface {
	// Dialer maps a node's real address to its proxy, for go-redis
	// (ClusterOptions.Dialer). It does plain TCP: with TLS wrap it with
	// ProxiedDialer.
	Dialer() func(ctx context.Context, network, addr string) (net.Conn, error)
	// ListenAddr is the address the harness dials to reach nodeAddr's proxy.
	ListenAddr(nodeAddr string) (string, bool)
	// NodeAddrs lists the node addresses that have a proxy, sorted.
	NodeAddrs() []string
	// AddToxic adds a toxic to nodeAddr's proxy (unknown types and
	// attributes are rejected).
	AddToxic(nodeAddr string, t Toxic) error
	// RemoveToxic removes the named toxic; a missing one is not an error.
	RemoveToxic(nodeAddr, name string) error
	// ResetToxics removes every toxic of nodeAddr's proxy.
	ResetToxics(nodeAddr string) error
	// ToxicNames lists the toxics on nodeAddr's proxy, sorted.
	ToxicNames(nodeAddr string) []string
	// Disable makes nodeAddr unreachable through its proxy (listener closed,
	// connections cut); Enable undoes it on the same address. Idempotent.
	Disable(nodeAddr string) error
	Enable(nodeAddr string) error
	// Disabled reports whether nodeAddr's proxy is disabled.
	Disabled(nodeAddr string) bool
	// Stats counts the harness's open connections through nodeAddr's proxy.
	Stats(nodeAddr string) (connections int, err error)
	// Close removes the proxies. Idempotent.
	Close() error
}

// ToxicReplacer is the optional ability of a Toxics to drop a proxy's
// toxics by replacing the proxy with a fresh one on the same address
// (closing its connections), which cannot hang on dying connections the
// way removing a toxic can (see Proxies.Replace).
type ToxicReplacer interface {
	Replace(nodeAddr string) error
}

var (
	_ ToxicReplacer = (*Proxies)(nil)
	_ Toxics        = (*Proxies)(nil)
	_ Toxics        = (*RemoteProxies)(nil)
)

// ProxiedDialer is t.Dialer() with TLS on top when tlsConf is not nil: the
// TCP connection goes through the node's proxy (toxiproxy only sees bytes),
// the TLS handshake is made with the real node, verified against the node's
// own host name unless tlsConf.ServerName is set. go-redis does not apply
// ClusterOptions.TLSConfig when a custom Dialer is set, so a TLS cluster
// behind proxies needs this.
func ProxiedDialer(t Toxics, tlsConf *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := t.Dialer()
	if tlsConf == nil {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := tlsConf.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return tc, nil
	}
}
