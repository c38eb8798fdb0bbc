package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut/pipeline"
)

// TestOrderCommitFailingLeavesNoFence: the first COMMIT of every order
// message fails (a lost connection). The order stage decides in PostgreSQL
// first and fences Redis only after the commit, so a failed commit leaves
// no ORDER_CREATED reservation without an order: the redelivery decides
// again and the final reconciliation finds nothing to explain.
func TestOrderCommitFailingLeavesNoFence(t *testing.T) {
	clustertest.Need(t)
	var mu sync.Mutex
	failed := map[string]bool{}
	pc := pipeline.DefaultConfig()
	o := run(t, spec{stock: 100, buckets: 1, load: loadConfig(300, time.Second), pipe: pc, drain: 15 * time.Second,
		before: func(p *pipeline.Pipeline) {
			pipeline.SetCommitHooks(p, func(mid string) error {
				mu.Lock()
				defer mu.Unlock()
				if failed[mid] {
					return nil
				}
				failed[mid] = true
				return errors.New("injected: connection lost before COMMIT")
			}, nil)
		}})
	o.log(t)
	if o.drainErr != nil {
		t.Fatalf("drain: %v (stuck %v)", o.drainErr, o.ev.Stuck)
	}
	mu.Lock()
	n := len(failed)
	mu.Unlock()
	if n == 0 || o.ev.Stats.Order.Orders == 0 {
		t.Fatalf("no commit failed (%d) or no order made (%+v): the test exercised nothing", n, o.ev.Stats)
	}
	fin := o.ev.Reconciliation.Final
	if len(fin.Divergences) != 0 {
		t.Errorf("final reconciliation found %v", fin.Divergences)
	}
	o.expectPass(t, "E1", "E2", "E3", "E4", "E5")
}

// TestFinalReconciliationDuringAnUnfencedCommit: one order transaction is
// held between its COMMIT and its Redis fence while the final
// reconciliation pass runs (the pass racing a message still being handled,
// as after a drain that timed out on a loaded machine). The pass must find
// the repairable order_not_fenced — never an ORDER_CREATED reservation
// without an order — repair it from PostgreSQL, and E4 must pass; the held
// fence then answers IDEMPOTENT.
func TestFinalReconciliationDuringAnUnfencedCommit(t *testing.T) {
	clustertest.Need(t)
	var once sync.Once
	held, release := make(chan string, 1), make(chan struct{})
	var p *pipeline.Pipeline
	go func() {
		select {
		case <-held:
		case <-time.After(40 * time.Second):
			return
		}
		for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if p.Reconciliation().Final != nil {
				break
			}
		}
		close(release)
	}()
	o := run(t, spec{stock: 100, buckets: 1, load: loadConfig(200, time.Second), pipe: pipeline.DefaultConfig(),
		before: func(pl *pipeline.Pipeline) {
			p = pl
			pipeline.SetCommitHooks(pl, nil, func(mid string) {
				once.Do(func() {
					held <- mid
					<-release
				})
			})
		}})
	o.log(t)
	fin := o.ev.Reconciliation.Final
	repaired := 0
	for _, d := range fin.Divergences {
		if d.Class == pipeline.DivOrderCreatedWithoutOrder {
			t.Errorf("ORDER_CREATED without an order: %+v", d)
		}
		if d.Class == pipeline.DivOrderNotFenced && d.Repaired {
			repaired++
		}
	}
	if repaired == 0 {
		t.Fatalf("the held transaction was not seen as a repaired order_not_fenced: %+v", fin.Divergences)
	}
	o.expectPass(t, "E4")
}

// TestReconcilePassDuringLoadDoesNotRaceTheCommit: a reconciliation pass
// during the load reads PostgreSQL, then Redis. One order transaction is
// held just before its COMMIT until a pass has read PostgreSQL without its
// order; it then commits and fences ORDER_CREATED before the pass reads
// Redis. The pass must not report that reservation as an ORDER_CREATED
// without an order (the false divergence a pass judging Redis against the
// older snapshot reported during loads): it judges Redis against a
// snapshot taken after the Redis read.
func TestReconcilePassDuringLoadDoesNotRaceTheCommit(t *testing.T) {
	clustertest.Need(t)
	var (
		holdOnce, raceOnce sync.Once
		heldMID            = make(chan string, 1)
		commit             = make(chan struct{})
		raced              atomic.Bool
		racedRID           string
	)
	pc := pipeline.DefaultConfig()
	pc.Reconcile.Every = 50 * time.Millisecond
	o := run(t, spec{stock: 100, buckets: 1, load: loadConfig(200, 2*time.Second), pipe: pc, drain: 15 * time.Second,
		before: func(p *pipeline.Pipeline) {
			pipeline.SetCommitHooks(p, func(mid string) error {
				holdOnce.Do(func() {
					heldMID <- mid
					select {
					case <-commit:
					case <-time.After(20 * time.Second):
					}
				})
				return nil
			}, nil)
			pipeline.SetReconcileHook(p, func(final bool) {
				if final {
					return
				}
				var mid string
				select {
				case mid = <-heldMID:
				default:
					return // no transaction held yet
				}
				raceOnce.Do(func() {
					// This pass read PostgreSQL while the order was not committed.
					close(commit)
					rid := strings.TrimSuffix(strings.TrimPrefix(mid, "reserve-order:"), ":v1")
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					for ctx.Err() == nil {
						if pipeline.StatusOf(ctx, p, rid) == lua.StatusOrderCreated {
							racedRID = rid
							raced.Store(true)
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				})
			})
		}})
	o.log(t)
	if !raced.Load() {
		t.Fatal("no pass ran while an order was committed and fenced between its reads: the test exercised nothing")
	}
	rec := o.ev.Reconciliation
	if n := rec.DuringLoad[pipeline.DivOrderCreatedWithoutOrder]; n != 0 {
		t.Errorf("%d ORDER_CREATED reservations without an order reported during the load (the race on %s): %v", n, racedRID, rec.DuringLoad)
	}
	for _, d := range rec.Final.Divergences {
		if d.Class == pipeline.DivOrderCreatedWithoutOrder {
			t.Errorf("final pass: %+v", d)
		}
	}
	o.expectPass(t, "E4", "E5")
}
