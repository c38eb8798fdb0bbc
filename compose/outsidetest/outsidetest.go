// Package outsidetest starts, for tests, a Redis Cluster "outside the
// harness": plain redis-server processes formed with
// `redis-cli --cluster create … --cluster-yes`, exactly as an operator
// would, without any code of package compose. Tests then reach it only
// through compose.ConnectExternal, as they would a staging cluster.
//
// Optionally the nodes require a password (requirepass, default user) and
// carry an ACL user, to prove that authentication works end to end.
package outsidetest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options of Start.
type Options struct {
	Masters  int // 0 means 3
	Replicas int // replicas per master; negative means none, 0 means 1
	// Password, if set, is the default user's password (requirepass, and
	// masterauth so replicas can sync).
	Password string
	// User and UserPassword, if set, add an ACL user allowed everything.
	User, UserPassword string
	// NodeTimeout is cluster-node-timeout; 0 means 2000ms.
	NodeTimeout time.Duration
	// ExtraConfig lines go into every node's redis.conf.
	ExtraConfig []string
	// TLS makes every node TLS-only (port 0, tls-port, tls-cluster and
	// tls-replication yes) with a fresh CA, a server certificate for IP
	// 127.0.0.1, and client certificates required (tls-auth-clients yes).
	TLS bool
}

// Cluster is a cluster started by Start; it is torn down when the test ends.
type Cluster struct {
	Addrs []string // client addresses, "127.0.0.1:port", in start order
	Dirs  []string
	// With Options.TLS: the CA bundle and a client certificate and key
	// signed by it (PEM files).
	CAFile, CertFile, KeyFile string
	procs                     []*exec.Cmd
	tls                       *tls.Config
	opt                       Options
	// base holds the nodes' directories. It is made before stop is
	// registered, so its removal runs after stop (t's cleanups run last
	// first): a node's directory made by t.TempDir after that was
	// removed while its node still ran, and a node writing its AOF
	// then failed the test ("unlinkat …: directory not empty").
	base string
}

// Skip skips t when redis-server or redis-cli is missing.
func Skip(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (apt-get install -y redis-server): %v", bin, err)
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts the cluster and waits until every node reports
// cluster_state:ok; everything is killed and removed at the end of t.
func Start(t testing.TB, opt Options) *Cluster {
	t.Helper()
	Skip(t)
	if opt.Masters == 0 {
		opt.Masters = 3
	}
	switch {
	case opt.Replicas == 0:
		opt.Replicas = 1
	case opt.Replicas < 0:
		opt.Replicas = 0
	}
	if opt.NodeTimeout == 0 {
		opt.NodeTimeout = 2 * time.Second
	}
	c := &Cluster{opt: opt, base: t.TempDir()}
	t.Cleanup(c.stop)
	var serverCert, serverKey string
	if opt.TLS {
		serverCert, serverKey = c.makeCerts(t)
	}
	n := opt.Masters * (1 + opt.Replicas)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		c.startNodeOnFreePorts(t, ctx, i, serverCert, serverKey)
	}
	out := c.create(t, ctx)
	c.waitClusterOK(t, ctx, n, out)
	c.waitReplicasSynced(t, ctx)
	return c
}

// startNodeOnFreePorts starts node i in a fresh directory on free ports
// and waits until it answers PING, retrying on other ports (up to five
// attempts) when one was taken before redis-server bound it.
func (c *Cluster) startNodeOnFreePorts(t testing.TB, ctx context.Context, i int, serverCert, serverKey string) {
	t.Helper()
	opt := c.opt
	dir := c.nodeDir(t)
	c.Dirs = append(c.Dirs, dir)
	c.Addrs = append(c.Addrs, "")
	c.procs = append(c.procs, nil)
	// A free port is released before redis-server binds it, and the
	// packages' tests run in parallel: another one may take it (or the
	// bus port) first. Such a node exits with "Address already in use";
	// it is started again on other ports.
	for attempt := 1; ; attempt++ {
		port, cport := freePort(t), freePort(t)
		c.Addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		c.startNode(t, i, nodeConf(opt, port, cport, dir, serverCert, serverKey, c.CAFile))
		nctx, ncancel := context.WithTimeout(ctx, 15*time.Second)
		err := c.waitPing(nctx, c.Addrs[i], opt.Password, func() bool { return strings.Contains(c.logTail(i), portTaken) })
		ncancel()
		if err == nil {
			return
		}
		tail := c.logTail(i)
		if attempt < 5 && strings.Contains(tail, portTaken) {
			c.kill(i)
			continue
		}
		t.Fatalf("node %s does not answer: %v\n%s", c.Addrs[i], err, tail)
	}
}

