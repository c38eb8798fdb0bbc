package serve

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// deadlineSlack is what an answer may take beyond the service's deadline
// on a loaded machine (HTTP and scheduling), in the bound checks below.
const deadlineSlack = 500 * time.Millisecond

// faultCfg is a service with short bounds, so faults are answered quickly.
func faultCfg() Config {
	return Config{SoldOutTTL: -1, Timeout: 800 * time.Millisecond, RedisTimeout: 200 * time.Millisecond, BreakerHold: 300 * time.Millisecond}
}

// failClosed sends n requests of new users while a fault holds and checks
// every answer: within the deadline, never ACCEPTED, SYSTEM_BUSY with
// retryable and the original request_id (or OUTCOME_UNKNOWN when allowed).
func failClosed(t *testing.T, s served, a *lua.Activity, tag string, n int, unknownOK bool) (busy, unknown []string) {
	t.Helper()
	for i := 0; i < n; i++ {
		u, q := fmt.Sprintf("%s-u%d", tag, i), fmt.Sprintf("%s-r%d", tag, i)
		r := s.reserve(t, a, u, q)
		if r.Took > s.svc.cfg.Timeout+deadlineSlack {
			t.Errorf("%s: answered after %v, deadline %v", q, r.Took, s.svc.cfg.Timeout)
		}
		if r.RequestID != q {
			t.Errorf("%s: answer carries request_id %q, want the original", q, r.RequestID)
		}
		switch {
		case r.Code == CodeSystemBusy && r.Status == http.StatusServiceUnavailable && r.Retryable:
			busy = append(busy, q)
		case unknownOK && r.Code == CodeOutcomeUnknown && r.Status == http.StatusGatewayTimeout && r.Retryable:
			unknown = append(unknown, q)
		default:
			t.Errorf("%s while the fault holds: %d %s; want 503 SYSTEM_BUSY retryable", q, r.Status, r.Raw)
		}
	}
	return busy, unknown
}

// nothingReserved checks that no request of reqs (of users tag-uI) ran.
func nothingReserved(t *testing.T, s served, a *lua.Activity, tag string, reqs []string) {
	t.Helper()
	for _, q := range reqs {
		var i int
		_, _ = fmt.Sscanf(q, tag+"-r%d", &i)
		r := s.query(t, a, fmt.Sprintf("%s-u%d", tag, i), q)
		for end := time.Now().Add(5 * time.Second); r.Code == CodeSystemBusy && time.Now().Before(end); {
			time.Sleep(100 * time.Millisecond) // the node's proxy may still be coming back
			r = s.query(t, a, fmt.Sprintf("%s-u%d", tag, i), q)
		}
		if r.Code != CodeNotFound {
			t.Errorf("%s was answered SYSTEM_BUSY, the query now says %s; want NOT_FOUND (it never ran)", q, r.Raw)
		}
	}
}

// A node the service cannot reach (its proxy closed: connections refused
// and cut) is answered SYSTEM_BUSY at once: fail closed, nothing reserved.
func TestFailClosedNodeDown(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 1)
	node := masterOf(t, a, 0)
	s := startService(t, faultCfg())
	if r := s.reserve(t, a, "warm", "warm"); r.Code != "ACCEPTED" {
		t.Fatalf("before the fault: %s", r.Raw)
	}
	if err := testProxies.Disable(node); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	busy, _ := failClosed(t, s, a, "down", 5, false)
	t.Logf("node down: 5 answers SYSTEM_BUSY in %v", time.Since(t0))
	if q := s.query(t, a, "warm", "warm"); q.Status != http.StatusServiceUnavailable || q.Code != CodeSystemBusy || !q.Retryable {
		t.Errorf("query while the node is down: %d %s; want 503 SYSTEM_BUSY (never NOT_FOUND: it would invite a new request)", q.Status, q.Raw)
	}
	if err := testProxies.Enable(node); err != nil {
		t.Fatal(err)
	}
	time.Sleep(s.svc.cfg.BreakerHold)
	nothingReserved(t, s, a, "down", busy)
	st, err := lua.ReadStock(ctxT(t, 5*time.Second), testRDB, a.Scope(0))
	if err != nil || st.Reserved != 1 {
		t.Fatalf("stock after the fault: %+v %v; want only the warm-up's unit reserved", st, err)
	}
	if r := s.reserve(t, a, "after", "after"); r.Code != "ACCEPTED" {
		t.Fatalf("after the node is back: %s", r.Raw)
	}
}

