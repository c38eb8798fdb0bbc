package compose

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A client that knows nothing of the harness (seeded with Seeds, no
// Dialer) is routed through the client proxies by what the nodes announce:
// disabling the proxy of the master owning its key makes its calls fail,
// while the harness's admin connection to that master (the real port)
// still answers; enabling it again heals the client.
func TestAnnouncedClientProxiesRouteAPlainClient(t *testing.T) {
	integration(t, "redis-server")
	c := startOwn(t, Options{Masters: 2, AnnounceClientProxies: true})
	ctx := ctxT(t, 60*time.Second)
	px, ok := c.ClientToxics()
	if !ok {
		t.Fatal("ClientToxics: none although Options.AnnounceClientProxies is set")
	}
	if _, ok := c.ReplicationToxics(); ok {
		t.Fatal("ReplicationToxics: reported although the announced proxies are the client proxies")
	}
	seeds := c.Seeds()
	if len(seeds) != len(c.Addrs()) || slices.Contains(seeds, c.Addrs()[0]) {
		t.Fatalf("Seeds = %v, want one proxy address per node, none of them a real address %v", seeds, c.Addrs())
	}
	plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, MaxRetries: -1, ReadTimeout: time.Second, DialTimeout: time.Second})
	defer plain.Close()
	for i := 0; i < 50; i++ { // keys on both masters
		if err := plain.Set(ctx, fmt.Sprintf("k%d", i), "v", 0).Err(); err != nil {
			t.Fatalf("SET k%d through the announced proxies: %v", i, err)
		}
	}
	slot, master := keyMaster(t, ctx, c, "k7")
	if err := px.Disable(master); err != nil {
		t.Fatal(err)
	}
	if err := plain.Get(ctx, "k7").Err(); err == nil {
		t.Fatalf("GET k7 (slot %d, master %s) answered with the master's proxy disabled: the plain client bypassed the proxies", slot, master)
	}
	adm, err := c.Admin(master)
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Ping(ctx).Err(); err != nil {
		t.Fatalf("the harness's admin connection to %s goes through the proxy: %v", master, err)
	}
	if err := px.Enable(master); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for plain.Get(ctx, "k7").Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("GET k7 still failing 10s after the proxy was enabled again")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := Start(ctx, Options{ReplicationProxies: true, AnnounceClientProxies: true}); err == nil {
		t.Fatal("Start with ReplicationProxies and AnnounceClientProxies: no error, want the refusal (a node announces one port)")
	}
}

// keyMaster returns key's slot and the real address of its master.
func keyMaster(t *testing.T, ctx context.Context, c *LocalCluster, key string) (int, string) {
	t.Helper()
	adm, err := c.Admin(c.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	slot, err := adm.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Role == "master" && n.HasSlot(int(slot)) {
			return int(slot), n.Addr
		}
	}
	t.Fatalf("no master owns slot %d", slot)
	return 0, ""
}

// The trade-off, measured: a latency toxic on a master's client proxy
// delays its replicas' stream when the nodes announce the client proxies
// (replication follows the announced address), and does not when they
// announce their own ports (replication direct, clients through a Dialer).
// The replication delay is the time from a write on the master (admin
// connection, no toxic) until the replica's offset reaches the master's.
// Cutting the client proxy cuts the replica's link in the routed mode
// only.
func TestClientToxicReachesReplicationOnlyWhenClientsAnnounced(t *testing.T) {
	integration(t, "redis-server")
	const latency = 200 * time.Millisecond
	routed := startOwn(t, Options{Masters: 1, AnnounceClientProxies: true})
	rpx, _ := routed.ClientToxics()
	plain := startOwn(t, Options{Masters: 1})
	ppx, err := NewProxies(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer ppx.Close()
	for _, m := range []struct {
		name    string
		c       *LocalCluster
		px      Toxics
		delayed bool
	}{{"announced client proxies", routed, rpx, true}, {"own ports, client Dialer", plain, ppx, false}} {
		ctx := ctxT(t, 60*time.Second)
		master, replica := m.c.Addrs()[0], m.c.Addrs()[1]
		base := replicationDelays(t, ctx, m.c, master, replica, 5)
		if err := m.px.AddToxic(master, Toxic{Name: "lat", Type: "latency", Attributes: map[string]any{"latency": latency.Milliseconds()}}); err != nil {
			t.Fatal(err)
		}
		toxic := replicationDelays(t, ctx, m.c, master, replica, 5)
		_ = m.px.RemoveToxic(master, "lat")
		t.Logf("%s: replication delay median %v without a toxic, %v with %v latency on the master's client proxy", m.name, base, toxic, latency)
		if m.delayed && toxic < latency*9/10 {
			t.Errorf("%s: replication delay %v with a %v client toxic: want the toxic to delay the stream", m.name, toxic, latency)
		}
		if !m.delayed && toxic >= latency/2 {
			t.Errorf("%s: replication delay %v with a %v client toxic: want the stream untouched", m.name, toxic, latency)
		}
		if err := m.px.Disable(master); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		info, _ := replicationInfo(ctx, m.c, replica)
		link := infoField(info, "master_link_status")
		_ = m.px.Enable(master)
		t.Logf("%s: replica's master_link_status with the master's client proxy disabled for 1.5s: %s", m.name, link)
		if got := link == "down"; got != m.delayed {
			t.Errorf("%s: master_link_status %q with the client proxy disabled: want down=%v", m.name, link, m.delayed)
		}
		waitLink(t, m.c, replica, "up", 20*time.Second)
	}
}

// replicationDelays writes n times to master (directly) and returns the
// median time until replica's offset reached the master's after the write.
func replicationDelays(t *testing.T, ctx context.Context, c *LocalCluster, master, replica string, n int) time.Duration {
	t.Helper()
	adm, err := c.Admin(master)
	if err != nil {
		t.Fatal(err)
	}
	var ds []time.Duration
	for i := 0; i < n; i++ {
		if err := adm.Set(ctx, fmt.Sprintf("{d}%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		info, err := replicationInfo(ctx, c, master)
		if err != nil {
			t.Fatal(err)
		}
		want := *infoInt(info, "master_repl_offset")
		for {
			info, err := replicationInfo(ctx, c, replica)
			if off := infoInt(info, "slave_repl_offset"); err == nil && off != nil && *off >= want {
				break
			}
			if time.Since(t0) > 10*time.Second {
				t.Fatalf("replica %s did not reach offset %d within 10s", replica, want)
			}
			time.Sleep(2 * time.Millisecond)
		}
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}