// create forms the cluster with redis-cli --cluster create (with the
// password and TLS files when set) and returns redis-cli's output.
func (c *Cluster) create(t testing.TB, ctx context.Context) string {
	t.Helper()
	opt := c.opt
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(opt.Replicas), "--cluster-yes")
	if opt.Password != "" {
		args = append(args, "--no-auth-warning", "-a", opt.Password)
	}
	if opt.TLS {
		args = append(args, "--tls", "--cacert", c.CAFile, "--cert", c.CertFile, "--key", c.KeyFile)
	}
	cmd := exec.CommandContext(ctx, "redis-cli", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out.String())
	}
	return out.String()
}

// waitClusterOK waits until every node reports cluster_state:ok and sees
// all n nodes and opt.Masters masters; past ctx it fails t with redis-cli's
// output (createOut).
func (c *Cluster) waitClusterOK(t testing.TB, ctx context.Context, n int, createOut string) {
	t.Helper()
	for {
		okAll := true
		for _, a := range c.Addrs {
			cl := c.client(a, c.opt.Password)
			info, err := cl.ClusterInfo(ctx).Result()
			nodes, nerr := cl.ClusterNodes(ctx).Result()
			_ = cl.Close()
			if err != nil || nerr != nil || !strings.Contains(info, "cluster_state:ok") ||
				countMasters(nodes) != c.opt.Masters || strings.Count(strings.TrimSpace(nodes), "\n")+1 != n {
				okAll = false
				break
			}
		}
		if okAll {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("cluster not ok after redis-cli --cluster create:\n%s", createOut)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitReplicasSynced waits until every replica reports
// master_link_status:up (INFO replication); past ctx it fails t.
func (c *Cluster) waitReplicasSynced(t testing.TB, ctx context.Context) {
	t.Helper()
	for _, a := range c.Addrs {
		cl := c.client(a, c.opt.Password)
		for {
			info, err := cl.Info(ctx, "replication").Result()
			if err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				break
			}
			if ctx.Err() != nil {
				_ = cl.Close()
				t.Fatalf("replica %s not in sync: %v", a, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = cl.Close()
	}
}

// AddReplicas starts perMaster new nodes for every master and attaches
// each as a replica of its master with `redis-cli --cluster add-node NEW
// EXISTING --cluster-slave --cluster-master-id ID`, as an operator does.
// It returns when redis-cli has; the other nodes learn the new replicas
// by gossip afterwards. Not with TLS.
func (c *Cluster) AddReplicas(t testing.TB, perMaster int) {
	t.Helper()
	if c.opt.TLS {
		t.Fatal("outsidetest: AddReplicas does not support TLS clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.client(c.Addrs[0], c.opt.Password)
	nodes, err := cl.ClusterNodes(ctx).Result()
	_ = cl.Close()
	if err != nil {
		t.Fatalf("CLUSTER NODES on %s: %v", c.Addrs[0], err)
	}
	var masters []string
	for _, line := range strings.Split(nodes, "\n") {
		if f := strings.Fields(line); len(f) >= 9 && strings.Contains(","+f[2]+",", ",master,") {
			masters = append(masters, f[0])
		}
	}
	for _, id := range masters {
		for k := 0; k < perMaster; k++ {
			i := len(c.Addrs)
			c.Dirs = append(c.Dirs, c.nodeDir(t))
			c.Addrs = append(c.Addrs, "")
			c.procs = append(c.procs, nil)
			port, cport := freePort(t), freePort(t)
			c.Addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			c.startNode(t, i, nodeConf(c.opt, port, cport, c.Dirs[i], "", "", ""))
			if err := c.waitPing(ctx, c.Addrs[i], c.opt.Password, nil); err != nil {
				t.Fatalf("node %s does not answer: %v\n%s", c.Addrs[i], err, c.logTail(i))
			}
			args := []string{"--cluster", "add-node", c.Addrs[i], c.Addrs[0], "--cluster-slave", "--cluster-master-id", id}
			if c.opt.Password != "" {
				args = append(args, "--no-auth-warning", "-a", c.opt.Password)
			}
			if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
				t.Fatalf("redis-cli --cluster add-node: %v\n%s", err, out)
			}
		}
	}
}

// nodeConf is the redis.conf of one node on port (cluster bus cport).
func nodeConf(opt Options, port, cport int, dir, serverCert, serverKey, caFile string) []string {
	conf := []string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"cluster-enabled yes",
		"cluster-port " + strconv.Itoa(cport),
		"cluster-config-file nodes.conf",
		"cluster-node-timeout " + strconv.FormatInt(opt.NodeTimeout.Milliseconds(), 10),
		"enable-debug-command local",
		"appendonly no",
		`save ""`,
		"dir " + dir,
		"logfile " + filepath.Join(dir, "redis.log"),
		"repl-diskless-sync yes",
		"repl-diskless-sync-delay 0",
	}
	if opt.Password != "" {
		conf = append(conf, "requirepass "+opt.Password, "masterauth "+opt.Password)
	}
	if opt.TLS {
		conf = append(conf, "port 0", "tls-port "+strconv.Itoa(port), "tls-cluster yes", "tls-replication yes",
			"tls-cert-file "+serverCert, "tls-key-file "+serverKey, "tls-ca-cert-file "+caFile, "tls-auth-clients yes")
	}
	if opt.User != "" {
		conf = append(conf, fmt.Sprintf("user %s on >%s ~* &* +@all", opt.User, opt.UserPassword))
	}
	return append(conf, opt.ExtraConfig...)
}

// startNode writes node i's redis.conf (its log starts afresh) and starts it.
func (c *Cluster) startNode(t testing.TB, i int, conf []string) {
	t.Helper()
	dir := c.Dirs[i]
	_ = os.Remove(filepath.Join(dir, "redis.log"))
	_ = os.Remove(filepath.Join(dir, "nodes.conf"))
	path := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", path)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	c.procs[i] = cmd
}

// portTaken is what redis-server logs before it exits when its port or
// cluster bus port is taken.
const portTaken = "Address already in use"

// waitPing waits until addr answers PING, ctx ends, or gaveUp (nil: never)
// reports that the node will not come up.
func (c *Cluster) waitPing(ctx context.Context, addr, password string, gaveUp func() bool) error {
	var last error
	for ctx.Err() == nil {
		if gaveUp != nil && gaveUp() {
			return fmt.Errorf("node %s gave up", addr)
		}
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			cl := c.client(addr, password)
			err = cl.Ping(ctx).Err()
			_ = cl.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%v (last: %v)", ctx.Err(), last)
}

func (c *Cluster) logTail(i int) string {
	b, _ := os.ReadFile(filepath.Join(c.Dirs[i], "redis.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// Kill SIGKILLs the process of the node at addr (what an operator's outage
// looks like) and waits for it.
func (c *Cluster) Kill(addr string) {
	for i, a := range c.Addrs {
		if a == addr {
			c.kill(i)
		}
	}
}

// kill SIGKILLs node i's process (by its PID) and reaps it.
func (c *Cluster) kill(i int) {
	if c.procs[i] != nil && c.procs[i].Process != nil {
		_ = c.procs[i].Process.Kill()
		_ = c.procs[i].Wait()
		c.procs[i] = nil
	}
}

// nodeDir makes a fresh directory for a node under c.base.
func (c *Cluster) nodeDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(c.base, "node-*")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// stop kills every process this cluster started (by PID) and reaps it.
func (c *Cluster) stop() {
	for i, p := range c.procs {
		if p == nil || p.Process == nil {
			continue
		}
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
		c.procs[i] = nil
	}
}

// countMasters counts the master lines of a CLUSTER NODES reply: every node
// has converged on the replicas once it sees exactly the intended masters.
func countMasters(nodes string) int {
	k := 0
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.Contains(","+f[2]+",", ",master,") {
			k++
		}
	}
	return k
}

func (c *Cluster) client(addr, password string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2, DisableIdentity: true, MaxRetries: -1, TLSConfig: c.tls})
}

// makeCerts writes a CA, a server certificate (IP 127.0.0.1, usable as a
// client certificate too: the nodes present it on the cluster bus) and a
// client certificate, and returns the server certificate and key files.
func (c *Cluster) makeCerts(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, "EC PRIVATE KEY", der)
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "outsidetest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	c.CAFile = write("ca.pem", "CERTIFICATE", caDER)
	issue := func(serial int64, cn string, ips []net.IP, usage []x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	sDER, sKey := issue(2, "127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	certFile, keyFile = write("server.pem", "CERTIFICATE", sDER), writeKey("server-key.pem", sKey)
	cDER, cKey := issue(3, "harness", nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	c.CertFile, c.KeyFile = write("client.pem", "CERTIFICATE", cDER), writeKey("client-key.pem", cKey)
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	c.tls = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	return certFile, keyFile
}
