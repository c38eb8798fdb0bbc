package httpsut

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// fixedService is a real HTTP server on loopback that answers each
// request by the user it names: a fixed JSON answer per user, as the
// HTTP contract's service would. It counts the connections it accepted.
type fixedService struct {
	srv   *httptest.Server
	conns atomic.Int64
	seen  atomic.Int64
}

func newFixedService(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body map[string]any)) *fixedService {
	t.Helper()
	fs := &fixedService{}
	fs.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.seen.Add(1)
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		answer(w, r, body)
	}))
	fs.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			fs.conns.Add(1)
		}
	}
	fs.srv.Start()
	t.Cleanup(fs.srv.Close)
	return fs
}

func writeJSON(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// contractAnswer answers as the contract says for the user's fate:
// u-ok ACCEPTED, u-sold SOLD_OUT, u-busy SYSTEM_BUSY, u-busy-bad
// SYSTEM_BUSY with retryable=false and another request id, u-unknown
// OUTCOME_UNKNOWN (its query answers ACCEPTED), u-slow no answer within
// the deadline, u-invalid INVALID.
func contractAnswer(w http.ResponseWriter, r *http.Request, body map[string]any) {
	user, req := fmt.Sprint(body["user_id"]), fmt.Sprint(body["request_id"])
	if r.Method == http.MethodGet { // the query endpoint
		user, req = r.URL.Query().Get("user_id"), strings.TrimPrefix(r.URL.Path, "/v1/reserve/")
		if user == "u-unknown" {
			writeJSON(w, 200, map[string]any{"code": "ACCEPTED", "request_id": req, "reservation_id": "rid-of-" + req, "retryable": false})
			return
		}
		writeJSON(w, 404, map[string]any{"code": "NOT_FOUND", "request_id": req})
		return
	}
	if r.URL.Path == "/v1/release" { // RELEASED for the id u-ok's ACCEPTED named, else NOT_FOUND
		code := "NOT_FOUND"
		if body["reservation_id"] == "rid-req-u-ok" {
			code = "RELEASED"
		}
		writeJSON(w, 200, map[string]any{"code": code, "reservation_id": body["reservation_id"]})
		return
	}
	switch user {
	case "u-ok":
		writeJSON(w, 200, map[string]any{"code": "ACCEPTED", "request_id": req, "reservation_id": "rid-" + req, "retryable": false})
	case "u-sold":
		writeJSON(w, 200, map[string]any{"code": "SOLD_OUT", "request_id": req, "retryable": false})
	case "u-flag":
		writeJSON(w, 200, map[string]any{"code": "SOLD_OUT", "request_id": req, "retryable": false, "source": "local_flag"})
	case "u-busy":
		writeJSON(w, 503, map[string]any{"code": "SYSTEM_BUSY", "request_id": req, "retryable": true})
	case "u-busy-bad":
		writeJSON(w, 503, map[string]any{"code": "SYSTEM_BUSY", "request_id": "new-" + req, "retryable": false})
	case "u-unknown":
		writeJSON(w, 504, map[string]any{"code": "OUTCOME_UNKNOWN", "request_id": req, "retryable": true})
	case "u-slow":
		time.Sleep(300 * time.Millisecond)
		writeJSON(w, 200, map[string]any{"code": "ACCEPTED", "request_id": req})
	default:
		writeJSON(w, 400, map[string]any{"code": "INVALID", "request_id": req, "retryable": false})
	}
}

func newTestSystem(t *testing.T, url string, m *Mapping) (*System, *lua.Activity, *lua.Store) {
	t.Helper()
	s, err := New(url, m, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	a := lua.NewActivity("act1", "sku1", 10, 1, time.Hour)
	if err := s.Setup(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return s, a, lua.NewStore(nil, lua.Embedded(), []byte("httpsut-test"))
}

func mappingWith(t testing.TB, yaml string) *Mapping {
	t.Helper()
	p := filepath.Join(t.TempDir(), "svc.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadMapping(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Each answer of the contract becomes what the engine needs: a business
// code, a fail-closed refusal the engine classifies SYSTEM_BUSY and
// re-sends, an UNKNOWN resolved through the query endpoint, a timeout that
// is UNKNOWN (never a failure), an INVALID that is not re-sent; and every
// request is one vegeta result over one keep-alive connection.
func TestContractAnswersMapToTheEngineOutcomes(t *testing.T) {
	svc := newFixedService(t, contractAnswer)
	s, a, st := newTestSystem(t, svc.srv.URL, mappingWith(t, "timeout: 150ms\n"))
	ctx := context.Background()
	call := func(user string) (lua.ReserveResult, error) {
		c, err := st.NewReserveCall(a, user, "req-"+user, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return s.Reserve(ctx, c)
	}
	if res, err := call("u-ok"); err != nil || res.Code != lua.Accepted || res.ReservationID != "rid-req-u-ok" {
		t.Fatalf("u-ok: %+v, %v; want ACCEPTED rid-req-u-ok", res, err)
	}
	// The service named the reservation otherwise than the harness derives
	// it: the release (by the derived id) is sent with the service's.
	if res, err := s.Release(ctx, a.Scope(0), "u-ok", st.ReservationIDFor(a, "u-ok", "req-u-ok")); err != nil || res.Code != lua.CompensateReleased {
		t.Fatalf("release of u-ok's reservation by the derived id: %+v, %v; want RELEASED (sent with the service's id)", res, err)
	}
	if res, err := call("u-sold"); err != nil || res.Code != lua.SoldOut {
		t.Fatalf("u-sold: %+v, %v; want SOLD_OUT", res, err)
	}
	if _, err := call("u-flag"); !errors.Is(err, sut.ErrAnsweredLocally) {
		t.Fatalf("u-flag: %v; want the local flag's SOLD_OUT (sut.ErrAnsweredLocally)", err)
	}
	_, err := call("u-busy")
	if o, c := history.Classify(err); o != history.OutcomeError || c != history.ErrSystemBusy || !lua.Retryable(err) {
		t.Fatalf("u-busy: %v classified %v/%v retryable %v; want ERROR/SYSTEM_BUSY, retryable", err, o, c, lua.Retryable(err))
	}
	_, err = call("u-busy-bad")
	if _, c := history.Classify(err); c != history.ErrSystemBusy || lua.Retryable(err) {
		t.Fatalf("u-busy-bad (no retryable): %v class %v retryable %v; want SYSTEM_BUSY, not re-sent", err, c, lua.Retryable(err))
	}
	if res, err := call("u-unknown"); err != nil || res.Code != lua.Accepted || res.ReservationID != "rid-of-req-u-unknown" || !res.Replay {
		t.Fatalf("u-unknown: %+v, %v; want ACCEPTED resolved through the query", res, err)
	}
	start := time.Now()
	_, err = call("u-slow")
	if o, _ := history.Classify(err); o != history.OutcomeUnknown || !lua.IsOutcomeUnknown(err) {
		t.Fatalf("u-slow: %v classified %v; want UNKNOWN", err, o)
	}
	if el := time.Since(start); el > 280*time.Millisecond {
		t.Fatalf("u-slow took %s: the 150ms deadline (and the query after it) did not bound it", el)
	}
	_, err = call("u-invalid")
	if o, c := history.Classify(err); o != history.OutcomeError || c != history.ErrOther || lua.Retryable(err) {
		t.Fatalf("u-invalid: %v classified %v/%v retryable %v; want ERROR/OTHER, not re-sent", err, o, c, lua.Retryable(err))
	}
	au := s.Answers()
	if au.Busy != 2 || au.BusyNotRetryable != 1 || au.WrongRequestID != 1 || au.TimedOut != 1 {
		t.Fatalf("audit %+v: want 2 busy, 1 without retryable, 1 wrong request id, 1 timed out", au)
	}
	sec := s.ServiceSection()
	if v := sec.Vegeta; v.StatusCodes["503"] != 2 || v.StatusCodes["200"] < 5 || v.StatusCodes["0"] != 1 || v.BytesOut.Total == 0 {
		t.Fatalf("vegeta's view %+v: want two 503, the 200s, one request without an answer (code 0), bytes out", v.StatusCodes)
	}
	if sec.Queries < 2 || sec.Resolved != 1 {
		t.Fatalf("queries %d resolved %d: want the unknown and the timeout looked up, one resolved", sec.Queries, sec.Resolved)
	}
	if n := svc.conns.Load(); n > 2 {
		t.Fatalf("%d connections for %d sequential requests: the client does not keep its connections alive", n, svc.seen.Load())
	}
}

// A service that cannot be reached: nothing was sent, so the error is a
// plain one (never UNKNOWN), classified CONNECT.
func TestUnreachableServiceIsNotAnUnknownOutcome(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s, a, st := newTestSystem(t, "http://"+addr, DefaultMapping())
	c, _ := st.NewReserveCall(a, "u1", "r1", time.Minute)
	_, err = s.Reserve(context.Background(), c)
	if o, cl := history.Classify(err); err == nil || lua.IsOutcomeUnknown(err) || o != history.OutcomeError || cl != history.ErrConnect {
		t.Fatalf("refused connection: %v classified %v/%v; want a CONNECT error, not UNKNOWN", err, o, cl)
	}
}

// A release is one request to the release endpoint; its code maps 1:1 to
// compensate.lua's; a mapping without release: answers ErrNoRelease.
func TestReleaseThroughTheReleaseEndpoint(t *testing.T) {
	svc := newFixedService(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		if r.URL.Path != "/v1/release" || body["reservation_id"] != "rid-1" {
			writeJSON(w, 400, map[string]any{"code": "INVALID"})
			return
		}
		writeJSON(w, 200, map[string]any{"code": "ALREADY_RELEASED", "reservation_id": "rid-1"})
	})
	s, a, _ := newTestSystem(t, svc.srv.URL, DefaultMapping())
	res, err := s.Release(context.Background(), a.Scope(0), "u1", "rid-1")
	if err != nil || res.Code != lua.CompensateAlreadyReleased {
		t.Fatalf("release: %+v, %v; want ALREADY_RELEASED", res, err)
	}
	s2, _, _ := newTestSystem(t, svc.srv.URL, mappingWith(t, "release: ~\n"))
	if _, err := s2.Release(context.Background(), a.Scope(0), "u1", "rid-1"); !errors.Is(err, ErrNoRelease) || !s2.NoRelease() {
		t.Fatalf("release: ~ gave %v; want ErrNoRelease", err)
	}
}

// A mapping file changes what it states; every mistake is refused at its
// file:line with the fix.
func TestMappingFile(t *testing.T) {
	m := mappingWith(t, `name: shop
submit: {path: /api/seckill, body: {act: activity, uid: user, rid: request}}
answer: {code: data.status}
codes: {OK: ACCEPTED, GONE: sold_out}
query: ~
timeout: 250ms
retry: {resends: 0}
state: reference
`)
	if m.Name != "shop" || m.Submit.Path != "/api/seckill" || m.Submit.Method != http.MethodPost || m.Query != nil ||
		m.RequestTimeout() != 250*time.Millisecond || m.Retry.Sends != 0 || !m.ReferenceState() || m.Codes["GONE"] != "SOLD_OUT" ||
		m.Answer.Code != "data.status" || m.Answer.ReservationID != "reservation_id" || m.Release == nil {
		t.Fatalf("mapping %+v: the file's values over the contract's defaults", m)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"timeout: 1s\ntimout: 2s\n", ":2: the file: unknown field \"timout\""},
		{"state: shared\n", ":1: state: \"shared\": want reference"},
		{"codes:\n  OK: ACCEPT\n", ":2: codes.OK: \"ACCEPT\" is no meaning"},
		{"query: {path: \"/q/${req}\"}\n", "query.path: bad reference ${req}"},
		{"submit: {body: {a: activity, n: count}}\n", "submit.body.n: \"count\" is not a value"},
		{"statuses: {\"502\": ACCEPTED}\n", "statuses.502"},
		{"timeout: soon\n", ":1: timeout: \"soon\": want a positive duration"},
	} {
		p := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadMapping(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), p) {
			t.Errorf("%q: got %v; want %s:… %s", tc.yaml, err, p, tc.want)
		}
	}
	if _, err := LoadMapping(filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "docs/SERVICE.md") {
		t.Errorf("missing file: %v; want the fix", err)
	}
}
