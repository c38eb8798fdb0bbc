package compose

// ExternalCluster: a Redis Cluster the harness did not create (staging, a
// docker compose stack, a managed service), reached by a redis:// or
// rediss:// spec. The harness never starts, stops or signals its nodes and
// never assumes it may change or flush it: Owned() is false.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/boundedread"
)

// Environment variables ConnectExternal reads credentials from.
const (
	EnvRedisUsername = "SECKILL_REDIS_USERNAME"
	EnvRedisPassword = "SECKILL_REDIS_PASSWORD"
)

// ExternalOptions configures ConnectExternal.
//
// Credentials: the user name and the password are resolved independently,
// each from the first non-empty of (1) the field here (a CLI flag),
// (2) the spec's userinfo (redis://user:pass@…), (3) the environment
// (SECKILL_REDIS_USERNAME, SECKILL_REDIS_PASSWORD). So the URL wins over the
// environment, and an explicit option wins over both; a secret can stay
// out of the URL (and out of `ps`) with redis://alice@host:port plus
// SECKILL_REDIS_PASSWORD. With a password and no user name, AUTH <password>
// (the default user) is used.
//
// Printing ExternalOptions (any fmt verb) never shows the password.
type ExternalOptions struct {
	Username string
	Password string

	// TLS (only with a rediss:// spec). CAFile: PEM bundle of the CAs that
	// signed the nodes' certificates (default: the system roots).
	// CertFile/KeyFile: a client certificate (both or neither).
	// ServerName overrides the name verified in the nodes' certificates
	// (default: the host of each node's address, an IP SAN for IPs).
	CAFile, CertFile, KeyFile string
	ServerName                string
	InsecureSkipVerify        bool

	// DialTimeout of the admin clients and of ClientOptions; 0 means 2s.
	DialTimeout time.Duration
	// ReadyTimeout bounds WaitHealthy and WaitSlotOwner when their ctx has
	// no deadline; 0 means 30s.
	ReadyTimeout time.Duration
	// Logf, if set, receives progress messages.
	Logf func(format string, args ...any)
}

// Format prints the options with the password redacted, whatever the verb.
func (o ExternalOptions) Format(f fmt.State, verb rune) {
	pw := ""
	if o.Password != "" {
		pw = "***"
	}
	fmt.Fprintf(f, "ExternalOptions{Username:%q Password:%q CAFile:%q CertFile:%q KeyFile:%q ServerName:%q InsecureSkipVerify:%t DialTimeout:%s}",
		o.Username, pw, o.CAFile, o.CertFile, o.KeyFile, o.ServerName, o.InsecureSkipVerify, o.DialTimeout)
}

// clusterSpec is a parsed redis:// or rediss:// spec.
type clusterSpec struct {
	tls      bool
	user     string
	pass     string
	hasUser  bool
	hasPass  bool
	hosts    []string
	redacted string
}

// redactSpec hides everything before the last '@' (the userinfo) of a raw
// spec that could not be parsed.
func redactSpec(raw string) string {
	i := strings.LastIndexByte(raw, '@')
	if i < 0 {
		return raw
	}
	scheme := ""
	if j := strings.Index(raw[:i], "://"); j >= 0 {
		scheme = raw[:j+3]
	}
	return scheme + "***@" + raw[i+1:]
}

