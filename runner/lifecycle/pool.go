package lifecycle

import (
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/reports"
)

// PoolSampler reads a cluster client's connection-pool statistics
// (go-redis PoolStats, summed over the nodes) once per period and keeps
// the per-period differences: waits for a free connection, their time, and
// pool timeouts. Start it when the load starts and Stop it when it ends.
type PoolSampler struct {
	client *redis.ClusterClient
	size   int
	began  time.Time
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	prev redis.PoolStats
	out  reports.Pool
}

// StartPoolSampler starts reading c's pool every period (1s when <= 0);
// size is the pool's size per node, for the report; began is offset 0.
func StartPoolSampler(c *redis.ClusterClient, size int, began time.Time, period time.Duration) *PoolSampler {
	if period <= 0 {
		period = time.Second
	}
	s := &PoolSampler{client: c, size: size, began: began, stop: make(chan struct{}), done: make(chan struct{})}
	s.prev = *c.PoolStats()
	s.out.Size = size
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				s.read()
				return
			case <-t.C:
				s.read()
			}
		}
	}()
	return s
}

// read appends the differences since the previous reading.
func (s *PoolSampler) read() {
	cur := *s.client.PoolStats()
	sec := reports.PoolWaitSecond{
		T:          time.Since(s.began).Seconds(),
		Waits:      int64(cur.WaitCount - s.prev.WaitCount),
		WaitMs:     float64(cur.WaitDurationNs-s.prev.WaitDurationNs) / 1e6,
		Timeouts:   int64(cur.Timeouts - s.prev.Timeouts),
		TotalConns: cur.TotalConns,
		IdleConns:  cur.IdleConns,
		Pending:    cur.PendingRequests,
	}
	if sec.Waits > 0 {
		sec.MeanWaitMs = sec.WaitMs / float64(sec.Waits)
	}
	s.prev = cur
	s.out.PerSecond = append(s.out.PerSecond, sec)
	s.out.Waits += sec.Waits
	s.out.WaitMs += sec.WaitMs
	s.out.Timeouts += sec.Timeouts
	s.out.MaxConns = max(s.out.MaxConns, cur.TotalConns)
}

// Stop takes a last reading and returns the pool's figures. Idempotent.
func (s *PoolSampler) Stop() *reports.Pool {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	out := s.out
	return &out
}
