package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

func TestParseDefects(t *testing.T) {
	set, err := ParseDefects([]string{"fail-open,timeout-is-failure", "retry-without-ids"})
	if err != nil || !set.Has(DefectFailOpen) || !set.Has(DefectTimeoutIsFailure) || !set.Has(DefectRetryWithoutIDs) || set.Has(DefectNewRequestIDOnTimeout) {
		t.Fatalf("ParseDefects: %v %v", set, err)
	}
	_, err = ParseDefects([]string{"nope"})
	if err == nil {
		t.Fatal("unknown defect accepted")
	}
	for _, n := range DefectNames() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name the known defect %s", err, n)
		}
	}
}

// timeoutCase is a reserve of u1/r1 whose replies come 600ms late (the
// call's bound is 200ms): the script runs, its reply is lost.
func timeoutCase(t *testing.T, d Defect) (served, *lua.Activity, reply) {
	t.Helper()
	a := newActivity(t, 10, 1)
	node := masterOf(t, a, 0)
	cfg := faultCfg()
	cfg.Defects = DefectSet{d: true}
	s := startService(t, cfg)
	warmConns(t, s, a)
	heal := withLatency(t, node, 600*time.Millisecond)
	r := s.reserve(t, a, "u1", "r1")
	heal()
	time.Sleep(time.Second) // the late scripts have run; compensations are done
	return s, a, r
}

// warmConns leaves a few idle connections in the service's pool (four
// reserves at once), so a re-send after a timeout is written on one of
// them instead of waiting for a new connection's handshake.
func warmConns(t *testing.T, s served, a *lua.Activity) {
	t.Helper()
	errs := make(chan string, 4)
	for i := 0; i < 4; i++ {
		go func() {
			u := fmt.Sprintf("warm%d", i)
			b, _ := json.Marshal(map[string]any{"activity_id": a.ID, "user_id": u, "request_id": u})
			resp, err := httpClient.Post(s.url+"/v1/reserve", "application/json", bytes.NewReader(b))
			if err != nil {
				errs <- err.Error()
				return
			}
			resp.Body.Close()
			errs <- fmt.Sprint(resp.StatusCode)
		}()
	}
	for i := 0; i < 4; i++ {
		if e := <-errs; e != "200" {
			t.Fatalf("warm-up reserve: %s", e)
		}
	}
}

// new-request-id-on-timeout: the answer names a request_id the client
// never sent.
func TestDefectNewRequestIDOnTimeout(t *testing.T) {
	clustertest.Need(t)
	_, a, r := timeoutCase(t, DefectNewRequestIDOnTimeout)
	if r.RequestID == "r1" || !strings.HasPrefix(r.RequestID, "r1-re") {
		t.Fatalf("answer: %s; want a new request_id (the defect re-sent r1 under another)", r.Raw)
	}
	// The reservation id was kept: the re-send met r1's reservation
	// (RESERVATION_ID_CONFLICT, not cached), which is r1's.
	res, found, err := testStore.ReadReservation(ctxT(t, 5*time.Second), a.Scope(0), rid(a, "u1", "r1"))
	if err != nil || !found || res.RequestID != "r1" {
		t.Fatalf("reservation of r1: %+v found=%v %v", res, found, err)
	}
	t.Logf("answer %s", r.Raw)
}

// retry-without-ids: the re-send carries a new request_id and a new
// reservation_id; Redis holds a result for a request nobody sent.
func TestDefectRetryWithoutIDs(t *testing.T) {
	clustertest.Need(t)
	_, a, r := timeoutCase(t, DefectRetryWithoutIDs)
	if r.RequestID == "r1" {
		t.Fatalf("answer: %s; want the re-sent request's new request_id", r.Raw)
	}
	got, found, err := testStore.LookupRequest(ctxT(t, 5*time.Second), a.Scope(0), r.RequestID)
	if err != nil || !found {
		t.Fatalf("Redis has no result for the new request_id %s: %v", r.RequestID, err)
	}
	if got.ReservationID == rid(a, "u1", "r1") && got.Code == lua.Accepted {
		t.Fatalf("the re-send kept the reservation id: %+v", got)
	}
	if newRID := rid(a, "u1", r.RequestID); newRID == rid(a, "u1", "r1") {
		t.Fatal("derived ids collide")
	}
	t.Logf("answer %s; Redis holds %+v for the request nobody sent", r.Raw, got)
}

// timeout-is-failure: a timeout is answered FAILED, not retryable, and the
// reservation the script made is compensated at once.
func TestDefectTimeoutIsFailure(t *testing.T) {
	clustertest.Need(t)
	_, a, r := timeoutCase(t, DefectTimeoutIsFailure)
	if r.Code != CodeFailed || r.Retryable || r.Status != http.StatusOK || r.RequestID != "r1" {
		t.Fatalf("answer: %d %s; want 200 FAILED retryable=false", r.Status, r.Raw)
	}
	var res lua.Reservation
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		res, _, _ = testStore.ReadReservation(ctxT(t, 5*time.Second), a.Scope(0), rid(a, "u1", "r1"))
		if res.Status == lua.StatusReleased {
			break
		}
	}
	if res.Status != lua.StatusReleased {
		t.Fatalf("reservation of r1: %+v; want it RELEASED by the defect's compensation", res)
	}
}

// fail-open: while the node is unreachable the defect answers ACCEPTED
// from a local counter; Redis never saw the request.
func TestDefectFailOpen(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 1)
	node := masterOf(t, a, 0)
	cfg := faultCfg()
	cfg.Defects = DefectSet{DefectFailOpen: true}
	s := startService(t, cfg)
	if r := s.reserve(t, a, "warm", "warm"); r.Code != "ACCEPTED" {
		t.Fatalf("before the fault: %s", r.Raw)
	}
	if err := testProxies.Disable(node); err != nil {
		t.Fatal(err)
	}
	r := s.reserve(t, a, "u1", "r1")
	if err := testProxies.Enable(node); err != nil {
		t.Fatal(err)
	}
	if r.Code != "ACCEPTED" || r.ReservationID != rid(a, "u1", "r1") {
		t.Fatalf("while the master is unreachable: %s; want the defect's ACCEPTED", r.Raw)
	}
	var found bool
	var err error
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, found, err = testStore.ReadReservation(ctxT(t, 5*time.Second), a.Scope(0), r.ReservationID); err == nil {
			break
		}
	}
	if err != nil || found {
		t.Fatalf("reservation %s in Redis: found=%v %v; want none (accepted without Redis)", r.ReservationID, found, err)
	}
	if v := s.metric(t, "serve_fail_open_total"); v < 1 {
		t.Fatalf("serve_fail_open_total = %v", v)
	}
}