// parseClusterSpec reads redis://[user[:pass]@]host:port[,host:port…][/0]
// (rediss:// for TLS). Errors never include the userinfo.
func parseClusterSpec(raw string) (clusterSpec, error) {
	var s clusterSpec
	bad := func(format string, args ...any) (clusterSpec, error) {
		return clusterSpec{}, fmt.Errorf("compose: cluster spec %q: %s (want redis://[user:password@]host:port[,host:port...] or rediss://... for TLS)",
			redactSpec(raw), fmt.Sprintf(format, args...))
	}
	rest, ok := strings.CutPrefix(raw, "redis://")
	if !ok {
		if rest, ok = strings.CutPrefix(raw, "rediss://"); !ok {
			return bad("unknown scheme")
		}
		s.tls = true
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		userinfo := rest[:i]
		rest = rest[i+1:]
		u, p, hasP := strings.Cut(userinfo, ":")
		var err error
		if s.user, err = url.PathUnescape(u); err != nil {
			return bad("bad escape in the user name")
		}
		if hasP {
			if s.pass, err = url.PathUnescape(p); err != nil {
				return bad("bad escape in the password")
			}
		}
		s.hasUser, s.hasPass = s.user != "", s.pass != ""
	}
	if strings.ContainsAny(rest, "?#") {
		return bad("query parameters are not supported: use the options (TLS files, timeouts) instead")
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		if db := rest[i+1:]; db != "" && db != "0" {
			return bad("database %q: a Redis Cluster only has database 0", db)
		}
		rest = rest[:i]
	}
	for _, h := range strings.Split(rest, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		host, _, err := splitHostPort(h)
		if err != nil || host == "" {
			return bad("%q is not host:port", h)
		}
		s.hosts = append(s.hosts, h)
	}
	if len(s.hosts) == 0 {
		return bad("no host:port")
	}
	scheme := "redis://"
	if s.tls {
		scheme = "rediss://"
	}
	s.redacted = scheme + strings.Join(s.hosts, ",")
	return s, nil
}

// ExternalCluster is a Redis Cluster the harness did not start. It
// implements Cluster, with Owned() false, and not ProcessController: the
// harness cannot signal someone else's node processes. Printing it
// (any fmt verb) shows Redacted().
type ExternalCluster struct {
	*netCluster
	spec     clusterSpec
	user     string
	hasPass  bool
	tlsConf  *tls.Config
	dialTime time.Duration
}

// ConnectExternal connects to the cluster named by spec
// (redis://[user:pass@]host:port[,host:port...], rediss:// for TLS),
// discovers every node with CLUSTER NODES from the first seed that answers,
// and checks that each node the cluster announces (and does not itself flag
// failed) answers PING from here. It does not require the cluster to be
// healthy: call WaitHealthy for that. Errors and logs never contain the
// password.
func ConnectExternal(ctx context.Context, spec string, opt ExternalOptions) (*ExternalCluster, error) {
	ps, err := parseClusterSpec(spec)
	if err != nil {
		return nil, err
	}
	user := firstNonEmpty(opt.Username, ps.user, os.Getenv(EnvRedisUsername))
	pass := firstNonEmpty(opt.Password, ps.pass, os.Getenv(EnvRedisPassword))
	tlsConf, err := opt.tlsConfig(ps.tls)
	if err != nil {
		return nil, err
	}
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = 2 * time.Second
	}
	base := redis.Options{Username: user, Password: pass, TLSConfig: tlsConf, DialTimeout: opt.DialTimeout}
	c := &ExternalCluster{
		netCluster: newNetCluster(ProviderExternal, base, opt.ReadyTimeout, true, opt.Logf, nil),
		spec:       ps, user: user, hasPass: pass != "", tlsConf: tlsConf, dialTime: opt.DialTimeout,
	}
	if err := c.connect(ctx); err != nil {
		_ = c.netCluster.close()
		return nil, fmt.Errorf("compose: connecting to %s: %w: start the cluster, or give --cluster the address of one that answers (--cluster local: the harness starts its own)", c.Redacted(), err)
	}
	return c, nil
}

func (c *ExternalCluster) connect(ctx context.Context) error {
	if err := c.discover(ctx, c.spec.hosts); err != nil {
		return err
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range nodes {
		if n.Addr == "" || strings.HasPrefix(n.Addr, ":") || n.hasAnyFlag("fail", "noaddr", "handshake") {
			continue
		}
		cl, err := c.Admin(n.Addr)
		if err == nil {
			_, err = call(ctx, cl, func(ctx context.Context, cl *redis.Client) (string, error) { return cl.Ping(ctx).Result() })
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s (%s, announced by the cluster) does not answer from here: %w "+
				"(the harness reaches every node at the address the cluster announces: check cluster-announce-ip/port, NAT and firewalls)",
				n.Addr, n.Role, explainConnErr(err)))
		}
	}
	return errors.Join(errs...)
}

