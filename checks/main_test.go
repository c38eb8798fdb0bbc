package checks

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/activitytest"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// One real 3×1 cluster serves the package's tests.
var (
	testCluster *compose.LocalCluster
	testRDB     *redis.ClusterClient
	testStore   *lua.Store
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, clustertest.Config{Package: "checks"}, func(f *clustertest.Fixture) (func(), error) {
		testCluster = f.Cluster
		testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), PoolSize: 64, ContextTimeoutEnabled: true})
		testStore = lua.NewStore(testRDB, lua.Embedded(), []byte("checks-test"))
		return func() { _ = testRDB.Close() }, nil
	}))
}

// target is a test's system under test: the reference on Store (or
// Path) for Activity.
type target struct {
	Store    *lua.Store
	Activity *lua.Activity
	Path     sut.System // nil: the reference on Store
}

func (t target) sale() sut.Sale { return sut.Sale{Activity: t.Activity, IDs: t.Store} }

func (t target) sys() sut.System {
	if t.Path != nil {
		return t.Path
	}
	return sut.NewReference(t.Store)
}

// Verify judges tgt's state after history in.
func Verify(ctx context.Context, tgt target, in CheckInput) (*CheckReport, error) {
	return Judge(ctx, tgt.sale(), tgt.sys(), in)
}

func newTarget(t *testing.T, stock int64, buckets uint32) target {
	t.Helper()
	return target{Store: testStore, Activity: activitytest.New(t, testRDB, "chk", stock, buckets)}
}

func smallConfig() runner.Config {
	cfg := runner.DefaultConfig()
	cfg.Shape = runner.Shape{Kind: "constant", Rate: 1000}
	cfg.Duration = 2 * time.Second
	cfg.Users = 1500
	cfg.Concurrency = 32
	cfg.Mix = runner.Mix{Replay: 0.05, SameUser: 0.05, ForeignRequest: 0.05, Release: 0.03}
	cfg.SampleEvery = 200 * time.Millisecond
	return cfg
}

func checkByID(t *testing.T, rep *CheckReport, id string) Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s in %+v", id, rep.Checks)
	return Check{}
}
