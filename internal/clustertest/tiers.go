package clustertest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
)

// SkipReason is what a test of the integration tier says when it is
// skipped in the unit tier.
const SkipReason = "integration test (needs redis-server): run make test"

// Short reports whether the tests run in the unit tier (go test -short).
// Unlike testing.Short it may be called from TestMain before m.Run: it
// parses the command line first when nobody has yet.
func Short() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	return testing.Short()
}

// Need skips t in the unit tier: call it first in every test (or test
// helper) that needs a real part (a cluster, PostgreSQL, Docker, root, a
// child process that starts one). what names the part beyond redis-server
// (e.g. "PostgreSQL"); none: redis-server.
func Need(t testing.TB, what ...string) {
	t.Helper()
	if !Short() {
		return
	}
	if len(what) == 0 {
		t.Skip(SkipReason)
	}
	t.Skipf("integration test (needs %s): run make test", what[0])
}

var idSeq atomic.Int64

// ID is a fresh name for something a test creates on a shared cluster
// (an activity id): prefix, this process's id and a sequence number, so
// two test binaries, two runs, or a run and the leftovers of an earlier
// one never meet on the same keys.
func ID(prefix string) string {
	return fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), idSeq.Add(1))
}

// SetupTimeout bounds a test's setup and, separately, its teardown.
const SetupTimeout = 20 * time.Second

// Own is the fixture of everything a test creates on a shared cluster
// (an activity and its keys): it skips t in the unit tier, runs setup
// (t fails at once on its error) and registers teardown to run when t
// ends, before the test is reported: a teardown error fails t, so a test
// never leaves what it created behind unnoticed. what names the thing in
// the messages.
func Own(t testing.TB, what string, setup, teardown func(ctx context.Context) error) {
	t.Helper()
	Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), SetupTimeout)
	defer cancel()
	if err := setup(ctx); err != nil {
		t.Fatalf("setting up %s: %v", what, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), SetupTimeout)
		defer cancel()
		if err := teardown(ctx); err != nil {
			t.Errorf("tearing down %s: %v", what, err)
		}
	})
}

// leftKeys lists (up to max) the keys on c's masters: what the package's
// tests created on the shared cluster and did not remove.
func leftKeys(c *compose.LocalCluster, max int) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), SetupTimeout)
	defer cancel()
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, n := range nodes {
		if n.Role != "master" || n.PID == 0 {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
		ks, _, err := rdb.Scan(ctx, 0, "*", int64(max)).Result()
		_ = rdb.Close()
		if err != nil {
			return nil, fmt.Errorf("SCAN on %s: %w", n.Addr, err)
		}
		keys = append(keys, ks...)
	}
	if len(keys) > max {
		keys = keys[:max]
	}
	return keys, nil
}