func (n Node) hasAnyFlag(flags ...string) bool {
	for _, f := range n.Flags {
		for _, g := range flags {
			if f == g {
				return true
			}
		}
	}
	return false
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// tlsConfig builds the TLS configuration; nil without TLS.
func (o ExternalOptions) tlsConfig(useTLS bool) (*tls.Config, error) {
	if !useTLS {
		if o.CAFile != "" || o.CertFile != "" || o.KeyFile != "" || o.InsecureSkipVerify || o.ServerName != "" {
			return nil, errors.New("compose: TLS options (CA file, client certificate, server name, insecure) need a rediss:// cluster spec")
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName, InsecureSkipVerify: o.InsecureSkipVerify}
	if o.CAFile != "" {
		pem, err := boundedread.File(o.CAFile, boundedread.MiB, "--tls-ca", "give a PEM file of CA certificates")
		if err != nil {
			return nil, fmt.Errorf("compose: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("compose: TLS CA file %s holds no PEM certificate", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("compose: a TLS client certificate needs both the certificate file and the key file")
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("compose: TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Provider implements Cluster: "external".
func (c *ExternalCluster) Provider() string { return ProviderExternal }

// Owned implements Cluster: false, the harness did not create this cluster.
func (c *ExternalCluster) Owned() bool { return false }

// Close implements Cluster: it closes the admin clients only; the cluster
// itself is left exactly as it is. Idempotent.
func (c *ExternalCluster) Close() error {
	if c == nil {
		return nil
	}
	return c.netCluster.close()
}

// ClientOptions returns fresh go-redis cluster options for this cluster:
// every known node as a seed, the credentials, the TLS configuration and the
// dial timeout. The CLI adds its own hardening (pool size, timeouts,
// hooks). With proxies in front (a custom Dialer), TLS must be done by the
// dialer: use ProxiedDialer(proxies, opt.TLSConfig).
func (c *ExternalCluster) ClientOptions() *redis.ClusterOptions {
	var tc *tls.Config
	if c.tlsConf != nil {
		tc = c.tlsConf.Clone()
	}
	return &redis.ClusterOptions{
		Addrs:       c.Addrs(),
		Username:    c.base.Username,
		Password:    c.base.Password,
		TLSConfig:   tc,
		DialTimeout: c.dialTime,
	}
}

// MigrateAuth implements MigrateAuther: AUTH2 user pass, AUTH pass, or nil.
func (c *ExternalCluster) MigrateAuth() []any {
	if c.base.Password == "" {
		return nil
	}
	if c.base.Username != "" && c.base.Username != "default" {
		return []any{"AUTH2", c.base.Username, c.base.Password}
	}
	return []any{"AUTH", c.base.Password}
}

// TLS reports whether the cluster is reached over TLS.
func (c *ExternalCluster) TLS() bool { return c.tlsConf != nil }

// Redacted renders the cluster for logs and reports: scheme, user name,
// "***" in place of any password, and the seed addresses, e.g.
// "rediss://alice:***@10.0.0.5:7001,10.0.0.6:7001".
func (c *ExternalCluster) Redacted() string {
	if c == nil {
		return "<nil>"
	}
	scheme, hosts, _ := strings.Cut(c.spec.redacted, "://")
	userinfo := ""
	switch {
	case c.user != "" && c.hasPass:
		userinfo = url.PathEscape(c.user) + ":***@"
	case c.user != "":
		userinfo = url.PathEscape(c.user) + "@"
	case c.hasPass:
		userinfo = ":***@"
	}
	return scheme + "://" + userinfo + hosts
}

// String implements fmt.Stringer: Redacted().
func (c *ExternalCluster) String() string { return c.Redacted() }

// GoString implements fmt.GoStringer: Redacted() (so %#v shows no secret).
func (c *ExternalCluster) GoString() string { return c.Redacted() }

// Format implements fmt.Formatter: Redacted() for every verb.
func (c *ExternalCluster) Format(f fmt.State, verb rune) { _, _ = io.WriteString(f, c.Redacted()) }
