package runner

import (
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/activitytest"
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
	return Target{Store: testStore, Activity: activitytest.New(t, testRDB, "run", stock, buckets)}
}
