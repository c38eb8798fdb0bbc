package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// ---- helpers shared by the failover, slot-migration and slow-aof tests ----

// tpLoad is a small closed-loop load of reserve calls, one fresh user (and
// request) per call, that records what a runner would: acknowledgements,
// errors by kind, wire counters and the longest gap between successes.
type tpLoad struct {
	store  *lua.Store
	a      *lua.Activity
	prefix string
	seq    atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup
	ws     lua.WireStats // summed over all calls

	mu        sync.Mutex
	calls     []lua.ReserveCall
	accepted  map[string]string // user → reservation id acknowledged ACCEPTED
	answered  int
	errsBy    map[string]int
	lastOK    time.Time
	started   time.Time
	maxGap    time.Duration // longest time without a successful answer
	firstErr  time.Time
	lastErrAt time.Time
}

func tpStartLoad(t *testing.T, store *lua.Store, a *lua.Activity, prefix string, workers int) *tpLoad {
	t.Helper()
	l := &tpLoad{store: store, a: a, prefix: prefix, stop: make(chan struct{}),
		accepted: map[string]string{}, errsBy: map[string]int{}, started: time.Now(), lastOK: time.Now()}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go l.worker(t)
	}
	return l
}

func (l *tpLoad) worker(t *testing.T) {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		user := fmt.Sprintf("%s%d", l.prefix, l.seq.Add(1))
		call, err := l.store.NewReserveCall(l.a, user, "rq-"+user, time.Hour)
		if err != nil {
			t.Errorf("NewReserveCall: %v", err)
			return
		}
		ws := &lua.WireStats{}
		ctx, cancel := context.WithTimeout(lua.WithWireStats(context.Background(), ws), 3*time.Second)
		res, err := l.store.Reserve(ctx, call)
		cancel()
		now := time.Now()
		l.ws.Attempts.Add(ws.Attempts.Load())
		l.ws.TryAgain.Add(ws.TryAgain.Load())
		l.ws.Ask.Add(ws.Ask.Load())
		l.ws.Moved.Add(ws.Moved.Load())
		l.ws.NoScript.Add(ws.NoScript.Load())
		l.ws.ClusterDown.Add(ws.ClusterDown.Load())
		l.mu.Lock()
		l.calls = append(l.calls, call)
		if err == nil {
			l.answered++
			if res.Code == lua.Accepted {
				l.accepted[user] = res.ReservationID
			}
			l.maxGap = max(l.maxGap, now.Sub(l.lastOK))
			l.lastOK = now
		} else {
			l.errsBy[tpErrKind(err)]++
			if l.firstErr.IsZero() {
				l.firstErr = now
			}
			l.lastErrAt = now
		}
		l.mu.Unlock()
		if err != nil {
			time.Sleep(5 * time.Millisecond)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

// Stop ends the load and returns a one-line summary.
func (l *tpLoad) Stop() string {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maxGap = max(l.maxGap, time.Since(l.lastOK))
	var kinds []string
	for k, n := range l.errsBy {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d calls, %d answered (%d ACCEPTED), errors {%s}, wire: attempts=%d TRYAGAIN=%d ASK=%d MOVED=%d NOSCRIPT=%d CLUSTERDOWN=%d, longest gap without an answer %v",
		len(l.calls), l.answered, len(l.accepted), strings.Join(kinds, " "), l.ws.Attempts.Load(), l.ws.TryAgain.Load(),
		l.ws.Ask.Load(), l.ws.Moved.Load(), l.ws.NoScript.Load(), l.ws.ClusterDown.Load(), l.maxGap.Round(time.Millisecond))
}

func tpErrKind(err error) string {
	if lua.IsOutcomeUnknown(err) {
		return "UNKNOWN"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "DEADLINE"
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, ' '); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// verify checks, after the load stopped, that every acknowledged reservation
// still exists (no lost acks) and that the stock hash accounts exactly for
// the requests that executed (UNKNOWN outcomes resolved by lookup). It
// returns the number of lost acks; with mustKeep the test fails on any.
func (l *tpLoad) verify(t *testing.T, rdb redis.Cmdable, mustKeep bool) (lost int) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	sc := l.a.Scope(0)
	for user, rid := range l.accepted {
		_, found, err := l.store.ReadReservation(ctx, sc, rid)
		if err != nil {
			t.Fatalf("read reservation of %s: %v", user, err)
		}
		if !found {
			lost++
		}
	}
	executed := 0
	for _, call := range l.calls {
		r, found, err := l.store.LookupRequest(ctx, call.Scope, call.RequestID)
		if err != nil {
			t.Fatalf("lookup %s: %v", call.RequestID, err)
		}
		if found && r.Code == lua.Accepted {
			executed++
		}
	}
	st, err := lua.ReadStock(ctx, rdb, sc)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Conserved() {
		t.Errorf("stock not conserved: %+v", st)
	}
	t.Logf("verify %s: %d acked, %d lost; %d executed ACCEPTED by lookup; stock %+v", l.prefix, len(l.accepted), lost, executed, st)
	if mustKeep {
		if lost > 0 {
			t.Errorf("%d acknowledged reservations lost", lost)
		}
	}
	return lost
}

// tpReserveN reserves n fresh users sequentially, each retried until it gets
// an answer (within 10s), and requires ACCEPTED.
func tpReserveN(t *testing.T, store *lua.Store, a *lua.Activity, prefix string, n int) time.Duration {
	t.Helper()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		user := fmt.Sprintf("%s%d", prefix, i)
		call, err := store.NewReserveCall(a, user, "rq-"+user, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			res, err := store.Reserve(ctx, call)
			cancel()
			if err == nil {
				if res.Code != lua.Accepted {
					t.Fatalf("reserve %s after the fault: %s", user, res.Code)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("reserve %s after the fault: still failing: %v", user, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return time.Since(t0)
}

func tpPlan(t *testing.T, text string) *Planned {
	t.Helper()
	p, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return p
}

// tpOwnEnv is an own cluster (no proxies), a hardened direct client, a store
// and a fresh one-bucket activity with a big stock.
func tpOwnEnv(t *testing.T, stock int64) (*compose.LocalCluster, *redis.ClusterClient, *lua.Store, *lua.Activity, *Env) {
	t.Helper()
	// Its own cluster: the tests on it fail masters over and move slots.
	c := startOwnCluster(t, compose.Options{})
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 32, ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	store := lua.NewStore(rdb, lua.Embedded(), testSecret)
	a := newActivityOn(t, rdb, stock, 1)
	slot := compose.KeySlot(a.Scope(0).StockKey())
	env := &Env{Cluster: c, Client: rdb, HotSlots: []int{slot}, Logf: t.Logf}
	return c, rdb, store, a, env
}

func tpHeal(t *testing.T, p *Planned, env *Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Fault.Heal(ctx, env); err != nil {
		t.Fatalf("heal: %v", err)
	}
}

func tpEvidence(t *testing.T, f Fault) map[string]any {
	t.Helper()
	ev := f.Evidence()
	t.Logf("evidence of %s: %v", f.Kind(), ev)
	return ev
}

// ---- failover ----

func TestFailoverParams(t *testing.T) {
	for _, bad := range []string{
		"failover:mode=bogus", "failover:mode=kill,pause=1s", "failover:wait=-1s",
		"failover:failback=maybe", "failover:nope=1", "failover:target=elsewhere",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	p := tpPlan(t, "failover:mode=pause,pause=3s,wait=20s,failback=true,target=hot-master")
	f := p.Fault.(*Failover)
	if f.cfg.mode != FailoverPause || f.cfg.pause != 3*time.Second || f.cfg.wait != 20*time.Second || !f.cfg.failback {
		t.Fatalf("%+v", f)
	}
	// Heal before Inject is a no-op.
	if err := f.Heal(context.Background(), &Env{}); err != nil {
		t.Fatal(err)
	}
}

// TestFailover runs every mode, one after the other, on one own cluster:
// each leaves it healthy (with a different master of the hot slot).
func TestFailover(t *testing.T) {
	clustertest.Need(t)
	c, rdb, store, a, env := tpOwnEnv(t, 1_000_000)
	slot := env.HotSlots[0]
	ctx := ctxT(t, 120*time.Second)

	t.Run("graceful", func(t *testing.T) {
		old, err := c.MasterOfSlot(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		tpReserveN(t, store, a, "gpre", 20)
		load := tpStartLoad(t, store, a, "g", 4)
		time.Sleep(300 * time.Millisecond)
		p := tpPlan(t, "failover:mode=graceful")
		if err := p.Fault.Inject(ctx, env); err != nil {
			load.Stop()
			t.Fatalf("inject: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
		t.Log("load: ", load.Stop())
		ev := tpEvidence(t, p.Fault)

		// The owner changed, as every node's CLUSTER NODES says.
		nodes, err := c.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var owner compose.Node
		for _, n := range nodes {
			if n.Role == "master" && n.HasSlot(slot) {
				owner = n
			}
		}
		if owner.ID == "" || owner.ID == old.ID {
			t.Fatalf("slot %d still owned by the old master %s", slot, old.Addr)
		}
		if nm := ev["new_master"].(map[string]any); nm["id"] != owner.ID {
			t.Errorf("evidence new_master %v, CLUSTER NODES says %s", nm, owner.ID)
		}
		if err := c.WaitSlotOwner(ctx, slot, owner.ID); err != nil {
			t.Fatal(err)
		}
		if _, ok := ev["recovery_ms"].(float64); !ok {
			t.Errorf("no recovery_ms in %v", ev)
		}
		tpHeal(t, p, env)
		// After heal (all views agree): the old master serves as a replica of the new one.
		if n, _ := c.NodeByAddr(old.Addr); n.Role != "replica" || n.MasterID != owner.ID {
			t.Errorf("old master after a graceful failover: %+v, want a replica of %s", n, owner.ID)
		}
		d := tpReserveN(t, store, a, "gpost", 20)
		t.Logf("20 reserves after the failover took %v", d)
		if lost := load.verify(t, rdb, true); lost != 0 {
			t.Errorf("graceful failover lost %d acks", lost)
		}
		// Heal twice is fine.
		tpHeal(t, p, env)
	})

	t.Run("kill", func(t *testing.T) {
		old, err := c.MasterOfSlot(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		pre := tpStartLoad(t, store, a, "kpre", 4)
		time.Sleep(200 * time.Millisecond)
		t.Log("pre-load: ", pre.Stop())
		// Make sure the replica has every acknowledged write before the kill.
		adm, err := c.Admin(old.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := adm.Do(ctx, "WAIT", 1, 2000).Int(); err != nil || n < 1 {
			t.Fatalf("WAIT 1 2000: %d %v", n, err)
		}
		load := tpStartLoad(t, store, a, "k", 4)
		time.Sleep(200 * time.Millisecond)
		p := tpPlan(t, "failover:mode=kill,wait=15s")
		t0 := time.Now()
		err = p.Fault.Inject(ctx, env)
		took := time.Since(t0)
		time.Sleep(300 * time.Millisecond)
		t.Log("load: ", load.Stop())
		if err != nil {
			tpHeal(t, p, env)
			t.Fatalf("inject: %v", err)
		}
		ev := tpEvidence(t, p.Fault)
		if rec := ev["recovery_ms"].(float64); rec > 10_000 {
			t.Errorf("recovery took %.0f ms, want < 10 s", rec)
		}
		if ev["automatic_failover"] != true {
			t.Errorf("automatic_failover = %v", ev["automatic_failover"])
		}
		owner, err := c.MasterOfSlot(ctx, slot)
		if err != nil || owner.ID == old.ID {
			t.Fatalf("owner after kill: %v %v", owner, err)
		}
		t.Logf("new master %s after %v", owner.Addr, took.Round(time.Millisecond))
		d := tpReserveN(t, store, a, "kpost", 10)
		t.Logf("10 reserves after the kill took %v", d)

		tpHeal(t, p, env)
		n, ok := c.NodeByAddr(old.Addr)
		if !ok || n.Role != "replica" || n.MasterID != owner.ID || n.PID == 0 {
			t.Fatalf("old master after heal: %+v, want a running replica of %s", n, owner.ID)
		}
		if err := c.WaitHealthy(ctx); err != nil {
			t.Fatal(err)
		}
		ev = tpEvidence(t, p.Fault)
		if ev["restarted_as_replica"] != true || ev["cluster_healthy_after_heal"] != true {
			t.Errorf("evidence after heal: %v", ev)
		}
		pre.verify(t, rdb, true) // acked and replicated before the kill: kept
		lost := load.verify(t, rdb, false)
		t.Logf("acks lost by the kill (asynchronous replication, in flight at SIGKILL): %d", lost)
	})

	t.Run("pause-short", func(t *testing.T) {
		old, err := c.MasterOfSlot(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		p := tpPlan(t, "failover:mode=pause,pause=500ms")
		t0 := time.Now()
		if err := p.Fault.Inject(ctx, env); err != nil {
			t.Fatalf("inject: %v", err)
		}
		if d := time.Since(t0); d < 500*time.Millisecond {
			t.Errorf("Inject returned after %v, before the pause ended", d)
		}
		tpHeal(t, p, env)
		ev := tpEvidence(t, p.Fault)
		if ev["automatic_failover"] != false {
			t.Errorf("a 500ms pause (node-timeout 2s) should not fail over: %v", ev)
		}
		if owner, _ := c.MasterOfSlot(ctx, slot); owner.ID != old.ID {
			t.Errorf("owner changed to %s", owner.Addr)
		}
		tpReserveN(t, store, a, "pspost", 5)
	})

	t.Run("pause-until-heal", func(t *testing.T) {
		old, err := c.MasterOfSlot(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		load := tpStartLoad(t, store, a, "p", 4)
		p := tpPlan(t, "failover:mode=pause")
		if err := p.Fault.Inject(ctx, env); err != nil {
			load.Stop()
			t.Fatalf("inject: %v", err)
		}
		if n, _ := c.NodeByAddr(old.Addr); !n.Paused {
			t.Errorf("%s not paused after Inject", old.Addr)
		}
		// node-timeout is 2s: the cluster should elect the replica by itself.
		deadline := time.Now().Add(12 * time.Second)
		for p.Fault.Evidence()["automatic_failover"] != true && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		t.Log("load: ", load.Stop())
		tpHeal(t, p, env)
		ev := tpEvidence(t, p.Fault)
		if ev["automatic_failover"] != true {
			t.Fatalf("no automatic failover while paused: %v", ev)
		}
		n, _ := c.NodeByAddr(old.Addr)
		if n.Paused || n.PID == 0 || n.Role != "replica" {
			t.Errorf("old master after heal: %+v, want a running, resumed replica", n)
		}
		if err := c.WaitHealthy(ctx); err != nil {
			t.Fatal(err)
		}
		tpReserveN(t, store, a, "ppost", 10)
		lost := load.verify(t, rdb, false)
		t.Logf("acks lost by the pause failover: %d", lost)
	})

	t.Run("takeover-failback", func(t *testing.T) {
		old, err := c.MasterOfSlot(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		p := tpPlan(t, "failover:mode=takeover,failback=true")
		if err := p.Fault.Inject(ctx, env); err != nil {
			t.Fatalf("inject: %v", err)
		}
		if owner, _ := c.MasterOfSlot(ctx, slot); owner.ID == old.ID {
			t.Fatal("TAKEOVER did not move the slot")
		}
		tpHeal(t, p, env)
		ev := tpEvidence(t, p.Fault)
		if owner, _ := c.MasterOfSlot(ctx, slot); owner.ID != old.ID || ev["failed_back"] != true {
			t.Fatalf("failback: owner %s, evidence %v", owner.Addr, ev)
		}
		tpReserveN(t, store, a, "tpost", 5)
	})
}
