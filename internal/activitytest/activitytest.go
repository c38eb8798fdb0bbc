// Package activitytest is the shared test fixture "create an activity,
// set it up, tear it down" of the packages whose tests run on a real
// cluster (package lua's own tests, which this package cannot serve
// without an import cycle, use clustertest.Own the same way).
package activitytest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// New is a fresh activity (id: prefix, pid, sequence; sku1; a one-hour
// window; mut applied before the setup) set up on rdb and torn down when
// t ends (a teardown error fails t). Skipped in the unit tier.
func New(t testing.TB, rdb redis.Cmdable, prefix string, stock int64, buckets uint32, mut ...func(*lua.Activity)) *lua.Activity {
	t.Helper()
	clustertest.Need(t)
	a := lua.NewActivity(clustertest.ID(prefix), "sku1", stock, buckets, time.Hour)
	for _, f := range mut {
		f(a)
	}
	Own(t, rdb, a)
	return a
}

// Own sets up a (an activity the test built itself, e.g. with an id
// chosen for its slots) on rdb and tears it down when t ends.
func Own(t testing.TB, rdb redis.Cmdable, a *lua.Activity) {
	t.Helper()
	clustertest.Own(t, "activity "+a.ID,
		func(ctx context.Context) error { return lua.Setup(ctx, rdb, a) },
		func(ctx context.Context) error { _, err := lua.Teardown(ctx, rdb, a); return err })
}
