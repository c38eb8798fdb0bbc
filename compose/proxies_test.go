package compose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

var proxyActSeq atomic.Int64

// newTestProxies starts proxies in front of c, closed at the end of t.
func newTestProxies(t *testing.T, c *LocalCluster) *Proxies {
	t.Helper()
	p, err := NewProxies(c)
	if err != nil {
		t.Fatalf("NewProxies: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// proxiedClusterClient is a hardened cluster client through p.
func proxiedClusterClient(t *testing.T, c *LocalCluster, p *Proxies) *redis.ClusterClient {
	t.Helper()
	cl := lua.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs(), Dialer: p.Dialer(), PoolSize: 4, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
	})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// directClusterClient talks to the nodes without proxies.
func directClusterClient(t *testing.T, c *LocalCluster) *redis.ClusterClient {
	t.Helper()
	cl := lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 4})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// setupActivity creates a 1-bucket activity through direct and returns it
// with the slot of its stock key.
func setupActivity(t *testing.T, direct *redis.ClusterClient, stock int64) (*lua.Activity, int) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	a := lua.NewActivity(fmt.Sprintf("px%d", proxyActSeq.Add(1)), "sku1", stock, 1, time.Hour)
	if err := lua.Setup(ctx, direct, a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = lua.Teardown(ctx, direct, a)
	})
	slot, err := direct.ClusterKeySlot(ctx, a.Scope(0).StockKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return a, int(slot)
}

