package compose

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose/outsidetest"
)

const (
	extDefaultPW = "Def4ult-s3cret-pw"
	extUser      = "alice"
	extUserPW    = "Al1ce-s3cret-pw"
)

// secretsIn fails t if any of the secrets appears in any of the texts.
func secretsIn(t *testing.T, what string, texts []string, secrets ...string) {
	t.Helper()
	for _, s := range texts {
		for _, sec := range secrets {
			if sec != "" && strings.Contains(s, sec) {
				t.Errorf("%s leaks a password: %q", what, s)
			}
		}
	}
}

func TestParseClusterSpec(t *testing.T) {
	good := []struct {
		spec       string
		tls        bool
		user, pass string
		hosts      []string
	}{
		{"redis://127.0.0.1:7001", false, "", "", []string{"127.0.0.1:7001"}},
		{"redis://127.0.0.1:7001,127.0.0.1:7002/", false, "", "", []string{"127.0.0.1:7001", "127.0.0.1:7002"}},
		{"rediss://alice:p%40ss:w@db.example:6380/0", true, "alice", "p@ss:w", []string{"db.example:6380"}},
		{"redis://:only-pw@h:1", false, "", "only-pw", []string{"h:1"}},
		{"redis://bob@[::1]:7001", false, "bob", "", []string{"[::1]:7001"}},
	}
	for _, g := range good {
		s, err := parseClusterSpec(g.spec)
		if err != nil {
			t.Errorf("%s: %v", g.spec, err)
			continue
		}
		if s.tls != g.tls || s.user != g.user || s.pass != g.pass || !slices.Equal(s.hosts, g.hosts) {
			t.Errorf("%s: got tls=%v user=%q pass=%q hosts=%v", g.spec, s.tls, s.user, s.pass, s.hosts)
		}
		if s.pass != "" && strings.Contains(s.redacted, s.pass) {
			t.Errorf("%s: redacted form %q shows the password", g.spec, s.redacted)
		}
	}
	const pw = "Sup3rSecretPW"
	bad := []string{
		"http://alice:" + pw + "@h:1",
		"alice:" + pw + "@h:1",
		"redis://alice:" + pw + "@",
		"redis://alice:" + pw + "@h",
		"redis://alice:" + pw + "@h:notaport",
		"redis://alice:" + pw + "@h:1/3",
		"redis://alice:" + pw + "@h:1?tls=true",
		"redis://alice:" + pw + "%zz@h:1",
		"redis://alice:" + pw + "@h:1,,:2",
	}
	for _, b := range bad {
		_, err := parseClusterSpec(b)
		if err == nil {
			t.Errorf("%s: accepted", redactSpec(b))
			continue
		}
		secretsIn(t, "parse error", []string{err.Error()}, pw)
		if !strings.Contains(err.Error(), "redis://[user:password@]host:port") {
			t.Errorf("error does not show the expected form: %v", err)
		}
	}
}

