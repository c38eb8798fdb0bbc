package serve

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// Every endpoint and code of the contract over real HTTP, against the
// real cluster, and the ids equal to the harness's.
func TestEndpointsAndCodes(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 2, 1)
	s := startService(t, Config{SoldOutTTL: -1})
	if r := s.do(t, "GET", "/healthz", nil); r.Status != http.StatusOK {
		t.Fatalf("healthz: %d %s", r.Status, r.Raw)
	}
	r := s.reserve(t, a, "u1", "r1")
	if r.Status != 200 || r.Code != "ACCEPTED" || r.RequestID != "r1" || r.ReservationID != rid(a, "u1", "r1") || r.Bucket == nil || *r.Bucket != 0 || r.Retryable {
		t.Fatalf("first reserve: %d %s; want 200 ACCEPTED with the harness's reservation id %s", r.Status, r.Raw, rid(a, "u1", "r1"))
	}
	if again := s.reserve(t, a, "u1", "r1"); again.Code != "ACCEPTED" || again.ReservationID != r.ReservationID {
		t.Fatalf("same request again: %s; want the first answer replayed", again.Raw)
	}
	if dup := s.reserve(t, a, "u1", "r2"); dup.Code != "USER_ALREADY_RESERVED" || dup.ReservationID != r.ReservationID || dup.Status != 200 {
		t.Fatalf("second request of u1: %d %s; want USER_ALREADY_RESERVED naming %s", dup.Status, dup.Raw, r.ReservationID)
	}
	if ok := s.reserve(t, a, "u2", "r3"); ok.Code != "ACCEPTED" {
		t.Fatalf("u2: %s", ok.Raw)
	}
	if so := s.reserve(t, a, "u3", "r4"); so.Code != "SOLD_OUT" || so.Status != 200 || so.Retryable || so.ReservationID != "" || so.Source != "" {
		t.Fatalf("u3 after the stock is gone: %d %s; want 200 SOLD_OUT", so.Status, so.Raw)
	}
	for name, body := range map[string]string{
		"not JSON":   `{"activity_id":`,
		"bad id":     `{"activity_id":"` + a.ID + `","user_id":"u 1","request_id":"r9"}`,
		"no request": `{"activity_id":"` + a.ID + `","user_id":"u9"}`,
		"amount 2":   `{"activity_id":"` + a.ID + `","user_id":"u9","request_id":"r9","amount":2}`,
	} {
		resp, err := httpClient.Post(s.url+"/v1/reserve", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, want 400 INVALID", name, resp.StatusCode)
		}
	}
	if inv := s.do(t, "POST", "/v1/reserve", map[string]any{"activity_id": a.ID, "user_id": "u9", "request_id": "r9", "amount": 2}); inv.Code != "INVALID" || inv.Retryable || inv.RequestID != "r9" {
		t.Fatalf("amount 2: %s", inv.Raw)
	}
	if cm := s.do(t, "POST", "/v1/reserve", map[string]any{"activity_id": a.ID + "x", "user_id": "u1", "request_id": "r1"}); cm.Code != "CONFIG_MISSING" {
		t.Fatalf("unknown activity: %s", cm.Raw)
	}
	// The query endpoint.
	if q := s.query(t, a, "u1", "r1"); q.Status != 200 || q.Code != "ACCEPTED" || q.ReservationID != r.ReservationID {
		t.Fatalf("query r1: %d %s", q.Status, q.Raw)
	}
	if q := s.query(t, a, "u1", "never"); q.Status != http.StatusNotFound || q.Code != "NOT_FOUND" || q.RequestID != "never" {
		t.Fatalf("query of a request never sent: %d %s; want 404 NOT_FOUND", q.Status, q.Raw)
	}
	if q := s.query(t, a, "u2", "r1"); q.Code != "REQUEST_ID_CONFLICT" || q.ReservationID != "" {
		t.Fatalf("query of u1's request as u2: %s; want REQUEST_ID_CONFLICT without the reservation", q.Raw)
	}
	// Release: compensate.lua's codes.
	if rel := s.release(t, a, "u1", r.ReservationID); rel.Code != "RELEASED" || rel.Status != 200 {
		t.Fatalf("release: %d %s", rel.Status, rel.Raw)
	}
	if rel := s.release(t, a, "u1", r.ReservationID); rel.Code != "ALREADY_RELEASED" {
		t.Fatalf("release again: %s", rel.Raw)
	}
	if rel := s.release(t, a, "u1", "nosuchreservation"); rel.Code != "NOT_FOUND" {
		t.Fatalf("release of an unknown reservation: %s", rel.Raw)
	}
	if after := s.reserve(t, a, "u4", "r5"); after.Code != "ACCEPTED" {
		t.Fatalf("after the release one unit is back: %s", after.Raw)
	}
	st, err := lua.ReadStock(ctxT(t, 5*time.Second), testRDB, a.Scope(0))
	if err != nil || st.Available != 0 || st.Reserved != 2 || !st.Conserved() {
		t.Fatalf("stock read directly: %+v %v; want 0 available, 2 reserved", st, err)
	}
	if v := s.metric(t, `reserve_lua_rc_total{code="ACCEPTED"}`); v < 3 {
		t.Fatalf("reserve_lua_rc_total ACCEPTED = %v, want >= 3", v)
	}
}

