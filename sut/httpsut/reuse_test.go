package httpsut

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"seckill-harness/checks"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// requestKeyedService is a service whose idempotency is keyed on the
// request id alone: a request id reused by another user is answered the
// first user's answer (its ACCEPTED and reservation id), where the
// contract answers REQUEST_ID_CONFLICT. Its stock and buyers live in its
// memory: the harness reads none of its state. Without oneEach it sells a
// user as many units as it asks for.
func requestKeyedService(t *testing.T, stock int, oneEach bool) string {
	t.Helper()
	var mu sync.Mutex
	answers := map[string]map[string]any{}
	bought := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Activity string `json:"activity_id"`
			User     string `json:"user_id"`
			Request  string `json:"request_id"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		ans, seen := answers[req.Request]
		if !seen {
			switch {
			case oneEach && bought[req.User]:
				ans = map[string]any{"code": "USER_ALREADY_RESERVED", "request_id": req.Request}
			case stock > 0:
				stock--
				bought[req.User] = true
				ans = map[string]any{"code": "ACCEPTED", "reservation_id": "o-" + req.Request, "request_id": req.Request}
			default:
				ans = map[string]any{"code": "SOLD_OUT", "request_id": req.Request}
			}
			answers[req.Request] = ans
		}
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Against a service that answers a reused request id with the first
// user's ACCEPTED, I5 fails, and I4's failure ("u… told ACCEPTED for
// o-r… and then o-r…") is the same defect seen twice: consequence_of I5.
// The same service selling a user a second unit of its own (no per-user
// check) fails I4 on its own account: no consequence.
func TestReusedRequestIDDoubleAckIsConsequenceOfI5(t *testing.T) {
	clustertest.Need(t)
	for _, c := range []struct {
		name    string
		oneEach bool
		mix     runner.Mix
		want    string
	}{
		{"one per user, request ids reused", true, runner.Mix{ForeignRequest: 0.2}, "I5"},
		{"no per-user check, request ids reused", false, runner.Mix{ForeignRequest: 0.2, SameUser: 0.2}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := lua.NewStore(testRDB, lua.Embedded(), []byte(testSecret))
			sys, err := New(requestKeyedService(t, 1000, c.oneEach), mappingWith(t, "timeout: 2s\nquery: ~\nrelease: ~\n"), 8, st)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sys.Close)
			a := lua.NewActivity(fmt.Sprintf("hreuse%d-%d", time.Now().UnixMilli()%1_000_000, actSeq.Add(1)), "sku1", 1000, 1, time.Hour)
			if err := sys.Setup(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			sale := sut.Sale{Activity: a, IDs: st}
			cfg := runner.DefaultConfig()
			cfg.Shape, cfg.Duration, cfg.Users, cfg.Concurrency = runner.Shape{Kind: "constant", Rate: 200}, 1500*time.Millisecond, 150, 8
			cfg.Mix = c.mix
			res, err := runner.Run(context.Background(), cfg, sale, sys)
			if err != nil {
				t.Fatal(err)
			}
			got := judge(t, sale, sys, res.History, nil)
			i4, i5 := got["I4"], got["I5"]
			t.Logf("I5 %s: %s", i5.Status, i5.Detail)
			t.Logf("I4 %s (consequence of %q): %s; double acknowledgements %v", i4.Status, i4.ConsequenceOf, i4.Detail, i4.Evidence["double_acknowledgements"])
			if i5.Status != checks.StatusFail {
				t.Fatalf("I5 %s, want the reuse by another user found", i5.Status)
			}
			if i4.Status != checks.StatusFail || i4.ConsequenceOf != c.want {
				t.Errorf("I4 %s consequence of %q, want fail and %q", i4.Status, i4.ConsequenceOf, c.want)
			}
		})
	}
}
