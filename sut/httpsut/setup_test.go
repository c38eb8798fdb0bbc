package httpsut

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill-harness/lua"
)

// adminService is a real HTTP server on loopback that records each call
// it receives (method, path, JSON body) and answers the paths in fail
// with their status (others: 201, or 204 to a DELETE).
type adminService struct {
	mu    sync.Mutex
	calls []string
}

func newAdminService(t *testing.T, fail map[string]int) (*adminService, string) {
	t.Helper()
	as := &adminService{}
	srv := newFixedService(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		b, _ := json.Marshal(body)
		if body == nil {
			b = nil
		}
		as.mu.Lock()
		as.calls = append(as.calls, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+string(b)))
		as.mu.Unlock()
		if st, ok := fail[r.URL.Path]; ok {
			w.WriteHeader(st)
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	return as, srv.srv.URL
}

func (as *adminService) got() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]string(nil), as.calls...)
}

// The setup calls carry the run's values, numbers as JSON numbers; a call
// naming ${bucket} goes once per bucket with that bucket's share of the
// stock; teardown calls go once, a second Teardown sends nothing, and
// with state: none the harness counts no key of its own.
func TestSetupAndTeardownCalls(t *testing.T) {
	as, url := newAdminService(t, nil)
	m := mappingWith(t, `setup:
  - {path: /admin/sales, body: {sale: "${activity}", sku: sku, units: "${stock}", buckets: buckets}}
  - {method: put, path: "/admin/sales/${activity}/buckets/${bucket}", body: {units: stock}}
teardown:
  - {method: DELETE, path: "/admin/sales/${activity}", expect: [204, 404]}
`)
	s, err := New(url, m, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := lua.NewActivity("act-7", "sku9", 1001, 3, time.Hour)
	if err := s.Setup(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	want := []string{`POST /admin/sales {"buckets":3,"sale":"act-7","sku":"sku9","units":1001}`,
		`PUT /admin/sales/act-7/buckets/0 {"units":334}`, `PUT /admin/sales/act-7/buckets/1 {"units":334}`, `PUT /admin/sales/act-7/buckets/2 {"units":333}`}
	if got := as.got(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("setup sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := 0; i < 2; i++ {
		n, err := s.Teardown(context.Background(), a)
		if err != nil || n != 0 {
			t.Fatalf("teardown %d: %d keys, %v; want 0 keys (the service removes its own), no error", i+1, n, err)
		}
	}
	if got := as.got()[len(want):]; len(got) != 1 || got[0] != "DELETE /admin/sales/act-7" {
		t.Fatalf("teardown sent %q; want one DELETE /admin/sales/act-7", got)
	}
	if !s.ThroughService() {
		t.Fatal("a mapping with setup calls: ThroughService false")
	}
}

// A setup call answered otherwise than expected is an error naming the
// call, its status, the mapping's file:line and the fix; the calls before
// it that succeeded are undone by the teardown calls, and a later Teardown
// sends nothing more.
func TestSetupFailureUndoesWhatSucceeded(t *testing.T) {
	as, url := newAdminService(t, map[string]int{"/admin/stock": http.StatusConflict})
	p := filepath.Join(t.TempDir(), "svc.yaml")
	if err := os.WriteFile(p, []byte("setup:\n  - {path: /admin/sales}\n  - {path: /admin/stock, body: {n: stock}}\nteardown:\n  - {method: DELETE, path: /admin/sales}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadMapping(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(url, m, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := lua.NewActivity("act1", "sku1", 10, 1, time.Hour)
	err = s.Setup(context.Background(), a)
	for _, w := range []string{"setup[2] POST /admin/stock answered HTTP 409", "want a 2xx status", "setup[2] at " + p + ":3", "undid the 1 setup call"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("setup: %v\nwant it to say %q", err, w)
		}
	}
	if _, err := s.Teardown(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST /admin/sales", `POST /admin/stock {"n":10}`, "DELETE /admin/sales"}
	if got := as.got(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Bad setup: and teardown: calls are refused at the mapping's file:line
// with the fix.
func TestSetupCallsRefusedInTheMapping(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"setup:\n  - {path: admin}\n", ":2: setup[1].path: \"admin\": want a path starting with /"},
		{"setup:\n  - {path: \"/a/${user}\"}\n", "setup[1].path: bad reference ${user}"},
		{"teardown:\n  - {path: /a}\n  - {path: /b, body: {n: amount}}\n", ":3: teardown[2].body.n: \"amount\" is not a value"},
		{"setup:\n  - {path: /a, expect: [2000]}\n", "setup[1].expect[1]: 2000 is not an HTTP status"},
		{"setup:\n  - {path: /a, timeout: 1s}\n", "unknown field \"timeout\""},
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
}
