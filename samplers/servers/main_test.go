package servers

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
)

// One real local cluster of 3 masters × 1 replica serves the package's
// tests (but TestEvictionsNameTheEvictingNode's, which evicts keys).
var testCluster *compose.LocalCluster

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, clustertest.Config{Package: "servers"}, func(f *clustertest.Fixture) (func(), error) {
		testCluster = f.Cluster
		return nil, nil
	}))
}

// startCluster returns the package's cluster and a client of it (closed
// when t ends); every key t writes through it must be removed by t.
func startCluster(t *testing.T) (*compose.LocalCluster, *redis.ClusterClient) {
	t.Helper()
	clustertest.Need(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	return testCluster, rdb
}
