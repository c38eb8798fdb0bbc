package httpsut

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"seckill-harness/internal/boundedread"
	"seckill-harness/internal/fileref"
	"seckill-harness/lua"
	"seckill-harness/sut/adapter"
)

// MaxMappingBytes bounds what LoadMapping reads: a mapping is small.
const MaxMappingBytes = 1 << 20

// The meanings an answer's code (or, without one, its HTTP status) may map
// to beyond the reserve codes of lua.ReserveCodes (ACCEPTED, SOLD_OUT, …).
const (
	// Busy is a fail-closed refusal: nothing reserved, re-send the same
	// request (SYSTEM_BUSY).
	Busy = "SYSTEM_BUSY"
	// Unknown is an outcome the service could not tell: the request may
	// have run (OUTCOME_UNKNOWN); re-send the same request or query it.
	Unknown = "OUTCOME_UNKNOWN"
	// Invalid is a refusal of a malformed request: not retryable, an
	// error of the path (INVALID).
	Invalid = "INVALID"
	// Failed is a definitive failure: the service says the request had
	// no effect and must not be re-sent (FAILED). The contract has no
	// such answer for a request that may have run (check S4).
	Failed = "FAILED"
	// NotFound is the query's answer for a request no execution of which
	// is on record (the request did not run, or not yet).
	NotFound = "NOT_FOUND"
)

// Mapping is how the harness speaks to a service: the JSON of its submit,
// query and release endpoints and what its answers mean. Its defaults
// (DefaultMapping) are the access-service HTTP contract of
// docs/SERVICE.md; a mapping file (LoadMapping) changes only what it
// states.
type Mapping struct {
	// Name names the service in reports (default: "service").
	Name string `yaml:"name"`
	// Submit is the reserve endpoint (POST /v1/reserve).
	Submit *Endpoint `yaml:"submit"`
	// Query is the endpoint that says what became of a request
	// (GET /v1/reserve/${request}?activity_id=${activity}&user_id=${user}).
	// Written empty (query: ~): the service has none.
	Query *Endpoint `yaml:"query"`
	// Release fences and compensates a reservation (POST /v1/release).
	// Written empty (release: ~): the service has none, and the run sends
	// no release operation.
	Release *Endpoint `yaml:"release"`
	// Answer says where the fields of an answer are in its JSON.
	Answer *Answer `yaml:"answer"`
	// Codes maps an answer's code to its meaning: a reserve code name
	// (ACCEPTED, SOLD_OUT, USER_ALREADY_RESERVED, DUPLICATE_REQUEST, …),
	// SYSTEM_BUSY, OUTCOME_UNKNOWN or INVALID. Entries add to (or replace)
	// the contract's, which map each code to itself.
	Codes map[string]string `yaml:"codes"`
	// Statuses maps an HTTP status to a meaning for an answer whose body
	// carries no code (a proxy's error page, an empty body); entries add
	// to the contract's (400 INVALID, 503 SYSTEM_BUSY, 504 and every other
	// 5xx OUTCOME_UNKNOWN). A body's code always wins over its status.
	Statuses map[string]string `yaml:"statuses"`
	// ReleaseCodes maps a release answer's code to a compensate code name
	// (RELEASED, ALREADY_RELEASED, NOT_FOUND, NOT_COMPENSATABLE,
	// INVARIANT_VIOLATION, RESERVATION_ID_CONFLICT), SYSTEM_BUSY or
	// OUTCOME_UNKNOWN; entries add to the contract's 1:1 table.
	ReleaseCodes map[string]string `yaml:"release_codes"`
	// Timeout is the per-request deadline (default 2s): no answer within
	// it is an UNKNOWN outcome, never a failure.
	Timeout string `yaml:"timeout"`
	// Retry is the client's retry policy: the same request (same
	// request_id) re-sent after an UNKNOWN or SYSTEM_BUSY answer.
	Retry *Retry `yaml:"retry"`
	// State is "reference" when the service keeps its state under the
	// reference contract's keys on the harness's cluster (the harness then
	// reads it back and the state checks run), "none" (default) otherwise.
	State string `yaml:"state"`
	// Setup are the HTTP calls that create the run's sale on the service
	// (setup.go): sent in order once the service is ready and before the
	// load, each answer checked (Call.Expect); a failure ends the run
	// before the load (exit 2) naming the call. With setup calls the
	// harness writes no key of the activity itself, state: reference too.
	Setup []Call `yaml:"setup"`
	// Teardown are the HTTP calls that remove the sale, sent once after
	// the run on every way out (the load failed or was interrupted too).
	Teardown []Call `yaml:"teardown"`
	// Stock names the Redis reads of a bucket's stock for a service that
	// keeps its own keys (not state: reference): I1 and I9 are then
	// judged (StockRead). Nil: none.
	Stock *StockRead `yaml:"stock"`
	// HashTag is where the service keeps its sale on the cluster: the hash
	// tag of its keys, a template of ${activity}, ${sku} and ${bucket}
	// without the braces ("sku:${sku}" for keys {sku:<sku>}:…). The
	// faults' hot-master, hot-replica and slot-migration's hot slot aim at
	// its slot; "" (default): the harness observes where the service's
	// Redis traffic goes.
	HashTag string `yaml:"hash_tag"`

	path    string
	lines   map[string]int
	timeout time.Duration
	backoff time.Duration
}

