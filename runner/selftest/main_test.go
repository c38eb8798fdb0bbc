package selftest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner/lifecycle"
)

// One real 3×1 cluster with an embedded toxiproxy in front of every node
// serves the package's tests; the client dials through the proxies (the
// disconnect load needs them).
var (
	testCluster *compose.LocalCluster
	testProxies *compose.Proxies
	testRDB     *redis.ClusterClient
	testSecret  = []byte("selftest-test")
	testPG      *compose.PostgresDB
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, clustertest.Config{Package: "selftest", Proxies: true}, func(f *clustertest.Fixture) (func(), error) {
		testCluster, testProxies = f.Cluster, f.Proxies
		ctx, cancel := context.WithTimeout(context.Background(), clustertest.StartTimeout)
		defer cancel()
		pg, err := compose.StartPostgresDB(ctx, compose.PostgresOptions{}, compose.PostgresDBOptions{MaxConns: 32})
		if err != nil {
			return nil, fmt.Errorf("need PostgreSQL (apt-get install -y postgresql, or make deps): %w", err)
		}
		testPG = pg
		testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), PoolSize: 96, ContextTimeoutEnabled: true, Dialer: f.Proxies.Dialer()})
		return func() { _ = testRDB.Close(); pg.Close() }, nil
	}))
}

func testEnv(t *testing.T) Env {
	t.Helper()
	return Env{Stand: &lifecycle.Stand{Cluster: testCluster, Proxies: testProxies, Client: testRDB, Postgres: testPG.Pool()}, Secret: testSecret, Log: testLog{t}}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}
