package faults

// Shared test fixtures for package faults: ONE real 3-master × 1-replica
// local cluster of redis-server processes, with an embedded toxiproxy in
// front of every node, started in TestMain and torn down after the suite.
//
// Tests that only add toxics or disable proxies may share it (they must heal
// what they did). Destructive tests (kill, failover, migration) that change
// the topology should start their own cluster with startOwnCluster.
//
// Helpers:
//   needCluster(t)                 skip when redis-server is missing
//   testCluster, testProxies       the shared cluster and its proxies
//   testDirect, testStore          a hardened cluster client (and Store) that
//                                  talks to the nodes DIRECTLY, never through
//                                  the proxies: setup, teardown, lookups
//   proxiedClient(t, mut...)       a hardened client through the proxies
//   newActivity(t, stock, buckets) a fresh activity (lua.Setup, torn down after t)
//   bucketSlot(t, a, b)            CLUSTER KEYSLOT of bucket b's stock key
//   hotSlots(t, a)                 the slots of all buckets, bucket 0 first
//   newActivitySpanning(t, stock)  a fresh activity with one bucket per master,
//                                  every bucket on a different master
//                                  (bucket 0 = the hot one)
//   newEnv(t, a, client)           an Env on the shared cluster for activity a
//   userForBucket(a, prefix, b)    a user id that lands in bucket b
//   ctxT(t, d)                     a context cancelled at the end of t

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/activitytest"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

var (
	testCluster *compose.LocalCluster
	testProxies *compose.Proxies
	testDirect  *redis.ClusterClient
	testStore   *lua.Store
	testSecret  = []byte("faults-test-secret")
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, clustertest.Config{Package: "faults", Proxies: true}, func(f *clustertest.Fixture) (func(), error) {
		testCluster, testProxies = f.Cluster, f.Proxies
		testDirect = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), PoolSize: 16})
		testStore = lua.NewStore(testDirect, lua.Embedded(), testSecret)
		return func() { _ = testDirect.Close() }, nil
	}))
}

// needCluster skips t in the unit tier (go test -short).
func needCluster(t *testing.T) {
	t.Helper()
	clustertest.Need(t)
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// proxiedOptions are the options of proxiedClient before mut: seeds are the
// real node addresses, every connection goes through testProxies. Dial
// failures are not retried inside one dial (DialerRetries 1), so a
// partitioned node fails fast instead of after 5 × 100 ms back-offs.
func proxiedOptions(px *compose.Proxies, c *compose.LocalCluster) *redis.ClusterOptions {
	return &redis.ClusterOptions{
		Addrs:         c.Addrs(),
		Dialer:        px.Dialer(),
		PoolSize:      8,
		DialTimeout:   time.Second,
		ReadTimeout:   2 * time.Second,
		WriteTimeout:  2 * time.Second,
		DialerRetries: 1,
	}
}

// proxiedClient is a hardened (no silent re-send) cluster client whose
// connections all go through the shared proxies; closed at the end of t.
func proxiedClient(t *testing.T, mut ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	t.Helper()
	needCluster(t)
	return proxiedClientOn(t, testProxies, testCluster, mut...)
}

// proxiedClientOn is proxiedClient for any cluster and its proxies.
func proxiedClientOn(t *testing.T, px *compose.Proxies, c *compose.LocalCluster, mut ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	t.Helper()
	opt := proxiedOptions(px, c)
	for _, f := range mut {
		f(opt)
	}
	cl := lua.NewClusterClient(opt)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// newActivity sets up a fresh activity (unique id) on the shared cluster
// through the direct client and tears it down after t.
func newActivity(t *testing.T, stock int64, buckets uint32) *lua.Activity {
	t.Helper()
	needCluster(t)
	return newActivityOn(t, testDirect, stock, buckets)
}

// newActivityOn is newActivity with any client (e.g. one on a test's own cluster).
func newActivityOn(t *testing.T, rdb *redis.ClusterClient, stock int64, buckets uint32) *lua.Activity {
	t.Helper()
	return activitytest.New(t, rdb, "ft", stock, buckets)
}

// newActivitySpanning sets up an activity on the shared cluster whose
// buckets (as many as there are masters) sit on pairwise different masters,
// so a fault on bucket 0's master can be compared with untouched masters.
func newActivitySpanning(t *testing.T, stock int64) *lua.Activity {
	t.Helper()
	needCluster(t)
	ctx := ctxT(t, 10*time.Second)
	nodes, err := testCluster.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var masters []compose.Node
	for _, n := range nodes {
		if n.Role == "master" && len(n.Slots) > 0 {
			masters = append(masters, n)
		}
	}
	for try := 0; try < 500; try++ {
		a := lua.NewActivity(clustertest.ID("ft"), "sku1", stock, uint32(len(masters)), time.Hour)
		seen := map[string]bool{}
		for b := uint32(0); b < a.Buckets; b++ {
			slot, err := testDirect.ClusterKeySlot(ctx, a.Scope(b).StockKey()).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range masters {
				if m.HasSlot(int(slot)) {
					seen[m.Addr] = true
				}
			}
		}
		if len(seen) < len(masters) {
			continue
		}
		activitytest.Own(t, testDirect, a)
		return a
	}
	t.Fatal("no activity id found whose buckets span all masters")
	return nil
}

// bucketSlot is the slot of bucket b of a (CLUSTER KEYSLOT of its stock key).
func bucketSlot(t *testing.T, a *lua.Activity, b uint32) int {
	t.Helper()
	slot, err := testDirect.ClusterKeySlot(ctxT(t, 5*time.Second), a.Scope(b).StockKey()).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT: %v", err)
	}
	return int(slot)
}

// hotSlots are the slots of every bucket of a, bucket 0 (the hot one) first.
func hotSlots(t *testing.T, a *lua.Activity) []int {
	t.Helper()
	out := make([]int, a.Buckets)
	for b := range out {
		out[b] = bucketSlot(t, a, uint32(b))
	}
	return out
}

// newEnv is an Env on the shared cluster and proxies for activity a, with
// client as the load's client (may be nil).
func newEnv(t *testing.T, a *lua.Activity, client *redis.ClusterClient) *Env {
	t.Helper()
	return &Env{
		Cluster:  testCluster,
		Proxies:  testProxies,
		Client:   client,
		HotSlots: hotSlots(t, a),
		Logf:     t.Logf,
	}
}

// startOwnCluster starts a cluster owned by t (closed at its end) for
// destructive tests; opt.Logf defaults to t.Logf while t runs.
func startOwnCluster(t *testing.T, opt compose.Options) *compose.LocalCluster {
	t.Helper()
	needCluster(t)
	if opt.Logf == nil {
		var done atomic.Bool
		t.Cleanup(func() { done.Store(true) })
		opt.Logf = func(f string, args ...any) {
			if !done.Load() {
				t.Logf(f, args...)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := compose.Start(ctx, opt)
	if err != nil {
		t.Fatalf("starting an own cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing own cluster: %v", err)
		}
	})
	return c
}

// userForBucket returns a user id (prefix + n) that lands in bucket b of a.
func userForBucket(a *lua.Activity, prefix string, b uint32) string {
	for n := 0; ; n++ {
		u := fmt.Sprintf("%s%d", prefix, n)
		if a.BucketOf(u) == b {
			return u
		}
	}
}
