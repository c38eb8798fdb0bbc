package httpsut

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"seckill-harness/internal/sleep"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// Exposes lists the facts the service shows: with state: reference every
// fact of the reference contract (read on the harness's cluster client);
// otherwise its available units (with its held ones, its whole stock)
// when the mapping names stock: reads, its cached request results when
// the mapping has a query endpoint (asked over HTTP), and always the
// eviction counters of the harness's nodes, which hold whatever the
// service keeps in Redis.
func (s *System) Exposes() []sut.Fact {
	if s.ref != nil {
		return s.ref.Exposes()
	}
	var out []sut.Fact
	if s.stock != nil {
		if len(s.m.Stock.Held) > 0 {
			out = append(out, sut.Stock)
		}
		out = append(out, sut.Available)
	}
	if s.m.Query != nil {
		out = append(out, sut.Requests)
	}
	return append(out, sut.Evictions)
}

// ReadStock reads a bucket's stock: the reference contract's with state:
// reference, otherwise through the mapping's stock: reads.
func (s *System) ReadStock(ctx context.Context, a *lua.Activity, b uint32) (lua.Stock, error) {
	if s.ref != nil {
		return s.ref.ReadStock(ctx, a, b)
	}
	if s.stock == nil {
		return lua.Stock{}, errNoState
	}
	return s.m.readStock(ctx, s.stock, a, b)
}

// ReadQueues reads a bucket's queues (state: reference only).
func (s *System) ReadQueues(ctx context.Context, a *lua.Activity, b uint32) ([]string, []string, error) {
	if s.ref == nil {
		return nil, nil, errNoState
	}
	return s.ref.ReadQueues(ctx, a, b)
}

// ReadRecords reads reservation records (state: reference only).
func (s *System) ReadRecords(ctx context.Context, a *lua.Activity, want map[string]uint32) (map[string]sut.Record, error) {
	if s.ref == nil {
		return nil, errNoState
	}
	return s.ref.ReadRecords(ctx, a, want)
}

// ReadKeys reads the activity's keys (state: reference only).
func (s *System) ReadKeys(ctx context.Context, a *lua.Activity, q sut.KeyQuery) (*sut.KeyFacts, error) {
	if s.ref == nil {
		return nil, errNoState
	}
	return s.ref.ReadKeys(ctx, a, q)
}

// ListRequestIDs lists the cached request ids (state: reference only).
func (s *System) ListRequestIDs(ctx context.Context, a *lua.Activity) (map[uint32][]string, error) {
	if s.ref == nil {
		return nil, errNoState
	}
	return s.ref.ListRequestIDs(ctx, a)
}

var errNoState = fmt.Errorf("service: the mapping does not say state: reference, so the harness reads none of its state: %w", sut.ErrNoState)

// ReadRequests reads each request's result: from the reference contract's
// request cache with state: reference, otherwise through the query
// endpoint (after the run, with time to answer: 404 NOT_FOUND is "not
// executed"; an answer the mapping cannot read, or none, is kept as the
// fact's error).
func (s *System) ReadRequests(ctx context.Context, a *lua.Activity, reqs []sut.RequestRef) ([]sut.RequestFact, error) {
	if s.ref != nil {
		return s.ref.ReadRequests(ctx, a, reqs)
	}
	if s.m.Query == nil {
		return nil, errNoState
	}
	out := make([]sut.RequestFact, len(reqs))
	budget := s.m.QueryBudget()
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	for i, r := range reqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if bctx.Err() != nil {
			// Unresolved, never a pass: the checks count them so.
			for j := i; j < len(reqs); j++ {
				out[j] = sut.RequestFact{Err: fmt.Sprintf("query %s: not asked: the look-ups after the run had %s in all (%d per-request deadlines of %s) and it ran out after %d of %d",
					reqs[j].ID, budget, queryBudgetDeadlines, s.m.timeout, i, len(reqs))}
			}
			break
		}
		out[i] = s.readRequest(bctx, a, r.ID)
	}
	return out, nil
}

// queryBudgetDeadlines is how many per-request deadlines the look-ups of
// ReadRequests get in all (Mapping.QueryBudget).
const queryBudgetDeadlines = 5

// QueryBudget bounds the look-ups of the requests' results after the run
// (ReadRequests): queryBudgetDeadlines per-request deadlines in all, so a
// service that stops answering holds the checks that long at most; the
// requests not read by then are unresolved.
func (m *Mapping) QueryBudget() time.Duration { return queryBudgetDeadlines * m.timeout }

func (s *System) readRequest(ctx context.Context, a *lua.Activity, request string) sut.RequestFact {
	s.mu.Lock()
	user, ok := s.users[request]
	s.mu.Unlock()
	if !ok {
		return sut.RequestFact{Err: fmt.Sprintf("request %s was never sent by this client: no user to query it with", request)}
	}
	t, err := s.target(s.m.Query, values(a, user, request, ""))
	if err != nil {
		return sut.RequestFact{Err: err.Error()}
	}
	var status int
	var body []byte
	for try := 0; try < 3; try++ { // a busy service may answer the next look-up
		var timedOut bool
		status, body, timedOut, err = s.send(ctx, t)
		if timedOut || (err == nil && status != http.StatusServiceUnavailable && status != http.StatusGatewayTimeout) {
			break // an answer, or none within the deadline: asking again waits as long
		}
		if !sleep.For(ctx, s.m.backoff) {
			break
		}
	}
	switch {
	case err != nil:
		return sut.RequestFact{Err: fmt.Sprintf("query %s: %v", request, err)}
	case status == http.StatusNotFound:
		return sut.RequestFact{}
	}
	ans, err := s.m.decode(status, body, s.m.Codes)
	if err != nil {
		return sut.RequestFact{Err: "query " + request + ": " + err.Error()}
	}
	for _, c := range lua.ReserveCodes() {
		if c.String() == ans.Meaning {
			return sut.RequestFact{Found: true, Result: lua.RequestResult{Code: c, ReservationID: ans.RID, UserID: user}}
		}
	}
	return sut.RequestFact{Err: fmt.Sprintf("query %s: %s (HTTP %d) says nothing of the request", request, orStatus(ans), status)}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
