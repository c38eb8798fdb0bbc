package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// TestDisconnectBeforeReply proves the fault end to end for each toxic: on
// a warm client the reserve whose reply is cut reports UNKNOWN after exactly
// one wire attempt, the script did run (its request result is in Redis and
// one unit moved), and the harness's retry with the same ids replays the
// same reservation with no second decrement.
func TestDisconnectBeforeReply(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	for _, toxic := range []string{"reset_peer", "limit_data", "timeout"} {
		t.Run(toxic, func(t *testing.T) {
			a := newActivity(t, 10, 1)
			rdb := proxiedClient(t, func(o *redis.ClusterOptions) { o.ReadTimeout = 300 * time.Millisecond })
			store := lua.NewStore(rdb, lua.Embedded(), testSecret)
			env := newEnv(t, a, rdb)
			ctx := ctxT(t, 20*time.Second)
			hot, err := Target{Role: TargetHotMaster}.ResolveOne(ctx, env)
			if err != nil {
				t.Fatal(err)
			}
			// Warm the pool: the connection to the hot master exists before arming.
			warm, _ := store.NewReserveCall(a, "warm", "warm", time.Minute)
			if res, err := store.Reserve(ctx, warm); err != nil || res.Code != lua.Accepted {
				t.Fatalf("warm-up: %+v %v", res, err)
			}
			conns, _ := testProxies.Stats(hot.Addr)

			p, err := Parse("disconnect-before-reply:toxic=" + toxic)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Fault.Inject(ctx, env); err != nil {
				t.Fatal(err)
			}
			call, _ := store.NewReserveCall(a, "u1", "r1", time.Minute)
			t0 := time.Now()
			res, cutErr := store.Reserve(ctx, call)
			took := time.Since(t0)
			if herr := p.Fault.Heal(ctx, env); herr != nil {
				t.Fatal(herr)
			}
			if !errors.Is(cutErr, lua.ErrOutcomeUnknown) {
				t.Fatalf("cut reply gave %+v, %v; want ErrOutcomeUnknown", res, cutErr)
			}
			if res.Attempts != 1 {
				t.Fatalf("%d wire attempts: want exactly 1 (no silent re-send)", res.Attempts)
			}
			if names := testProxies.ToxicNames(hot.Addr); len(names) != 0 {
				t.Fatalf("toxics left after Heal: %v", names)
			}
			// The script ran: the request result exists and one unit moved.
			lr, found, lerr := testStore.LookupRequest(ctx, call.Scope, call.RequestID)
			if lerr != nil || !found || lr.Code != lua.Accepted || lr.ReservationID != call.ReservationID {
				t.Fatalf("request result after the cut: %+v found=%v %v", lr, found, lerr)
			}
			st1, _ := lua.ReadStock(ctx, testDirect, call.Scope)
			if st1.Reserved != 2 || !st1.Conserved() {
				t.Fatalf("stock after the cut %+v: want reserved 2 (warm-up + the cut one)", st1)
			}
			// The harness's retry with the same ids, through the proxies again.
			again, sends, err := store.ReserveRetry(ctx, call, lua.RetryPolicy{MaxSends: 3})
			if err != nil || again.Code != lua.Accepted || !again.Replay || again.ReservationID != call.ReservationID {
				t.Fatalf("retry: %+v sends=%d %v", again, sends, err)
			}
			st2, _ := lua.ReadStock(ctx, testDirect, call.Scope)
			if st2 != st1 {
				t.Fatalf("retry moved stock: %+v → %+v", st1, st2)
			}
			ev := p.Fault.Evidence()
			if ev["toxic_type"] != toxic || ev["stream"] != "downstream" || ev["armed_at"] == nil || ev["removed_at"] == nil {
				t.Fatalf("evidence: %v", ev)
			}
			t.Logf("%s: UNKNOWN after %v (%v); executed (resv %s, code %s); retry replayed in %d send(s); reserved %d → %d; warm conns at arm %d (evidence says %v)",
				toxic, took.Round(time.Millisecond), cutErr, lr.ReservationID, lr.Code, sends, st1.Reserved, st2.Reserved, conns, ev["warm_connections_at_first_arm"])
		})
	}
}

