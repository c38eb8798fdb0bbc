package badpaths

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// One real 3×1 cluster serves the package's tests (the registry's paths
// built on a real store, the I5 and K1 checks on real keys). The matrix
// that runs the paths under their loads is tested in runner/selftest.
var (
	testRDB    *redis.ClusterClient
	testSecret = []byte("badpaths-test")
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, clustertest.Config{Package: "badpaths"}, func(f *clustertest.Fixture) (func(), error) {
		testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), PoolSize: 96, ContextTimeoutEnabled: true})
		return func() { _ = testRDB.Close() }, nil
	}))
}