// Endpoint is one HTTP endpoint of the service.
type Endpoint struct {
	// Method is the HTTP method (POST for submit and release, GET for query).
	Method string `yaml:"method"`
	// Path is the URL path (and query string) under the service's URL; it
	// may name ${activity}, ${sku}, ${user}, ${request}, ${reservation},
	// each URL-escaped.
	Path string `yaml:"path"`
	// Body maps each JSON field of the request body to the value it
	// carries: activity, sku, user, request, reservation (strings) or
	// amount (a number, 1).
	Body map[string]string `yaml:"body"`
}

// Answer names the JSON fields of an answer (a dotted path for a nested
// one: "data.code").
type Answer struct {
	Code          string `yaml:"code"`
	ReservationID string `yaml:"reservation_id"`
	Retryable     string `yaml:"retryable"`
	RequestID     string `yaml:"request_id"`
	// Source is the field that says a SOLD_OUT came from the service's
	// local sold-out flag, not from Redis; LocalSource is its value then
	// (default: source, local_flag). Such an answer is the harness's
	// LOCAL_SOLD_OUT: fast, never the final truth, not a request's answer.
	Source      string `yaml:"source"`
	LocalSource string `yaml:"local_source"`
}

// Retry is the client's retry policy.
type Retry struct {
	// Sends is how many times one request is re-sent at most (0: never).
	Sends int `yaml:"resends"`
	// Backoff is the pause before each re-send.
	Backoff string `yaml:"backoff"`
}

// The contract's defaults.
const (
	DefaultTimeout = 2 * time.Second
	DefaultResends = 3
	DefaultBackoff = 50 * time.Millisecond
)

// bodyValues are the values an endpoint's body and path may carry.
var bodyValues = []string{"activity", "sku", "user", "request", "reservation", "amount"}

// DefaultMapping is the access-service HTTP contract (docs/SERVICE.md).
func DefaultMapping() *Mapping {
	codes := map[string]string{Busy: Busy, Unknown: Unknown, Invalid: Invalid, Failed: Failed}
	for _, c := range lua.ReserveCodes() {
		codes[c.String()] = c.String()
	}
	rel := map[string]string{Busy: Busy, Unknown: Unknown}
	for c := lua.CompensateReleased; c <= lua.CompensateIDConflict; c++ {
		rel[c.String()] = c.String()
	}
	return &Mapping{Name: "service",
		Submit: &Endpoint{Method: http.MethodPost, Path: "/v1/reserve",
			Body: map[string]string{"activity_id": "activity", "user_id": "user", "request_id": "request", "amount": "amount"}},
		Query: &Endpoint{Method: http.MethodGet, Path: "/v1/reserve/${request}?activity_id=${activity}&user_id=${user}"},
		Release: &Endpoint{Method: http.MethodPost, Path: "/v1/release",
			Body: map[string]string{"activity_id": "activity", "user_id": "user", "reservation_id": "reservation"}},
		Answer: &Answer{Code: "code", ReservationID: "reservation_id", Retryable: "retryable", RequestID: "request_id",
			Source: "source", LocalSource: "local_flag"},
		Codes: codes, ReleaseCodes: rel,
		Statuses: map[string]string{"400": Invalid, "503": Busy, "504": Unknown},
		Timeout:  DefaultTimeout.String(), Retry: &Retry{Sends: DefaultResends, Backoff: DefaultBackoff.String()},
		State: "none", timeout: DefaultTimeout, backoff: DefaultBackoff, lines: map[string]int{}}
}