// TestDisconnectArmingUnderLoad runs a small closed-loop load on the hot
// bucket with the pulsing disconnect fault and resolves every UNKNOWN the
// way the runner does: it shows the arming behaviour (executed UNKNOWNs
// come from warm connections, spread over the pulses) and that the path
// stays exact: every executed UNKNOWN replays on retry, and the stock moved
// by exactly the number of distinct reservations.
func TestDisconnectArmingUnderLoad(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	const workers = 8
	a := newActivity(t, 100000, 1)
	rdb := proxiedClient(t, func(o *redis.ClusterOptions) { o.PoolSize = workers })
	store := lua.NewStore(rdb, lua.Embedded(), testSecret)
	env := newEnv(t, a, rdb)
	ctx := ctxT(t, 30*time.Second)

	type unknown struct {
		call lua.ReserveCall
		at   time.Time
	}
	var (
		mu       sync.Mutex
		unknowns []unknown
		accepted atomic.Int64
		other    atomic.Int64
		seq      atomic.Int64
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := seq.Add(1)
				call, _ := store.NewReserveCall(a, fmt.Sprintf("lu%d", n), fmt.Sprintf("lr%d", n), time.Minute)
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				res, err := store.Reserve(cctx, call)
				cancel()
				switch {
				case err == nil && res.Code == lua.Accepted:
					accepted.Add(1)
				case lua.IsOutcomeUnknown(err):
					mu.Lock()
					unknowns = append(unknowns, unknown{call, time.Now()})
					mu.Unlock()
				default:
					other.Add(1)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // warm pool under load
	p, err := Parse("disconnect-before-reply:every=300ms,pulse=30ms")
	if err != nil {
		t.Fatal(err)
	}
	injected := time.Now()
	if err := p.Fault.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	if err := p.Fault.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()

	// Resolve each UNKNOWN by its request result, then retry it with the same ids.
	executed, notExecuted := 0, 0
	periods := map[int]int{}
	distinct := accepted.Load()
	for _, u := range unknowns {
		_, found, err := testStore.LookupRequest(ctx, u.call.Scope, u.call.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		res, err := store.Reserve(ctx, u.call)
		if err != nil || res.Code != lua.Accepted || res.ReservationID != u.call.ReservationID {
			t.Fatalf("retry of an UNKNOWN: %+v %v", res, err)
		}
		if found {
			executed++
			periods[int(u.at.Sub(injected)/(300*time.Millisecond))]++
			if !res.Replay {
				t.Fatalf("an executed UNKNOWN did not replay on retry: %+v", res)
			}
		} else {
			notExecuted++
			if res.Replay {
				t.Fatalf("a not-executed UNKNOWN replayed: %+v", res)
			}
		}
		distinct++
	}
	st, err := lua.ReadStock(ctx, testDirect, a.Scope(0))
	if err != nil {
		t.Fatal(err)
	}
	ev := p.Fault.Evidence()
	var warmAtArms []int
	for _, r := range ev["armings"].([]armRecord) {
		warmAtArms = append(warmAtArms, r.WarmConns)
	}
	t.Logf("load: %d accepted, %d UNKNOWN (%d executed, %d not executed), %d other; executed UNKNOWNs per 300ms period: %v; arms %v, warm connections at each arming %v; stock %+v",
		accepted.Load(), len(unknowns), executed, notExecuted, other.Load(), periods, ev["arms"], warmAtArms, st)
	if st.Reserved != distinct || !st.Conserved() {
		t.Fatalf("stock reserved %d, want %d distinct reservations (accepted + resolved UNKNOWNs): a double decrement or a lost one", st.Reserved, distinct)
	}
	if executed == 0 {
		t.Fatal("no executed UNKNOWN: the fault did not cut a reply of a running script")
	}
	if len(periods) < 2 {
		t.Fatalf("executed UNKNOWNs only in periods %v: pulsing did not re-arm on re-dialled connections", periods)
	}
	if names := testProxies.ToxicNames(ev["nodes"].([]string)[0]); len(names) != 0 {
		t.Fatalf("toxics left: %v", names)
	}
}
