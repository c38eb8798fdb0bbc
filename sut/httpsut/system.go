package httpsut

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// maxAnswerBytes bounds what is read of one answer: a longer one is
// refused as an answer the mapping cannot read (decode), whatever it
// goes on to send.
const maxAnswerBytes = 64 << 10

// maxExamples bounds the offending answers kept in words.
const maxExamples = 5

// System is a running access service as the system under test
// (sut.System): each reserve is one HTTP request to its submit endpoint,
// built as a vegeta.Target and recorded as a vegeta.Result, on one shared
// keep-alive client. The engine paces and times the load (each operation
// from its intended start); the system only speaks HTTP.
//
// Error contract (sut.System's): an answer the mapping gives a business
// meaning is a nil error; no answer within the mapping's per-request
// deadline, a reply cut after the request was written, or an
// OUTCOME_UNKNOWN answer is lua.ErrOutcomeUnknown (first looked up through
// the query endpoint when the mapping has one); SYSTEM_BUSY is a
// fail-closed refusal (FailedClosed, retryable); INVALID and an answer the
// mapping cannot read are refusals of the path (not retryable); a request
// that could not be sent (connection refused) is a plain error.
//
// It is a sut.Provisioner (setup.go): with the mapping's setup: and
// teardown: calls it creates and removes the sale through the service's
// own API; otherwise, with state: reference, it writes the activity's keys
// on the harness's cluster (sut.ReferenceState); otherwise the service's
// activity is set up by other means and Setup only takes note of it. With
// state: reference it reads the keys back for the checks. It is a sut.StateReader:
// all of the reference contract's facts with state: reference; otherwise
// the stock through the mapping's stock: reads (when named), the cached
// request results through the query endpoint (when mapped) and the
// harness's nodes' eviction counters.
type System struct {
	m      *Mapping
	base   string
	client *http.Client
	ref    *sut.ReferenceState
	stock  redis.UniversalClient // the run's cluster, for the mapping's stock: reads (nil without them)

	mu       sync.Mutex
	act      *lua.Activity
	users    map[string]string // request id -> user, for the query
	rids     map[string]string // the harness's derived reservation id -> the service's, where they differ
	vm       vegeta.Metrics
	answers  map[string]int64
	audit    sut.Answers
	queries  int64
	resolved int64
	tornDown bool // the teardown calls were sent (setup.go)
}

var (
	_ sut.System      = (*System)(nil)
	_ sut.Provisioner = (*System)(nil)
	_ sut.StateReader = (*System)(nil)
	_ sut.Service     = (*System)(nil)
)

// New is the service at rawURL spoken to through m, with one keep-alive
// connection per worker (workers: the load's largest concurrency); st is
// the run's store (its client reads the state back with state: reference).
func New(rawURL string, m *Mapping, workers int, st *lua.Store) (*System, error) {
	base, err := CheckURL(rawURL)
	if err != nil {
		return nil, err
	}
	if workers < 1 {
		workers = 1
	}
	tr := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: m.timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns: workers * 2, MaxIdleConnsPerHost: workers * 2, IdleConnTimeout: 90 * time.Second,
		ForceAttemptHTTP2: false, DisableCompression: true}
	s := &System{m: m, base: base, client: &http.Client{Transport: tr}, users: map[string]string{}, rids: map[string]string{}, answers: map[string]int64{}}
	s.audit.Deadline = m.timeout
	if m.ReferenceState() && st != nil {
		s.ref = &sut.ReferenceState{Store: st}
	}
	if m.Stock != nil && st != nil {
		s.stock = st.Client()
	}
	return s, nil
}

// CheckURL refuses a service URL that is not http(s)://host[:port][/path]
// and returns it without a trailing slash.
func CheckURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return "", fmt.Errorf("--service %q: want the service's base URL, e.g. http://127.0.0.1:8080", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// Mapping is the mapping the system speaks through.
func (s *System) Mapping() *Mapping { return s.m }

// URL is the service's base URL.
func (s *System) URL() string { return s.base }

// Name is the mapping's name.
func (s *System) Name() string { return s.m.Name }

// NoRelease reports whether the mapping has no release endpoint.
func (s *System) NoRelease() bool { return s.m.Release == nil }

// Close drops the idle connections.
func (s *System) Close() { s.client.CloseIdleConnections() }

func (s *System) activity() (*lua.Activity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.act == nil {
		return nil, errors.New("service: no activity set up (Setup)")
	}
	return s.act, nil
}

// values are the values of one call, by name (mapping.bodyValues).
func values(a *lua.Activity, user, request, rid string) map[string]string {
	return map[string]string{"activity": a.ID, "sku": a.SKU, "user": user, "request": request, "reservation": rid, "amount": "1"}
}

// numeric reports whether value name is sent as a JSON number.
func numeric(name string) bool {
	return name == "amount" || name == "stock" || name == "buckets" || name == "bucket"
}

// target builds the vegeta.Target of endpoint e with values v.
func (s *System) target(e *Endpoint, v map[string]string) (vegeta.Target, error) {
	path := e.Path
	for k, x := range v {
		path = strings.ReplaceAll(path, "${"+k+"}", url.PathEscape(x))
	}
	t := vegeta.Target{Method: e.Method, URL: s.base + path}
	if len(e.Body) > 0 {
		doc := make(map[string]any, len(e.Body))
		for field, name := range e.Body {
			if numeric(name) {
				doc[field] = json.Number(v[name])
			} else {
				doc[field] = v[name]
			}
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return t, err
		}
		t.Body, t.Header = b, http.Header{"Content-Type": []string{"application/json"}}
	}
	return t, nil
}

// send sends t within the per-request deadline and records its
// vegeta.Result. timedOut: no answer came within the deadline (or the
// reply was cut after the request was written); err without timedOut: the
// request was not sent.
func (s *System) send(ctx context.Context, t vegeta.Target) (status int, body []byte, timedOut bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, s.m.timeout)
	defer cancel()
	req, err := t.Request()
	if err != nil {
		return 0, nil, false, err
	}
	var wrote atomic.Bool
	res := vegeta.Result{Method: t.Method, URL: t.URL, BytesOut: uint64(len(t.Body)), Timestamp: time.Now()}
	defer func() {
		res.Latency = time.Since(res.Timestamp)
		if err != nil {
			res.Error = err.Error()
		}
		s.mu.Lock()
		s.vm.Add(&res)
		s.mu.Unlock()
	}()
	req = req.WithContext(withWrote(rctx, &wrote))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, wrote.Load(), err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	res.Code, res.BytesIn = uint16(resp.StatusCode), uint64(len(body))
	if err != nil {
		return resp.StatusCode, nil, true, err // the answer was cut: it may have run
	}
	return resp.StatusCode, body, false, nil
}

// withWrote is ctx with a trace that sets wrote once the whole request
// was written to a connection: from then on the service may run it.
func withWrote(ctx context.Context, wrote *atomic.Bool) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { wrote.Store(true) },
	})
}
