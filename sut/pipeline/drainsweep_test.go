package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut/pipeline"
)

// linkCut stands for a partition of the pipeline's link to Redis during
// compensate: from the first compensate.lua call on, for `span`, every
// connection that carries a compensate call is closed before the call is
// written (the script never runs, the caller gets a network error); every
// other command gets through.
type linkCut struct {
	sha   []byte
	span  time.Duration
	from  atomic.Int64 // unix ns of the first compensate seen (0: none yet)
	fails atomic.Int64 // compensate calls refused
}

func (l *linkCut) down() bool {
	now := time.Now().UnixNano()
	l.from.CompareAndSwap(0, now)
	return now-l.from.Load() < l.span.Nanoseconds()
}

type linkCutConn struct {
	net.Conn
	l *linkCut
}

func (c *linkCutConn) Write(p []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(p), c.l.sha) && c.l.down() {
		c.l.fails.Add(1)
		_ = c.Conn.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: errors.New("link cut by the test (partition during compensate)")}
	}
	return c.Conn.Write(p)
}

// Every order is rejected, so every reservation goes REJECTED ->
// RELEASE_PENDING -> compensate in the release stage; the link is cut for
// every compensate during 1.5 s from the first one, longer than the stage's
// bounded retries. The TTL is an hour, so the expiry checker never reaches
// the leftovers: the drain must finish them (fence IDEMPOTENT, compensate)
// once the link is back, each released once (I8, P5), all drained (P2).
func TestDrainFinishesReleasesWhoseCompensateFailed(t *testing.T) {
	clustertest.Need(t)
	t.Parallel()
	cut := &linkCut{sha: []byte(lua.Embedded().Compensate.SHA1), span: 1500 * time.Millisecond}
	var d net.Dialer
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: testRDB.Options().Addrs, PoolSize: 64, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &linkCutConn{Conn: c, l: cut}, nil
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	pc := pipeline.DefaultConfig()
	pc.Order.Reject = 1
	o := run(t, spec{stock: 100, buckets: 1, load: loadConfig(100, time.Second), pipe: pc,
		pstore: lua.NewStore(rdb, lua.Embedded(), secret), drain: 6 * time.Second})
	if cut.fails.Load() == 0 {
		t.Fatal("setup: no compensate call was cut")
	}
	if o.drainErr != nil {
		o.log(t)
		t.Fatalf("drain: %v (stuck %v)", o.drainErr, o.ev.Stuck)
	}
	if o.ev.Stats.Drain.DrainSwept == 0 {
		o.log(t)
		t.Fatal("setup: the release stage finished every release itself: nothing was left for the drain")
	}
	o.expectPass(t, "P1", "P2", "P3", "P5", "I1", "I2", "I3", "I8")
	t.Logf("%d compensate calls cut; the drain swept %d leftovers in %d ms", cut.fails.Load(), o.ev.Stats.Drain.DrainSwept, o.ev.Stats.Drain.DrainMs)
}