// keyOnEachMaster returns, per master address, a key whose slot it owns.
func keyOnEachMaster(t *testing.T, c *LocalCluster, direct *redis.ClusterClient) map[string]string {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	masters := 0
	for _, n := range nodes {
		if n.Role == "master" {
			masters++
		}
	}
	for i := 0; len(out) < masters && i < 1000; i++ {
		k := fmt.Sprintf("pxkey:%d", i)
		slot, err := direct.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if n.Role == "master" && n.HasSlot(int(slot)) {
				if _, ok := out[n.Addr]; !ok {
					out[n.Addr] = k
				}
			}
		}
	}
	if len(out) != masters {
		t.Fatalf("found keys for %d of %d masters", len(out), masters)
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func TestProxiesReserveThroughDialer(t *testing.T) {
	integration(t, "redis-server")
	c := sharedCluster(t)
	p := newTestProxies(t, c)
	direct := directClusterClient(t, c)
	a, slot := setupActivity(t, direct, 10)
	master, err := c.MasterOfSlot(ctxT(t, 5*time.Second), slot)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range c.Addrs() {
		l, ok := p.ListenAddr(addr)
		if !ok || l == addr {
			t.Fatalf("node %s: listen %q ok=%v: want its own proxy", addr, l, ok)
		}
	}
	rdb := proxiedClusterClient(t, c, p)
	store := lua.NewStore(rdb, lua.Embedded(), []byte("s"))
	call, err := store.NewReserveCall(a, "u1", "r1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res, err := store.Reserve(ctxT(t, 5*time.Second), call)
	if err != nil || res.Code != lua.Accepted {
		t.Fatalf("reserve through the proxies: %+v %v", res, err)
	}
	n, err := p.Stats(master.Addr)
	if err != nil || n < 1 {
		t.Fatalf("Stats(hot master %s) = %d, %v: want >= 1 connection through its proxy", master.Addr, n, err)
	}
	st, err := lua.ReadStock(ctxT(t, 5*time.Second), direct, a.Scope(0))
	if err != nil || st.Reserved != 1 {
		t.Fatalf("stock read directly: %+v %v", st, err)
	}
	t.Logf("reserve through proxy of %s accepted; %d client connection(s) through that proxy", master.Addr, n)
}

func TestProxiesLatencyToxic(t *testing.T) {
	integration(t, "redis-server")
	c := sharedCluster(t)
	p := newTestProxies(t, c)
	direct := directClusterClient(t, c)
	a, slot := setupActivity(t, direct, 1000)
	master, err := c.MasterOfSlot(ctxT(t, 5*time.Second), slot)
	if err != nil {
		t.Fatal(err)
	}
	rdb := proxiedClusterClient(t, c, p)
	store := lua.NewStore(rdb, lua.Embedded(), []byte("s"))
	seq := 0
	measure := func(n int) []time.Duration {
		var out []time.Duration
		for i := 0; i < n; i++ {
			seq++
			call, _ := store.NewReserveCall(a, fmt.Sprintf("u%d", seq), fmt.Sprintf("r%d", seq), time.Minute)
			t0 := time.Now()
			res, err := store.Reserve(ctxT(t, 5*time.Second), call)
			d := time.Since(t0)
			if err != nil || res.Code != lua.Accepted {
				t.Fatalf("reserve: %+v %v", res, err)
			}
			out = append(out, d)
		}
		return out
	}
	measure(3) // warm: connections and script cache
	before := measure(10)
	base := median(before)
	if err := p.AddToxic(master.Addr, Toxic{Name: "lat", Type: "latency", Stream: "downstream",
		Attributes: map[string]any{"latency": 100}}); err != nil {
		t.Fatal(err)
	}
	with := measure(10)
	if err := p.RemoveToxic(master.Addr, "lat"); err != nil {
		t.Fatal(err)
	}
	after := median(measure(10))
	minWith, minBefore := slices.Min(with), slices.Min(before)
	t.Logf("reserve on the hot master: median %v before (fastest %v), %v with 100ms downstream latency (fastest %v), %v after removal",
		base, minBefore, median(with), minWith, after)
	// The toxic adds its 100 ms to every call; a busy machine (go test runs
	// other packages beside this one) only adds to a call's time, so the
	// fastest calls show the shift: a median before of 3.8 ms against 2.3 ms
	// of service time with the toxic once made the medians' shift 98.5 ms.
	if shift := minWith - minBefore; minWith < 100*time.Millisecond || shift < 95*time.Millisecond {
		t.Fatalf("latency toxic shifted the fastest call by %v (fastest with it %v): want every call >= 100ms", shift, minWith)
	}
	if after > base+50*time.Millisecond {
		t.Fatalf("after RemoveToxic the median is %v (base %v): toxic still acting", after, base)
	}
	// Idempotent removal; unknown type / attribute rejected.
	if err := p.RemoveToxic(master.Addr, "lat"); err != nil {
		t.Fatalf("second RemoveToxic: %v", err)
	}
	if err := p.AddToxic(master.Addr, Toxic{Name: "x", Type: "nope"}); err == nil {
		t.Fatal("unknown toxic type accepted")
	}
	if err := p.AddToxic(master.Addr, Toxic{Name: "x", Type: "latency", Attributes: map[string]any{"latncy": 5}}); err == nil || !strings.Contains(err.Error(), "latncy") {
		t.Fatalf("unknown attribute: %v", err)
	}
	if names := p.ToxicNames(master.Addr); len(names) != 0 {
		t.Fatalf("toxics left: %v", names)
	}
}

func TestProxiesDisableEnable(t *testing.T) {
	integration(t, "redis-server")
	c := sharedCluster(t)
	p := newTestProxies(t, c)
	direct := directClusterClient(t, c)
	keys := keyOnEachMaster(t, c, direct)
	rdb := proxiedClusterClient(t, c, p)
	ctx := ctxT(t, 30*time.Second)
	setAll := func() map[string]error {
		out := map[string]error{}
		for addr, k := range keys {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			out[addr] = rdb.Set(cctx, k, "v", time.Minute).Err()
			cancel()
		}
		return out
	}
	for addr, err := range setAll() {
		if err != nil {
			t.Fatalf("before Disable: SET on %s: %v", addr, err)
		}
	}
	var victim string
	for addr := range keys {
		victim = addr
		break
	}
	if err := p.Disable(victim); err != nil {
		t.Fatal(err)
	}
	if err := p.Disable(victim); err != nil { // idempotent
		t.Fatal(err)
	}
	if !p.Disabled(victim) {
		t.Fatal("Disabled() = false after Disable")
	}
	// The node itself is alive and answers directly.
	adm, err := c.Admin(victim)
	if err != nil || adm.Ping(ctx).Err() != nil {
		t.Fatalf("partitioned node %s not alive: %v", victim, err)
	}
	// A direct dial to the proxy is refused.
	l, _ := p.ListenAddr(victim)
	if conn, err := net.DialTimeout("tcp", l, time.Second); err == nil {
		conn.Close()
		t.Fatalf("disabled proxy %s still accepts", l)
	}
	for round := 0; round < 2; round++ { // the first round hits the cut pooled conns
		for addr, err := range setAll() {
			if addr == victim && err == nil {
				t.Fatalf("round %d: SET on partitioned %s succeeded", round, addr)
			}
			if addr != victim && err != nil {
				t.Fatalf("round %d: SET on %s (not partitioned) failed: %v", round, addr, err)
			}
			if addr == victim {
				t.Logf("round %d: partitioned %s: %v", round, addr, err)
			}
		}
	}
	if err := p.Enable(victim); err != nil {
		t.Fatal(err)
	}
	if err := p.Enable(victim); err != nil { // idempotent
		t.Fatal(err)
	}
	if l2, _ := p.ListenAddr(victim); l2 != l {
		t.Fatalf("listen address changed across Disable/Enable: %s → %s", l, l2)
	}
	t0 := time.Now()
	for {
		errs := setAll()
		bad := 0
		for _, err := range errs {
			if err != nil {
				bad++
			}
		}
		if bad == 0 {
			break
		}
		if time.Since(t0) > 5*time.Second {
			t.Fatalf("after Enable, still failing: %v", errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("after Enable all %d masters answer again within %v", len(keys), time.Since(t0).Round(time.Millisecond))
}

func TestProxiesOnTheFlyAndDirect(t *testing.T) {
	p, err := NewProxies(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// An "added later" loopback node: an echo server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	addr := ln.Addr().String()
	if _, ok := p.ListenAddr(addr); ok {
		t.Fatal("proxy exists before the first dial")
	}
	conn, err := p.Dialer()(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := p.ListenAddr(addr)
	if !ok || l == addr {
		t.Fatalf("no proxy created on the fly (%q, %v)", l, ok)
	}
	if conn.RemoteAddr().String() != l {
		t.Fatalf("dialled %s, want the proxy %s", conn.RemoteAddr(), l)
	}
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo through the proxy: %q %v", buf, err)
	}
	if n, _ := p.Stats(addr); n != 1 {
		t.Fatalf("Stats = %d, want 1 open connection", n)
	}
	conn.Close()
	if n, _ := p.Stats(addr); n != 0 {
		t.Fatalf("Stats after close = %d, want 0", n)
	}
	// Dialling a proxy's own listen address is not proxied twice.
	c2, err := p.Dialer()(context.Background(), "tcp", l)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if len(p.NodeAddrs()) != 1 {
		t.Fatalf("proxies: %v, want only %s", p.NodeAddrs(), addr)
	}
}

func TestProxiesCloseLeavesNothing(t *testing.T) {
	integration(t, "redis-server")
	c := sharedCluster(t)
	direct := directClusterClient(t, c)
	keys := keyOnEachMaster(t, c, direct)
	before := runtime.NumGoroutine()
	p, err := NewProxies(c)
	if err != nil {
		t.Fatal(err)
	}
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Dialer: p.Dialer(), PoolSize: 4})
	ctx := ctxT(t, 10*time.Second)
	for _, k := range keys {
		if err := rdb.Set(ctx, k, "v", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var listens []string
	for _, a := range p.NodeAddrs() {
		l, _ := p.ListenAddr(a)
		listens = append(listens, l)
	}
	if err := p.AddToxic(c.Addrs()[0], Toxic{Name: "lat", Type: "latency", Attributes: map[string]any{"latency": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	_ = rdb.Close()
	for _, l := range listens {
		if conn, err := net.DialTimeout("tcp", l, time.Second); err == nil {
			conn.Close()
			t.Fatalf("proxy listener %s still accepts after Close", l)
		}
	}
	if _, err := p.Dialer()(context.Background(), "tcp", c.Addrs()[0]); !errors.Is(err, ErrProxiesClosed) {
		t.Fatalf("Dialer after Close: %v, want ErrProxiesClosed", err)
	}
	if err := p.RemoveToxic(c.Addrs()[0], "lat"); err != nil {
		t.Fatalf("RemoveToxic after Close: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("%d listeners gone, goroutines back to %d", len(listens), runtime.NumGoroutine())
}

// A killed node is "connection refused" through the Dialer (not a
// connection that the proxy accepts and then cuts), and a restarted node is
// reachable again through the same proxy.
func TestProxiesKilledAndRestartedNode(t *testing.T) {
	integration(t, "redis-server")
	c := startOwn(t, Options{Masters: 1, ReplicasPerMaster: NoReplicas})
	p := newTestProxies(t, c)
	addr := c.Addrs()[0]
	listen, _ := p.ListenAddr(addr)
	cl := redis.NewClient(&redis.Options{Addr: addr, Dialer: p.Dialer(), MaxRetries: -1, DialerRetries: 1})
	defer cl.Close()
	ctx := ctxT(t, 30*time.Second)
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(addr); err != nil {
		t.Fatal(err)
	}
	_, err := p.Dialer()(ctx, "tcp", addr)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Dialer to a killed node: %v, want a dial error (connection refused)", err)
	}
	if err := c.Restart(ctx, addr); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for cl.Ping(ctx).Err() != nil {
		if time.Since(t0) > 5*time.Second {
			t.Fatalf("restarted node not reachable through its proxy: %v", cl.Ping(ctx).Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if l2, _ := p.ListenAddr(addr); l2 != listen {
		t.Fatalf("proxy changed across the restart: %s → %s", listen, l2)
	}
	if n, _ := p.Stats(addr); n < 1 {
		t.Fatalf("Stats = %d after the restart: the client did not come back through the proxy", n)
	}
	t.Logf("killed node: %v; restarted node answers through %s after %v", err, listen, time.Since(t0).Round(time.Millisecond))
}
