package lua

import (
	"context"
	"fmt"
	"seckill-harness/internal/clustertest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// race runs n calls of fn on `workers` goroutines at once and returns the
// wall time. Every call is made; errors fail the test.
func race(t *testing.T, n, workers int, fn func(i int) error) time.Duration {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	d := time.Since(t0)
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	return d
}

type codeCounts struct {
	mu sync.Mutex
	m  map[ReserveCode]int
	id map[string]int
}

func (c *codeCounts) add(r ReserveResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m, c.id = map[ReserveCode]int{}, map[string]int{}
	}
	c.m[r.Code]++
	c.id[r.ReservationID]++
}

const raceWorkers = 512

// Seed 000 §15.2 scene 1 at CI scale: stock 1, 20,000 distinct users at once.
func TestRaceStockOneDistinctUsers(t *testing.T) {
	clustertest.Need(t)
	const n = 20000
	a := newActivity(t, 1, 1)
	var cc codeCounts
	d := race(t, n, raceWorkers, func(i int) error {
		call, err := testStore.NewReserveCall(a, fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), time.Minute)
		if err != nil {
			return err
		}
		res, err := testStore.Reserve(context.Background(), call)
		if err != nil {
			return err
		}
		cc.add(res)
		return nil
	})
	t.Logf("%d distinct users against stock 1: %v, %.0f calls/s, outcomes %v", n, d, float64(n)/d.Seconds(), cc.m)
	if cc.m[Accepted] != 1 || cc.m[SoldOut] != n-1 {
		t.Fatalf("outcomes %v: want exactly 1 ACCEPTED and %d SOLD_OUT", cc.m, n-1)
	}
	if s := stockOf(t, a, 0); s != (Stock{Initial: 1, Available: 0, Reserved: 1}) {
		t.Fatalf("stock %+v", s)
	}
}

// Scene 2: one request_id sent 20,000 times at once.
func TestRaceSameRequestReplayed(t *testing.T) {
	clustertest.Need(t)
	const n = 20000
	a := newActivity(t, 100, 1)
	call, err := testStore.NewReserveCall(a, "u1", "the-request", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var cc codeCounts
	var fresh atomic.Int64
	race(t, n, raceWorkers, func(int) error {
		res, err := testStore.Reserve(context.Background(), call)
		if err != nil {
			return err
		}
		if !res.Replay {
			fresh.Add(1)
		}
		cc.add(res)
		return nil
	})
	if cc.m[Accepted] != n || len(cc.id) != 1 || fresh.Load() != 1 {
		t.Fatalf("outcomes %v, %d distinct reservation ids, %d non-replays: want %d ACCEPTED of one id, 1 non-replay",
			cc.m, len(cc.id), fresh.Load(), n)
	}
	if s := stockOf(t, a, 0); s.Available != 99 || s.Reserved != 1 {
		t.Fatalf("stock %+v", s)
	}
}

// Scene 3: one user, 10,000 request_ids at once.
func TestRaceSameUserManyRequests(t *testing.T) {
	clustertest.Need(t)
	const n = 10000
	a := newActivity(t, 100, 1)
	var cc codeCounts
	race(t, n, raceWorkers, func(i int) error {
		call, err := testStore.NewReserveCall(a, "u1", fmt.Sprintf("r%d", i), time.Minute)
		if err != nil {
			return err
		}
		res, err := testStore.Reserve(context.Background(), call)
		if err != nil {
			return err
		}
		cc.add(res)
		return nil
	})
	if cc.m[Accepted] != 1 || cc.m[UserAlreadyReserved] != n-1 {
		t.Fatalf("outcomes %v", cc.m)
	}
	if len(cc.id) != 1 {
		t.Fatalf("%d distinct reservation ids answered: USER_ALREADY_RESERVED must name the one reservation", len(cc.id))
	}
	if s := stockOf(t, a, 0); s.Reserved != 1 {
		t.Fatalf("stock %+v", s)
	}
}

// Scene 4: 10,000 concurrent compensations of one REJECTED reservation.
func TestRaceDuplicateCompensation(t *testing.T) {
	clustertest.Need(t)
	const n = 10000
	a := newActivity(t, 10, 1)
	ctx := context.Background()
	sc := a.Scope(0)
	rid := reserve(t, a, "u1", "r1").ReservationID
	testStore.Transition(ctx, sc, rid, TransitionArgs{Target: StatusEnqueued})
	testStore.Transition(ctx, sc, rid, TransitionArgs{Target: StatusRejected})
	before := stockOf(t, a, 0)
	var released, already, other atomic.Int64
	race(t, n, raceWorkers, func(int) error {
		c, err := testStore.Compensate(ctx, sc, "u1", rid, "rejected", 0)
		if err != nil {
			return err
		}
		switch c.Code {
		case CompensateReleased:
			released.Add(1)
		case CompensateAlreadyReleased:
			already.Add(1)
		default:
			other.Add(1)
		}
		return nil
	})
	if released.Load() != 1 || already.Load() != n-1 || other.Load() != 0 {
		t.Fatalf("released %d, already %d, other %d", released.Load(), already.Load(), other.Load())
	}
	after := stockOf(t, a, 0)
	if after.Available != before.Available+1 || after.Reserved != before.Reserved-1 || after.ReleasedTotal != before.ReleasedTotal+1 {
		t.Fatalf("before %+v after %+v", before, after)
	}
}
