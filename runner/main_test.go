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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	c, err := compose.Start(ctx, compose.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner tests need a local Redis Cluster:", err)
		os.Exit(2)
	}
	testCluster = c
	testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 64, ContextTimeoutEnabled: true})
	testStore = lua.NewStore(testRDB, lua.Embedded(), []byte("runner-test"))
	code := m.Run()
	_ = testRDB.Close()
	_ = c.Close()
	os.Exit(code)
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