// A paused master (SIGSTOP: connections accepted, nothing answered) gets
// OUTCOME_UNKNOWN for the calls that reached it and SYSTEM_BUSY from the
// node's open circuit for the rest, each within the deadline; none is
// ACCEPTED, and the SYSTEM_BUSY ones never ran.
func TestFailClosedNodePaused(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 1)
	node := masterOf(t, a, 0)
	s := startService(t, faultCfg())
	if r := s.reserve(t, a, "warm", "warm"); r.Code != "ACCEPTED" {
		t.Fatalf("before the fault: %s", r.Raw)
	}
	if err := testCluster.Pause(node); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = testCluster.Resume(node) }()
	busy, unknown := failClosed(t, s, a, "paused", 6, true)
	if err := testCluster.Resume(node); err != nil {
		t.Fatal(err)
	}
	if len(unknown) == 0 || len(busy) == 0 {
		t.Fatalf("while paused: %d OUTCOME_UNKNOWN, %d SYSTEM_BUSY; want the first calls unknown and the node's circuit answering the rest", len(unknown), len(busy))
	}
	time.Sleep(s.svc.cfg.BreakerHold + 200*time.Millisecond)
	nothingReserved(t, s, a, "paused", busy)
	t.Logf("paused master: %d unknown, %d busy", len(unknown), len(busy))
}

// A reply that does not come in time is OUTCOME_UNKNOWN (504, retryable,
// the original request_id), after a bounded re-send of the very same
// call; the script did run, and re-sending the same request replays it.
func TestOutcomeUnknownOnTimeout(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 1)
	node := masterOf(t, a, 0)
	s := startService(t, faultCfg())
	warmConns(t, s, a) // the re-send is written on an idle connection
	heal := withLatency(t, node, 600*time.Millisecond)
	r := s.reserve(t, a, "u1", "r1")
	heal()
	if r.Code != CodeOutcomeUnknown || r.Status != http.StatusGatewayTimeout || !r.Retryable || r.RequestID != "r1" {
		t.Fatalf("reserve with replies 600ms late (call bound 200ms): %d %s; want 504 OUTCOME_UNKNOWN retryable for r1", r.Status, r.Raw)
	}
	if r.Took > s.svc.cfg.Timeout+deadlineSlack {
		t.Errorf("answered after %v, deadline %v", r.Took, s.svc.cfg.Timeout)
	}
	if v := s.metric(t, "redis_outcome_unknown_total"); v < 1 {
		t.Errorf("redis_outcome_unknown_total = %v", v)
	}
	time.Sleep(s.svc.cfg.BreakerHold)
	res, found, err := testStore.ReadReservation(ctxT(t, 5*time.Second), a.Scope(0), rid(a, "u1", "r1"))
	if err != nil || !found || res.RequestID != "r1" || res.Status != lua.StatusReserved {
		t.Fatalf("the reservation in Redis: %+v found=%v %v; want RESERVED by r1 (the script ran, the reply was late)", res, found, err)
	}
	if q := s.query(t, a, "u1", "r1"); q.Code != "ACCEPTED" || q.ReservationID != rid(a, "u1", "r1") {
		t.Fatalf("query after the fault: %s", q.Raw)
	}
	if again := s.reserve(t, a, "u1", "r1"); again.Code != "ACCEPTED" || again.ReservationID != rid(a, "u1", "r1") {
		t.Fatalf("the same request again: %s; want ACCEPTED replayed", again.Raw)
	}
	st, _ := lua.ReadStock(ctxT(t, 5*time.Second), testRDB, a.Scope(0))
	if st.Reserved != 5 {
		t.Fatalf("stock: %+v; want 5 reserved (4 warm-ups and r1, once)", st)
	}
}

// OOM stops reservations: SYSTEM_BUSY, and for the hold no request asks Redis.
func TestOOMStopsReserving(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 1)
	node := masterOf(t, a, 0)
	s := startService(t, faultCfg())
	if r := s.reserve(t, a, "warm", "warm"); r.Code != "ACCEPTED" {
		t.Fatalf("before the fault: %s", r.Raw)
	}
	admin, err := testCluster.Admin(node)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctxT(t, 5*time.Second), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.ConfigSet(ctxT(t, 5*time.Second), "maxmemory", "0")
	r := s.reserve(t, a, "u1", "r1")
	if r.Code != CodeSystemBusy || !r.Retryable {
		t.Fatalf("reserve on a node over maxmemory: %s; want SYSTEM_BUSY", r.Raw)
	}
	if err := admin.ConfigSet(ctxT(t, 5*time.Second), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	before := s.metric(t, `redis_call_errors_total{kind="oom"}`)
	if r := s.reserve(t, a, "u2", "r2"); r.Code != CodeSystemBusy {
		t.Fatalf("within the OOM hold: %s; want SYSTEM_BUSY without asking Redis", r.Raw)
	}
	if after := s.metric(t, `redis_call_errors_total{kind="oom"}`); after != before || before < 1 {
		t.Fatalf("oom errors %v then %v: want one OOM answer and no call during the hold", before, after)
	}
	time.Sleep(s.svc.cfg.BreakerHold + 100*time.Millisecond)
	if r := s.reserve(t, a, "u3", "r3"); r.Code != "ACCEPTED" {
		t.Fatalf("after the hold: %s", r.Raw)
	}
}
