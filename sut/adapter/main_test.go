package adapter

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// One real cluster of redis-server processes (3 masters, no replica)
// serves the tests that run scripts.
var (
	testRDB     *redis.ClusterClient
	testCluster compose.Cluster
)

func TestMain(m *testing.M) {
	cfg := clustertest.Config{Package: "adapter", Options: compose.Options{ReplicasPerMaster: compose.NoReplicas}}
	os.Exit(clustertest.Main(m, cfg, func(f *clustertest.Fixture) (func(), error) {
		testCluster = f.Cluster
		testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs()})
		return func() { _ = testRDB.Close() }, nil
	}))
}