// The service routes users to the harness's buckets (lua.BucketFor) and
// finds the bucket count in Redis.
func TestBucketsAreTheHarnesss(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 40, 8)
	s := startService(t, Config{SoldOutTTL: -1})
	seen := map[uint32]bool{}
	for i := 0; i < 24; i++ {
		u, q := "u"+string(rune('a'+i)), "r"+string(rune('a'+i))
		r := s.reserve(t, a, u, q)
		if r.Code != "ACCEPTED" || r.Bucket == nil || *r.Bucket != a.BucketOf(u) || r.ReservationID != rid(a, u, q) {
			t.Fatalf("user %s: %s; want ACCEPTED in bucket %d", u, r.Raw, a.BucketOf(u))
		}
		seen[*r.Bucket] = true
	}
	if len(seen) < 4 {
		t.Fatalf("24 users landed in %d buckets of 8", len(seen))
	}
}

// The local sold-out flag answers SOLD_OUT without Redis for its TTL
// after Redis did, and is never the final truth: a unit released while it
// holds is sold again once it expires.
func TestLocalSoldOutFlag(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 1, 1)
	ttl := 1500 * time.Millisecond
	s := startService(t, Config{SoldOutTTL: ttl})
	first := s.reserve(t, a, "u1", "r1")
	if first.Code != "ACCEPTED" {
		t.Fatalf("first: %s", first.Raw)
	}
	// The flag's subscription is made in the background: ask until the
	// flag answers.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; s.metric(t, "serve_local_soldout_total") == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("the local sold-out flag never answered")
		}
		if r := s.reserve(t, a, "u2", "rs"+string(rune('a'+i%26))+time.Now().Format("150405.000")[7:]); r.Code != "SOLD_OUT" {
			t.Fatalf("sold out: %s", r.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rel := s.release(t, a, "u1", first.ReservationID); rel.Code != "RELEASED" {
		t.Fatalf("release: %s", rel.Raw)
	}
	if r := s.reserve(t, a, "u3", "r-flag"); r.Code != "SOLD_OUT" || r.Source != SourceLocalFlag {
		t.Fatalf("right after the release: %s; want SOLD_OUT from the flag, source %s (it holds for %s)", r.Raw, SourceLocalFlag, ttl)
	}
	if _, found, _ := testStore.LookupRequest(ctxT(t, 5*time.Second), a.Scope(0), "r-flag"); found {
		t.Fatal("the flag's SOLD_OUT reached Redis: want it answered locally")
	}
	time.Sleep(ttl + 200*time.Millisecond)
	if r := s.reserve(t, a, "u3", "r-after"); r.Code != "ACCEPTED" {
		t.Fatalf("after the flag's TTL: %s; want ACCEPTED (the flag is not the final truth)", r.Raw)
	}
}