var mappingKind = adapter.Kind{What: "service mapping", Empty: "want a mapping, e.g. timeout: 500ms (every field defaults to the HTTP contract)",
	One: "one service mapping per file", Docs: "docs/SERVICE.md"}

// LoadMapping reads the mapping file at path over the contract's defaults
// ("" : the defaults). Every error names path:line, the problem and the
// fix (the adapter file's strict decoder: adapter.DecodeStrict).
func LoadMapping(path string) (*Mapping, error) {
	m := DefaultMapping()
	if path == "" {
		return m, nil
	}
	const fix = "give the path of a service mapping YAML file (docs/SERVICE.md)"
	data, err := boundedread.File(path, MaxMappingBytes, "service mapping", fix)
	if err != nil {
		if !strings.Contains(err.Error(), fix) {
			err = fmt.Errorf("%w: %s", err, fix)
		}
		return nil, err
	}
	var f Mapping
	lines, err := adapter.DecodeStrict(path, data, &f, mappingKind)
	if err != nil {
		return nil, err
	}
	f.path, f.lines = path, lines
	if err := m.merge(&f); err != nil {
		return nil, err
	}
	return m, nil
}

// errAt is an error at field path p of the file: file:line: p: problem
// (every quoted value cut to fileref.MaxToken bytes).
func (f *Mapping) errAt(p, format string, args ...any) error {
	return errors.New(fileref.Clip(fmt.Sprintf("%s:%d: %s: %s", f.path, f.lines[p], p, fmt.Sprintf(format, args...))))
}

// given reports whether the file wrote field path p (null included).
func (f *Mapping) given(p string) bool { _, ok := f.lines[p]; return ok }

// merge puts what file f states over m, checking each value.
func (m *Mapping) merge(f *Mapping) error {
	m.path, m.lines = f.path, f.lines
	if f.Name != "" {
		m.Name = f.Name
	} else {
		m.Name = strings.TrimSuffix(filepath.Base(f.path), filepath.Ext(f.path))
	}
	for _, e := range []struct {
		name     string
		dst, src **Endpoint
		optional bool
	}{{"submit", &m.Submit, &f.Submit, false}, {"query", &m.Query, &f.Query, true}, {"release", &m.Release, &f.Release, true}} {
		if err := mergeEndpoint(f, e.name, e.dst, *e.src, e.optional); err != nil {
			return err
		}
	}
	if a := f.Answer; a != nil {
		for _, p := range []struct{ dst, src *string }{{&m.Answer.Code, &a.Code}, {&m.Answer.ReservationID, &a.ReservationID},
			{&m.Answer.Retryable, &a.Retryable}, {&m.Answer.RequestID, &a.RequestID},
			{&m.Answer.Source, &a.Source}, {&m.Answer.LocalSource, &a.LocalSource}} {
			if *p.src != "" {
				*p.dst = *p.src
			}
		}
	}
	if err := mergeTable(f, "codes", m.Codes, f.Codes, reserveMeanings()); err != nil {
		return err
	}
	if err := mergeTable(f, "release_codes", m.ReleaseCodes, f.ReleaseCodes, releaseMeanings()); err != nil {
		return err
	}
	if err := m.mergeStatuses(f); err != nil {
		return err
	}
	if err := m.mergeCalls(f); err != nil {
		return err
	}
	if err := m.mergeHashTag(f); err != nil {
		return err
	}
	if err := m.mergeScalars(f); err != nil {
		return err
	}
	return m.mergeStock(f)
}

func mergeEndpoint(f *Mapping, name string, dst **Endpoint, src *Endpoint, optional bool) error {
	if src == nil {
		if f.given(name) {
			if !optional {
				return f.errAt(name, "the submit endpoint cannot be empty: give method: and path:, or remove submit: to keep POST /v1/reserve")
			}
			*dst = nil // written empty: the service has none
		}
		return nil
	}
	out := **dst
	if *dst == nil {
		out = Endpoint{Method: http.MethodGet}
	}
	if src.Method != "" {
		out.Method = strings.ToUpper(src.Method)
	}
	if src.Path != "" {
		out.Path = src.Path
	}
	if src.Body != nil {
		out.Body = src.Body
	}
	if !strings.HasPrefix(out.Path, "/") {
		return f.errAt(name+".path", "%q: want a path starting with / (it is put after the service's URL)", out.Path)
	}
	if err := checkPathRefs(out.Path); err != nil {
		return f.errAt(name+".path", "%v", err)
	}
	for field, v := range out.Body {
		if !knownValue(v) {
			return f.errAt(name+".body."+field, "%q is not a value the harness sends: the values are %s", v, strings.Join(bodyValues, ", "))
		}
	}
	*dst = &out
	return nil
}

