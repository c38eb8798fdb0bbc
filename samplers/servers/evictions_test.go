package servers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
)

// The counting rule: increases between readings count; a restart (another
// run_id, counters reset) counts its whole new value; a first reading is
// only the baseline.
func TestEvictionsAdd(t *testing.T) {
	var e evictions
	e.add(7, "a") // baseline: evictions before the run do not count
	e.add(7, "a")
	e.add(10, "a")
	if e.evicted != 3 || e.restarted {
		t.Fatalf("after +3: %+v", e)
	}
	e.add(2, "b") // restarted, evicted 2 since
	e.add(5, "b")
	if e.evicted != 8 || !e.restarted || e.readings != 5 {
		t.Fatalf("after a restart: %+v", e)
	}
}

// A master with an evicting policy and a tiny maxmemory evicts while keys
// are written: Evictions names it with its count, and the node left alone
// shows 0.
func TestEvictionsNameTheEvictingNode(t *testing.T) {
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Its own cluster: allkeys-lru under a tiny maxmemory evicts any key,
	// the shared cluster's too.
	c, err := compose.Start(ctx, compose.Options{Masters: 2, ReplicasPerMaster: compose.NoReplicas})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	const key = "{evict}:k"
	m, err := c.MasterOfSlot(ctx, compose.KeySlot(key))
	if err != nil {
		t.Fatal(err)
	}
	fill := func(from, to int) {
		for i := from; i < to; i++ {
			// Under a full memory a write may still be refused (OOM) when
			// eviction cannot free enough: only the evictions matter here.
			_ = rdb.Set(ctx, fmt.Sprintf("%s%d", key, i), "a value of some size to fill the memory", 0).Err()
		}
	}
	fill(0, 2000) // something to evict
	s := Start(ctx, c, Options{Interval: 200 * time.Millisecond})
	adm, err := c.Admin(m.Addr)
	if err != nil {
		t.Fatal(err)
	}
	used, err := adm.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := parseInfo(used)["used_memory"]
	if err := adm.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	if err := adm.ConfigSet(ctx, "maxmemory", n).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adm.ConfigSet(context.Background(), "maxmemory", "0").Err()
		_ = adm.ConfigSet(context.Background(), "maxmemory-policy", "noeviction").Err()
	})
	fill(2000, 4000)
	nodes, unread := s.Evictions(ctx)
	if len(unread) != 0 || len(nodes) != 2 {
		t.Fatalf("nodes %+v unread %v", nodes, unread)
	}
	for _, nd := range nodes {
		switch {
		case nd.Addr == m.Addr && nd.Evicted == 0:
			t.Errorf("the evicting master %s counted no eviction: %+v", m.Addr, nd)
		case nd.Addr != m.Addr && nd.Evicted != 0:
			t.Errorf("the other master %s counted %d evictions", nd.Addr, nd.Evicted)
		}
	}
	t.Logf("evictions: %+v", nodes)
}
