package compose

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	zlog "github.com/rs/zerolog/log"
)

// startToxiproxyServer runs a real toxiproxy HTTP API server in-process on
// a free loopback port (the same server code as the toxiproxy binary and
// the ghcr.io/shopify/toxiproxy image) and returns its URL.
func startToxiproxyServer(t *testing.T) string {
	t.Helper()
	quietToxics.Do(func() { zlog.Logger = zerolog.Nop() })
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	errc := make(chan error, 1)
	go func() { errc <- srv.Listen(addr) }()
	url := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/version")
		if err == nil {
			_ = resp.Body.Close()
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("toxiproxy server: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toxiproxy server on %s not answering: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() {
		_ = srv.Collection.Clear()
		_ = srv.Shutdown()
	})
	return url
}

// TestRemoteProxies drives a toxiproxy server through its HTTP API (the v2
// client) in front of a real cluster: one proxy per node on the server, a
// cluster client dialling through them, a latency toxic that really delays
// one master, a partition (disable/enable), toxic bookkeeping, replacement
// of a leftover proxy, and Close removing exactly its proxies.
func TestRemoteProxies(t *testing.T) {
	integration(t, "redis-server")
	c := sharedCluster(t)
	url := startToxiproxyServer(t)
	api := toxiclient.NewClient(url)
	ctx := ctxT(t, 2*time.Minute)

	// A proxy left on the server by an "earlier run" and an unrelated one.
	addrs := c.Addrs()
	if _, err := api.CreateProxy(proxyName(addrs[0]), "127.0.0.1:0", addrs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := api.CreateProxy("somebody-else", "127.0.0.1:0", addrs[1]); err != nil {
		t.Fatal(err)
	}

	if _, err := NewRemoteProxies("http://127.0.0.1:1", c, ""); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("unreachable API: %v", err)
	}
	px, err := NewRemoteProxies(url, c, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	var tx Toxics = px
	if got := tx.NodeAddrs(); !slices.Equal(got, sortedCopy(addrs)) {
		t.Errorf("NodeAddrs %v, want %v", got, addrs)
	}
	onServer, err := api.Proxies()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		sp, ok := onServer[proxyName(a)]
		if !ok {
			t.Fatalf("no proxy for %s on the server (have %v)", a, keys(onServer))
		}
		la, _ := tx.ListenAddr(a)
		if sp.Upstream != a || !sp.Enabled || !strings.HasSuffix(la, ":"+portOf(sp.Listen)) {
			t.Errorf("server proxy %s: upstream %s enabled %v listen %s (harness dials %s)", sp.Name, sp.Upstream, sp.Enabled, sp.Listen, la)
		}
	}

	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, Dialer: ProxiedDialer(px, nil), PoolSize: 4, DialerRetries: 1, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
	})
	defer rdb.Close()
	m, err := c.MasterOfSlot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := KeyInSlot("seckill-harness:remote-proxy-test:", 0)
	get := func() (time.Duration, error) {
		t0 := time.Now()
		err := rdb.Set(ctx, key, "v", time.Minute).Err()
		return time.Since(t0), err
	}
	if _, err := get(); err != nil {
		t.Fatalf("SET through the remote proxies: %v", err)
	}
	if n, err := tx.Stats(m.Addr); err != nil || n < 1 {
		t.Errorf("Stats(%s) = %d, %v; want the client's connection", m.Addr, n, err)
	}
	base, _ := get()

	// Latency toxic: the master of slot 0 answers ≥ 150 ms later.
	if err := tx.AddToxic(m.Addr, Toxic{Name: "lat", Type: "latency", Attributes: map[string]any{"latency": 150}}); err != nil {
		t.Fatal(err)
	}
	if names := tx.ToxicNames(m.Addr); !slices.Equal(names, []string{"lat"}) {
		t.Errorf("ToxicNames %v", names)
	}
	var slow time.Duration
	for i := 0; i < 3; i++ { // the toxic applies to connections, new and warm alike
		d, err := get()
		if err != nil {
			t.Fatalf("SET with latency toxic: %v", err)
		}
		slow = max(slow, d)
	}
	if slow < 150*time.Millisecond {
		t.Errorf("SET with a 150ms latency toxic took %v (without: %v)", slow, base)
	}
	if err := tx.RemoveToxic(m.Addr, "lat"); err != nil {
		t.Fatal(err)
	}
	if err := tx.RemoveToxic(m.Addr, "lat"); err != nil {
		t.Errorf("removing a missing toxic: %v", err)
	}
	if d, err := get(); err != nil || d > 100*time.Millisecond {
		t.Errorf("SET after removing the toxic: %v, %v", d, err)
	}
	if err := tx.AddToxic(m.Addr, Toxic{Type: "no-such-toxic"}); err == nil {
		t.Error("unknown toxic type accepted")
	}
	if err := tx.AddToxic(m.Addr, Toxic{Type: "latency", Attributes: map[string]any{"latencyy": 1}}); err == nil {
		t.Error("unknown attribute accepted")
	}
	if err := tx.AddToxic(m.Addr, Toxic{Name: "a", Type: "latency", Attributes: map[string]any{"latency": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.AddToxic(m.Addr, Toxic{Name: "b", Type: "bandwidth", Stream: "upstream", Attributes: map[string]any{"rate": 1000}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.ResetToxics(m.Addr); err != nil || len(tx.ToxicNames(m.Addr)) != 0 {
		t.Errorf("ResetToxics: %v, left %v", err, tx.ToxicNames(m.Addr))
	}

	// Partition: the proxy stops listening; the node is fine.
	if err := tx.Disable(m.Addr); err != nil {
		t.Fatal(err)
	}
	if !tx.Disabled(m.Addr) {
		t.Error("Disabled = false after Disable")
	}
	if _, err := get(); err == nil {
		t.Error("SET to a partitioned master succeeded")
	}
	if err := ping(m.Addr, time.Second); err != nil {
		t.Errorf("the partitioned node itself: %v", err)
	}
	if err := tx.Enable(m.Addr); err != nil {
		t.Fatal(err)
	}
	la, _ := tx.ListenAddr(m.Addr)
	sp, err := api.Proxy(proxyName(m.Addr))
	if err != nil || !sp.Enabled || portOf(sp.Listen) != portOf(la) {
		t.Errorf("after Enable: %+v %v (dial %s)", sp, err, la)
	}
	var lastErr error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, lastErr = get(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Errorf("SET after Enable: %v", lastErr)
	}
	_ = rdb.Del(ctx, key).Err()

	// Close deletes our proxies only.
	if err := px.Close(); err != nil {
		t.Fatal(err)
	}
	if err := px.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	left, err := api.Proxies()
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(left); !slices.Equal(got, []string{"somebody-else"}) {
		t.Errorf("proxies left on the server after Close: %v", got)
	}
	if _, err := px.Dialer()(ctx, "tcp", m.Addr); !errors.Is(err, ErrProxiesClosed) {
		t.Errorf("Dialer after Close: %v", err)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	if _, err := strconv.Atoi(p); err != nil {
		return ""
	}
	return p
}