func knownValue(v string) bool {
	for _, n := range bodyValues {
		if v == n {
			return true
		}
	}
	return false
}

func reserveMeanings() []string {
	out := []string{Busy, Unknown, Invalid, Failed}
	for _, c := range lua.ReserveCodes() {
		out = append(out, c.String())
	}
	return out
}

func releaseMeanings() []string {
	out := []string{Busy, Unknown}
	for c := lua.CompensateReleased; c <= lua.CompensateIDConflict; c++ {
		out = append(out, c.String())
	}
	return out
}

// mergeTable adds file table src (field name) to dst, each meaning one of allowed.
func mergeTable(f *Mapping, name string, dst, src map[string]string, allowed []string) error {
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.ToUpper(src[k])
		ok := false
		for _, a := range allowed {
			ok = ok || a == v
		}
		if !ok {
			return f.errAt(name+"."+k, "%q is no meaning the harness knows: want one of %s", src[k], strings.Join(allowed, ", "))
		}
		dst[k] = v
	}
	return nil
}

func (m *Mapping) mergeStatuses(f *Mapping) error {
	for k, v := range f.Statuses {
		n, err := strconv.Atoi(k)
		if err != nil || n < 100 || n > 599 {
			return f.errAt("statuses."+k, "%q is not an HTTP status: want a number 100..599", k)
		}
		v = strings.ToUpper(v)
		if v != Busy && v != Unknown && v != Invalid {
			return f.errAt("statuses."+k, "%q: a status without a code in the body means %s, %s or %s", v, Busy, Unknown, Invalid)
		}
		m.Statuses[k] = v
	}
	return nil
}

func (m *Mapping) mergeScalars(f *Mapping) error {
	if f.Timeout != "" {
		d, err := time.ParseDuration(f.Timeout)
		if err != nil || d <= 0 {
			return f.errAt("timeout", "%q: want a positive duration, e.g. 500ms", f.Timeout)
		}
		m.Timeout, m.timeout = f.Timeout, d
	}
	if r := f.Retry; r != nil {
		if r.Sends < 0 || r.Sends > 254 {
			return f.errAt("retry.resends", "%d: want 0..254 re-sends of the same request", r.Sends)
		}
		if f.given("retry.resends") {
			m.Retry.Sends = r.Sends
		}
		if r.Backoff != "" {
			d, err := time.ParseDuration(r.Backoff)
			if err != nil || d < 0 {
				return f.errAt("retry.backoff", "%q: want a duration ≥ 0, e.g. 50ms", r.Backoff)
			}
			m.Retry.Backoff, m.backoff = r.Backoff, d
		}
	}
	switch f.State {
	case "":
	case "reference", "none":
		m.State = f.State
	default:
		return f.errAt("state", "%q: want reference (the service keeps the reference contract's keys on the harness's cluster) or none", f.State)
	}
	return nil
}

// RequestTimeout is the per-request deadline.
func (m *Mapping) RequestTimeout() time.Duration { return m.timeout }

// Backoff is the pause before each re-send.
func (m *Mapping) Backoff() time.Duration { return m.backoff }

// ReferenceState reports whether the service keeps the reference
// contract's keys (state: reference).
func (m *Mapping) ReferenceState() bool { return m.State == "reference" }

// Policy states the client's retry policy in words (the report's).
func (m *Mapping) Policy() string {
	q := "no query endpoint"
	if m.Query != nil {
		q = "an UNKNOWN outcome is first looked up with " + m.Query.Method + " " + m.Query.Path
	}
	return fmt.Sprintf("per-request timeout %s (no answer: UNKNOWN, never a failure); after UNKNOWN or SYSTEM_BUSY the same request (same request_id) is re-sent at most %d times, %s apart; %s",
		m.timeout, m.Retry.Sends, m.backoff, q)
}

// pathValues are the values an endpoint's path may name.
var pathValues = []string{"activity", "sku", "user", "request", "reservation"}

// checkPathRefs refuses a ${name} in an endpoint's path that is not a value.
func checkPathRefs(path string) error {
	_, err := templateRefs(path, "request", "a path", pathValues, "")
	return err
}
