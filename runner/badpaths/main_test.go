package badpaths

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
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
	testSecret  = []byte("badpaths-test")
	testPG      *compose.PostgresDB
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintln(os.Stderr, "badpaths tests need redis-server: apt-get install -y redis-server")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	c, err := compose.Start(ctx, compose.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "badpaths tests need a local Redis Cluster:", err)
		return 2
	}
	defer c.Close()
	px, err := compose.NewProxies(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "badpaths tests: proxies:", err)
		return 2
	}
	defer px.Close()
	testCluster, testProxies = c, px
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	testPG, err = compose.StartPostgresDB(ctx, compose.PostgresOptions{}, compose.PostgresDBOptions{MaxConns: 32})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "badpaths tests need PostgreSQL (apt-get install -y postgresql, or make deps):", err)
		return 2
	}
	defer testPG.Close()
	testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 96, ContextTimeoutEnabled: true, Dialer: px.Dialer()})
	defer testRDB.Close()
	return m.Run()
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