// TestExternalCluster starts a password-protected cluster with an ACL user
// outside the harness (redis-server + redis-cli --cluster create) and
// drives it only through ConnectExternal: credential precedence, discovery,
// topology, health, admin clients, the client options, no process control,
// and that no password ever shows in output or errors.
func TestExternalCluster(t *testing.T) {
	integration(t, "redis-server")
	oc := outsidetest.Start(t, outsidetest.Options{Password: extDefaultPW, User: extUser, UserPassword: extUserPW})
	ctx := ctxT(t, 2*time.Minute)
	t.Setenv(EnvRedisUsername, "")
	t.Setenv(EnvRedisPassword, "")
	seed := "redis://" + oc.Addrs[0]
	var texts []string // everything printed, to be checked for secrets at the end
	opt := ExternalOptions{DialTimeout: time.Second, ReadyTimeout: 20 * time.Second, Logf: func(f string, a ...any) {
		s := fmt.Sprintf(f, a...)
		texts = append(texts, s)
		t.Log(s)
	}}

	// No credentials: NOAUTH, with a hint.
	_, err := ConnectExternal(ctx, seed, opt)
	if err == nil || !strings.Contains(err.Error(), "NOAUTH") || !strings.Contains(err.Error(), EnvRedisPassword) {
		t.Fatalf("no credentials: %v, want NOAUTH with a hint", err)
	}
	texts = append(texts, err.Error())
	// A wrong password: WRONGPASS, and the wrong password is not echoed.
	wrong := opt
	wrong.Password = "Wr0ng-pw-value"
	_, err = ConnectExternal(ctx, seed, wrong)
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("wrong password: %v, want WRONGPASS", err)
	}
	texts = append(texts, err.Error(), fmt.Sprintf("%v|%+v|%#v|%s|%d|%x", wrong, wrong, wrong, wrong, wrong, wrong))
	secretsIn(t, "wrong-password error", []string{err.Error()}, "Wr0ng-pw-value")
	// Unreachable seed with credentials in the URL.
	_, err = ConnectExternal(ctx, "redis://alice:"+extUserPW+"@127.0.0.1:1", opt)
	if err == nil || !strings.Contains(err.Error(), "alice:***@") {
		t.Fatalf("unreachable seed: %v", err)
	}
	texts = append(texts, err.Error())

	// Environment only (default user).
	t.Setenv(EnvRedisPassword, extDefaultPW)
	c, err := ConnectExternal(ctx, seed, opt)
	if err != nil {
		t.Fatalf("password from %s: %v", EnvRedisPassword, err)
	}
	if got := c.MigrateAuth(); !slices.Equal(got, []any{"AUTH", extDefaultPW}) {
		t.Errorf("MigrateAuth with the default user: %v", len(got))
	}
	texts = append(texts, c.Redacted())
	_ = c.Close()

	// URL userinfo wins over the environment (which now names a wrong user).
	t.Setenv(EnvRedisUsername, "mallory")
	c, err = ConnectExternal(ctx, "redis://"+extUser+":"+extUserPW+"@"+oc.Addrs[0], opt)
	if err != nil {
		t.Fatalf("ACL user from the URL: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// An explicit option wins over the URL.
	o2 := opt
	o2.Password = extUserPW
	c2, err := ConnectExternal(ctx, "redis://"+extUser+":not-the-password@"+oc.Addrs[1], o2)
	if err != nil {
		t.Fatalf("option over URL: %v", err)
	}
	texts = append(texts, c2.Redacted())
	_ = c2.Close()

	if c.Provider() != ProviderExternal || c.Owned() || HasProcessControl(c) {
		t.Errorf("provider %q owned %v process control %v", c.Provider(), c.Owned(), HasProcessControl(c))
	}
	if got := c.MigrateAuth(); !slices.Equal(got, []any{"AUTH2", extUser, extUserPW}) {
		t.Errorf("MigrateAuth with an ACL user: %d args", len(got))
	}

	// Discovery and topology.
	addrs := c.Addrs()
	if len(addrs) != 6 {
		t.Fatalf("Addrs: %v, want the 6 nodes", addrs)
	}
	for _, a := range oc.Addrs {
		if !slices.Contains(addrs, a) {
			t.Errorf("node %s not discovered (got %v)", a, addrs)
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("WaitHealthy: %v", err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var masters []Node
	for i, n := range nodes {
		if n.Role == "master" {
			masters = append(masters, n)
			if i >= 3 {
				t.Errorf("masters are not listed first: %v", addrs)
			}
		}
		if n.PID != 0 || n.Down || n.Paused || n.Dir != "" {
			t.Errorf("external node %s carries process bookkeeping: %+v", n.Addr, n)
		}
	}
	if len(masters) != 3 {
		t.Fatalf("%d masters", len(masters))
	}
	m0, err := c.MasterOfSlot(ctx, 0)
	if err != nil || m0.Addr != addrs[0] {
		t.Errorf("MasterOfSlot(0) = %s, %v; want %s", m0.Addr, err, addrs[0])
	}
	reps, err := c.ReplicasOf(ctx, m0.ID)
	if err != nil || len(reps) != 1 {
		t.Fatalf("ReplicasOf: %v %v", reps, err)
	}
	if n, ok := c.NodeByAddr(reps[0].Addr); !ok || n.Role != "replica" || n.MasterID != m0.ID {
		t.Errorf("NodeByAddr(%s) = %+v %v", reps[0].Addr, n, ok)
	}
	if _, ok := c.NodeByAddr("127.0.0.1:1"); ok {
		t.Error("NodeByAddr of a stranger: ok")
	}
	if n, err := c.NodeByID(ctx, m0.ID); err != nil || n.Addr != m0.Addr {
		t.Errorf("NodeByID: %v %v", n, err)
	}
	owners, err := c.SlotOwners(ctx, 0)
	if err != nil || len(owners) != 6 {
		t.Fatalf("SlotOwners: %v %v", owners, err)
	}
	if err := c.WaitSlotOwner(ctx, 0, m0.ID); err != nil {
		t.Error(err)
	}
	if open, err := c.OpenSlots(ctx); err != nil || len(open) != 0 {
		t.Errorf("OpenSlots: %v %v", open, err)
	}

	// Admin clients carry the credentials.
	adm, err := c.Admin(reps[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	if who, err := adm.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != extUser {
		t.Errorf("admin client is %q (%v), want %s", who, err, extUser)
	}
	if _, err := c.Admin("127.0.0.1:1"); err == nil {
		t.Error("Admin of a stranger: no error")
	}

	// The CLI's client from ClientOptions.
	co := c.ClientOptions()
	if co.Username != extUser || co.Password != extUserPW || len(co.Addrs) != 6 || co.TLSConfig != nil {
		t.Errorf("ClientOptions: user %q, %d addrs, tls %v", co.Username, len(co.Addrs), co.TLSConfig != nil)
	}
	rdb := redis.NewClusterClient(co)
	defer rdb.Close()
	for i := 0; i < 20; i++ {
		k := fmt.Sprintf("seckill-harness:ext-test:{%d}", i)
		if err := rdb.Set(ctx, k, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET through ClientOptions: %v", err)
		}
		if v, err := rdb.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET %s = %d, %v", k, v, err)
		}
		_ = rdb.Del(ctx, k).Err()
	}

	// No process control: the optional interface is absent, and the error
	// process-level faults wrap names the fix.
	if pc, ok := ProcessControl(c); ok || pc != nil {
		t.Errorf("an external cluster offers process control: %v", pc)
	}
	if !strings.Contains(ErrNoProcessControl.Error(), "--cluster local") {
		t.Errorf("ErrNoProcessControl does not name --cluster local: %v", ErrNoProcessControl)
	}

	// Printing never shows the password.
	texts = append(texts, c.Redacted(), c.String(), fmt.Sprint(c),
		fmt.Sprintf("%v|%+v|%#v|%s|%q|%d|%x", c, c, c, c, c, c, c),
		fmt.Sprintf("%v|%+v|%#v|%d", o2, o2, o2, o2))
	if want := "redis://alice:***@" + oc.Addrs[0]; c.Redacted() != want {
		t.Errorf("Redacted = %q, want %q", c.Redacted(), want)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Admin(m0.Addr); !errors.Is(err, ErrClosed) {
		t.Errorf("Admin after Close: %v", err)
	}
	if _, err := c.Nodes(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Nodes after Close: %v", err)
	}
	secretsIn(t, "output", texts, extDefaultPW, extUserPW)
	// The outside cluster is still there and untouched.
	if _, err := outsideInfo(ctx, oc.Addrs[0]); err != nil {
		t.Errorf("outside cluster after Close: %v", err)
	}
}

func outsideInfo(ctx context.Context, addr string) (string, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, Password: extDefaultPW, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer cl.Close()
	return cl.ClusterInfo(ctx).Result()
}

// TestExternalClusterDeadNode: a node of an external cluster dies (its
// operator's outage, not the harness's doing): once the cluster itself
// flags it failed, WaitHealthy no longer waits for it, and the topology
// queries keep working.
func TestExternalClusterDeadNode(t *testing.T) {
	integration(t, "redis-server")
	oc := outsidetest.Start(t, outsidetest.Options{Password: extDefaultPW})
	ctx := ctxT(t, time.Minute)
	c, err := ConnectExternal(ctx, "redis://:"+extDefaultPW+"@"+oc.Addrs[0], ExternalOptions{DialTimeout: 300 * time.Millisecond, Logf: tlogf(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.MasterOfSlot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	reps, _ := c.ReplicasOf(ctx, m.ID)
	if len(reps) != 1 {
		t.Fatalf("replicas of %s: %v", m.Addr, reps)
	}
	oc.Kill(reps[0].Addr)
	t0 := time.Now()
	hctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := c.WaitHealthy(hctx); err != nil {
		t.Fatalf("WaitHealthy with a dead replica the cluster flagged: %v", err)
	}
	n, ok := c.NodeByAddr(reps[0].Addr)
	if !ok || !slices.Contains(n.Flags, "fail") {
		t.Errorf("dead replica: %+v", n)
	}
	t.Logf("healthy again (dead replica flagged fail) after %v", time.Since(t0).Round(time.Millisecond))
	if _, err := c.Nodes(ctx); err != nil {
		t.Error(err)
	}
}

// TestExternalClusterTLS: a TLS-only cluster started outside the harness
// (tls-port, tls-cluster, tls-replication, client certificates required),
// reached with rediss:// and the CA / client certificate options: discovery,
// health, the CLI client from ClientOptions, and the same client through the
// embedded proxies with ProxiedDialer doing TLS over the proxied TCP
// connection. Wrong setups fail with a hint instead of hanging.
func TestExternalClusterTLS(t *testing.T) {
	integration(t, "redis-server")
	oc := outsidetest.Start(t, outsidetest.Options{TLS: true})
	ctx := ctxT(t, 2*time.Minute)
	t.Setenv(EnvRedisUsername, "")
	t.Setenv(EnvRedisPassword, "")
	seed := oc.Addrs[0]
	good := ExternalOptions{CAFile: oc.CAFile, CertFile: oc.CertFile, KeyFile: oc.KeyFile, DialTimeout: time.Second, Logf: tlogf(t)}

	if _, err := ConnectExternal(ctx, "redis://"+seed, ExternalOptions{CAFile: oc.CAFile}); err == nil || !strings.Contains(err.Error(), "rediss://") {
		t.Errorf("TLS options with redis://: %v", err)
	}
	if _, err := ConnectExternal(ctx, "rediss://"+seed, ExternalOptions{DialTimeout: time.Second}); err == nil || !strings.Contains(err.Error(), "TLS handshake failed") {
		t.Errorf("without the CA: %v, want a TLS hint", err)
	}
	if _, err := ConnectExternal(ctx, "rediss://"+seed, ExternalOptions{CAFile: oc.CAFile, DialTimeout: time.Second}); err == nil {
		t.Error("without the client certificate: connected")
	}
	if _, err := ConnectExternal(ctx, "rediss://"+seed, ExternalOptions{CertFile: oc.CertFile}); err == nil {
		t.Error("a certificate without its key: accepted")
	}
	t0 := time.Now()
	if _, err := ConnectExternal(ctx, "redis://"+seed, ExternalOptions{DialTimeout: time.Second}); err == nil {
		t.Error("plain TCP to a TLS port: connected")
	} else if time.Since(t0) > 10*time.Second {
		t.Errorf("plain TCP to a TLS port took %v to fail", time.Since(t0))
	}

	c, err := ConnectExternal(ctx, "rediss://"+seed, good)
	if err != nil {
		t.Fatalf("rediss:// with CA and client certificate: %v", err)
	}
	defer c.Close()
	if !c.TLS() || !strings.HasPrefix(c.Redacted(), "rediss://") {
		t.Errorf("TLS %v, Redacted %q", c.TLS(), c.Redacted())
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.Addrs()) != 6 {
		t.Fatalf("Addrs %v", c.Addrs())
	}
	co := c.ClientOptions()
	if co.TLSConfig == nil || len(co.TLSConfig.Certificates) != 1 || co.TLSConfig.RootCAs == nil {
		t.Fatalf("ClientOptions TLS: %+v", co.TLSConfig)
	}
	rdb := redis.NewClusterClient(co)
	defer rdb.Close()
	px, err := NewProxies(c)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	po := c.ClientOptions()
	po.Dialer = ProxiedDialer(px, po.TLSConfig)
	prdb := redis.NewClusterClient(po)
	defer prdb.Close()
	for i := 0; i < 10; i++ {
		k := fmt.Sprintf("seckill-harness:tls-test:{%d}", i)
		if err := rdb.Set(ctx, k, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET over TLS: %v", err)
		}
		if v, err := prdb.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET over TLS through the proxies: %d %v", v, err)
		}
		_ = rdb.Del(ctx, k).Err()
	}
	n := 0
	for _, a := range c.Addrs() {
		k, _ := px.Stats(a)
		n += k
	}
	if n == 0 {
		t.Error("the proxied client opened no connection through the proxies")
	}
	// InsecureSkipVerify (tests only): no CA, still a client certificate.
	ins := ExternalOptions{CertFile: oc.CertFile, KeyFile: oc.KeyFile, InsecureSkipVerify: true, DialTimeout: time.Second}
	c2, err := ConnectExternal(ctx, "rediss://"+seed, ins)
	if err != nil {
		t.Fatalf("InsecureSkipVerify: %v", err)
	}
	_ = c2.Close()
}

// TestOpenCluster: the --cluster values dispatch to the right kind; a
// LocalCluster reached as "redis://…" is an external cluster to the
// harness (not owned, no process control).
func TestOpenCluster(t *testing.T) {
	integration(t, "redis-server")
	ctx := ctxT(t, time.Minute)
	if _, err := OpenCluster(ctx, "kubernetes://x", Options{}, DockerOptions{}, ExternalOptions{}); err == nil ||
		!strings.Contains(err.Error(), "want local (the default), docker, or redis://") {
		t.Errorf("unknown --cluster: %v", err)
	}
	if _, err := OpenCluster(ctx, "mysql://u:Secr3tPW@h:1", Options{}, DockerOptions{}, ExternalOptions{}); err == nil || strings.Contains(err.Error(), "Secr3tPW") {
		t.Errorf("unknown scheme with a password: %v", err)
	}
	lc := sharedCluster(t)
	c, err := OpenCluster(ctx, "redis://"+strings.Join(lc.Addrs()[:2], ","), Options{}, DockerOptions{}, ExternalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Provider() != ProviderExternal || c.Owned() || HasProcessControl(c) || len(c.Addrs()) != len(lc.Addrs()) {
		t.Errorf("external view of the local cluster: %s owned=%v control=%v addrs=%v", c.Provider(), c.Owned(), HasProcessControl(c), c.Addrs())
	}
	tx, err := OpenToxics("", c)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if _, ok := tx.(*Proxies); !ok || len(tx.NodeAddrs()) != len(lc.Addrs()) {
		t.Errorf("OpenToxics(\"\") = %T with %v", tx, tx.NodeAddrs())
	}
	url := startToxiproxyServer(t)
	rt, err := OpenToxics(url, c)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, ok := rt.(*RemoteProxies); !ok {
		t.Errorf("OpenToxics(url) = %T", rt)
	}
	// Closing the external view leaves the local cluster running.
	_ = c.Close()
	if err := lc.WaitHealthy(ctx); err != nil {
		t.Error(err)
	}
}
