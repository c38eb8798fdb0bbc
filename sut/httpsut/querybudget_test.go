package httpsut

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill-harness/sut"
)

// A service whose query endpoint stops answering holds the look-ups after
// the run no longer than the mapping's QueryBudget: the requests not read
// by then are unresolved (an error each, never found), not waited for one
// deadline and three tries apiece.
func TestReadRequestsStaysWithinTheQueryBudget(t *testing.T) {
	fs := newFixedService(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		<-r.Context().Done() // never answers
	})
	m := mappingWith(t, "timeout: 100ms\n")
	s, a, _ := newTestSystem(t, fs.srv.URL, m)
	var refs []sut.RequestRef
	for i := range 40 {
		id := fmt.Sprintf("req-%d", i)
		s.users[id] = fmt.Sprintf("u-%d", i)
		refs = append(refs, sut.RequestRef{ID: id})
	}
	began := time.Now()
	got, err := s.ReadRequests(context.Background(), a, refs)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	budget := m.QueryBudget()
	t.Logf("40 look-ups of a silent service: %s (budget %s), %d queries sent", took, budget, fs.seen.Load())
	if took > budget+time.Second {
		t.Errorf("the look-ups took %s, want at most the budget %s (+1 s)", took, budget)
	}
	notAsked := 0
	for i, f := range got {
		if f.Found || f.Err == "" {
			t.Errorf("request %s: %+v, want unresolved (an error)", refs[i].ID, f)
		}
		if strings.Contains(f.Err, "not asked: the look-ups after the run had "+budget.String()) {
			notAsked++
		}
	}
	if notAsked == 0 {
		t.Errorf("no request says the budget ran out: %q", got[len(got)-1].Err)
	}
}

// An answer longer than maxAnswerBytes is refused at that stated limit,
// even when what it begins with would read as ACCEPTED: the harness reads
// no more of it than the limit (and one byte).
func TestAnswerOverTheLimitIsRefusedNamingIt(t *testing.T) {
	pad := strings.Repeat(" ", maxAnswerBytes)
	fs := newFixedService(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"code":"ACCEPTED","request_id":%q,"retryable":false}%s`, body["request_id"], pad)
	})
	s, a, st := newTestSystem(t, fs.srv.URL, DefaultMapping())
	c, _ := st.NewReserveCall(a, "u1", "r1", time.Minute)
	res, err := s.Reserve(context.Background(), c)
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "longer than 64 KiB") {
		t.Fatalf("an answer of %d bytes: %+v, %v; want a refusal naming the 64 KiB limit", maxAnswerBytes+60, res, err)
	}
}
