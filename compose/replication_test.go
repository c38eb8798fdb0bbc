package compose

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitLink polls the replica's master_link_status until it is want.
func waitLink(t *testing.T, c *LocalCluster, replica, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		info, err := replicationInfo(context.Background(), c, replica)
		if err == nil && infoField(info, "master_link_status") == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s: master_link_status not %s within %v (last: %q, %v)", replica, want, within, infoField(info, "master_link_status"), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The replica replicates through its master's replication proxy, the
// cluster announces the proxy ports, the harness's views keep the real
// addresses, clients reach the nodes both through client proxies and with
// AnnouncedDialer, and cutting the proxy stalls the replica: its offset
// falls behind by the bytes written meanwhile, and the sampler's series
// shows the link down with that lag, then up and caught up after the heal.
func TestReplicationThroughProxies(t *testing.T) {
	integration(t, "redis-server")
	c := startOwn(t, Options{Masters: 1, ReplicationProxies: true})
	ctx := ctxT(t, 60*time.Second)
	master, replica := c.Addrs()[0], c.Addrs()[1]
	repl, ok := c.ReplicationToxics()
	if !ok {
		t.Fatal("ReplicationToxics: not available although Options.ReplicationProxies is set")
	}
	announced, ok := repl.ListenAddr(master)
	if !ok {
		t.Fatalf("no replication proxy for master %s", master)
	}
	_, announcedPort, _ := net.SplitHostPort(announced)

	info, err := replicationInfo(ctx, c, replica)
	if err != nil {
		t.Fatal(err)
	}
	if got := infoField(info, "master_port"); got != announcedPort {
		t.Fatalf("replica's master_port = %s, want the master's replication proxy port %s (real address %s)", got, announcedPort, master)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Addr != master && n.Addr != replica {
			t.Fatalf("Nodes lists %s, want only the real addresses %s and %s", n.Addr, master, replica)
		}
	}
	adm, _ := c.Admin(master)
	slots, err := adm.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if slots[0].Nodes[0].Addr != announced || c.RealAddr(announced) != master {
		t.Fatalf("CLUSTER SLOTS names %s; want the announced %s, mapped back to %s", slots[0].Nodes[0].Addr, announced, master)
	}

	// Clients: with AnnouncedDialer, and through client proxies.
	direct := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Dialer: AnnouncedDialer(c), MaxRetries: -1})
	defer direct.Close()
	if err := direct.Set(ctx, "k0", "v", 0).Err(); err != nil {
		t.Fatalf("SET with AnnouncedDialer: %v", err)
	}
	px, err := NewProxies(c)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	viaProxies := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Dialer: px.Dialer(), MaxRetries: -1})
	defer viaProxies.Close()
	if err := viaProxies.Set(ctx, "k1", "v", 0).Err(); err != nil {
		t.Fatalf("SET through client proxies: %v", err)
	}
	if n, _ := px.Stats(master); n == 0 {
		t.Fatalf("no client connection through the client proxy of %s", master)
	}
	if names := px.NodeAddrs(); len(names) != 2 {
		t.Fatalf("client proxies for %v, want exactly the two real node addresses (an announced address got a proxy of its own)", names)
	}

	sctx, stopSampler := context.WithCancel(ctx)
	series := make(chan []ReplicationSample, 1)
	go func() { series <- SampleReplicationLag(sctx, c, 200*time.Millisecond) }()

	if err := repl.Disable(master); err != nil {
		t.Fatal(err)
	}
	waitLink(t, c, replica, "down", 10*time.Second)
	const keys, size = 100, 1000
	val := string(make([]byte, size))
	for i := 0; i < keys; i++ {
		if err := adm.Set(ctx, fmt.Sprintf("cut:%d", i), val, 0).Err(); err != nil {
			t.Fatalf("write %d to the master while its replica is cut off: %v", i, err)
		}
	}
	lags, err := ReadReplicationLag(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(lags) != 1 || lags[0].LagBytes == nil || *lags[0].LagBytes < keys*size {
		t.Fatalf("lag while cut off: %+v; want one replica at least %d bytes behind", lags, keys*size)
	}
	cutLag := *lags[0].LagBytes
	t.Logf("replica %s while cut off: link %s, master offset %d, replica offset %d, lag %d bytes after %d writes of %d bytes",
		replica, lags[0].LinkStatus, *lags[0].MasterOffset, *lags[0].ReplicaOffset, cutLag, keys, size)
	time.Sleep(500 * time.Millisecond)
	if err := repl.Enable(master); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	waitLink(t, c, replica, "up", 15*time.Second)
	for {
		lags, err = ReadReplicationLag(ctx, c)
		if err == nil && len(lags) == 1 && lags[0].LagBytes != nil && *lags[0].LagBytes == 0 {
			break
		}
		if time.Since(healed) > 15*time.Second {
			t.Fatalf("replica not caught up 15s after the heal: %+v (%v)", lags, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("caught up %v after the heal", time.Since(healed).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	stopSampler()
	s := <-series
	var sawDown, sawUpAfter bool
	for _, smp := range s {
		for _, r := range smp.Replicas {
			if r.LinkStatus == "down" && r.LagBytes != nil && *r.LagBytes >= keys*size {
				sawDown = true
			}
			if sawDown && r.LinkStatus == "up" && r.LagBytes != nil && *r.LagBytes == 0 {
				sawUpAfter = true
			}
		}
	}
	if !sawDown || !sawUpAfter {
		t.Fatalf("sampled series (%d samples) lacks the cut (link down, lag >= %d) followed by the recovery (up, 0): %+v", len(s), keys*size, s)
	}
	t.Logf("sampler: %d samples every 200ms", len(s))

	// Replace drops the toxics and keeps the announced address: the
	// replica links up again through the fresh proxy.
	if err := repl.AddToxic(master, Toxic{Name: "slow", Type: "latency", Attributes: map[string]any{"latency": 50}}); err != nil {
		t.Fatal(err)
	}
	if err := repl.(ToxicReplacer).Replace(master); err != nil {
		t.Fatal(err)
	}
	if names := repl.ToxicNames(master); len(names) != 0 {
		t.Fatalf("toxics after Replace: %v", names)
	}
	if again, _ := repl.ListenAddr(master); again != announced {
		t.Fatalf("Replace moved the proxy from %s to %s", announced, again)
	}
	waitLink(t, c, replica, "up", 15*time.Second)
}
