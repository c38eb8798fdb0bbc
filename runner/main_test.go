package runner

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// One real 3×1 cluster serves the package's tests.
var (
	testCluster *compose.LocalCluster
	testRDB     *redis.ClusterClient
	testStore   *lua.Store
	actSeq      atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, clustertest.Config{Package: "runner"}, func(f *clustertest.Fixture) (func(), error) {
		testCluster = f.Cluster
		testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), PoolSize: 64, ContextTimeoutEnabled: true})
		testStore = lua.NewStore(testRDB, lua.Embedded(), []byte("runner-test"))
		return func() { _ = testRDB.Close() }, nil
	}))
}

func newTarget(t *testing.T, stock int64, buckets uint32) Target {
	t.Helper()
	a := lua.NewActivity(fmt.Sprintf("run%d", actSeq.Add(1)), "sku1", stock, buckets, time.Hour)
	if err := lua.Setup(context.Background(), testRDB, a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = lua.Teardown(context.Background(), testRDB, a) })
	return Target{Store: testStore, Activity: a}
}
