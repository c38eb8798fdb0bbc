package httpsut

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// Call is one HTTP call of a mapping's setup: or teardown: list.
type Call struct {
	// Method is the HTTP method (default POST).
	Method string `yaml:"method"`
	// Path is the URL path (and query string) under the service's URL; it
	// may name ${activity}, ${sku}, ${stock}, ${buckets}, ${bucket}, each
	// URL-escaped.
	Path string `yaml:"path"`
	// Body maps each JSON field of the request body to the value it
	// carries, written as the value's name or as ${name}: activity and sku
	// (strings), stock, buckets and bucket (numbers).
	Body map[string]string `yaml:"body"`
	// Expect lists the HTTP statuses that mean the call did its work
	// (default: any 2xx).
	Expect []int `yaml:"expect"`
}

// callValues are the values a setup or teardown call may carry: the run's
// activity id, its SKU, its stock (the whole stock; a bucket's share in a
// call sent per bucket), its bucket count, and a bucket's number.
var callValues = []string{"activity", "sku", "stock", "buckets", "bucket"}

// CallTimeout bounds each setup and teardown call (a sale may take longer
// to create than a reserve to answer).
const CallTimeout = 10 * time.Second

// maxQuoted bounds what an error quotes of a call's answer.
const maxQuoted = 48

// perBucket reports whether c names ${bucket} (in its path or body): it is
// then sent once per bucket.
func (c *Call) perBucket() bool {
	if strings.Contains(c.Path, "${bucket}") {
		return true
	}
	for _, v := range c.Body {
		if v == "bucket" {
			return true
		}
	}
	return false
}

// mergeCalls checks file f's setup: and teardown: calls and puts them on m:
// a path starting with /, only the call values in it and in the body
// (a body's ${name} is kept as name), statuses 100..599.
func (m *Mapping) mergeCalls(f *Mapping) error {
	for _, l := range []struct {
		name     string
		dst, src *[]Call
	}{{"setup", &m.Setup, &f.Setup}, {"teardown", &m.Teardown, &f.Teardown}} {
		var out []Call
		for i, c := range *l.src {
			at := fmt.Sprintf("%s[%d]", l.name, i+1) // the decoder's numbering: the first is [1]
			if c.Method == "" {
				c.Method = http.MethodPost
			}
			c.Method = strings.ToUpper(c.Method)
			if !strings.HasPrefix(c.Path, "/") {
				return f.errAt(at+".path", "%q: want a path starting with / (it is put after the service's URL), e.g. /admin/sales/${activity}", c.Path)
			}
			if err := checkCallRefs(c.Path); err != nil {
				return f.errAt(at+".path", "%v", err)
			}
			body := make(map[string]string, len(c.Body))
			for field, v := range c.Body {
				name := v
				if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
					name = v[2 : len(v)-1]
				}
				if !isCallValue(name) {
					return f.errAt(at+".body."+field, "%q is not a value the harness sends with a %s call: the values are %s (written bare or as ${name})", v, l.name, strings.Join(callValues, ", "))
				}
				body[field] = name
			}
			if c.Body != nil {
				c.Body = body
			}
			for j, st := range c.Expect {
				if st < 100 || st > 599 {
					return f.errAt(fmt.Sprintf("%s.expect[%d]", at, j+1), "%d is not an HTTP status: want the statuses (100..599) that mean the call did its work, e.g. [200, 201]", st)
				}
			}
			out = append(out, c)
		}
		if len(out) > 0 || f.given(l.name) {
			*l.dst = out
		}
	}
	return nil
}

func isCallValue(v string) bool {
	for _, n := range callValues {
		if v == n {
			return true
		}
	}
	return false
}

// ThroughService reports whether the mapping sets the sale up or tears it
// down through the service's own API (setup: or teardown: calls): the run
// then tears it down after every run (sut.ServiceProvisioner).
func (s *System) ThroughService() bool { return len(s.m.Setup) > 0 || len(s.m.Teardown) > 0 }

var _ sut.ServiceProvisioner = (*System)(nil)

// Setup creates the activity a: through the mapping's setup calls when it
// has some (sent in order; the harness then writes no key itself, state:
// reference too), otherwise with state: reference by writing its keys
// (lua.Setup). A setup call that is not answered one of its expected
// statuses is an error naming the call, its status and the fix, quoting
// at most a few dozen bytes of the answer; when calls before it succeeded,
// the teardown calls are sent first (the lifecycle tears down only what
// was set up), so Teardown afterwards sends nothing.
func (s *System) Setup(ctx context.Context, a *lua.Activity) error {
	switch {
	case len(s.m.Setup) > 0:
		done, err := s.sendCalls(ctx, "setup", s.m.Setup, a, true)
		if err != nil {
			if done > 0 && len(s.m.Teardown) > 0 {
				s.mu.Lock()
				s.tornDown = true
				s.mu.Unlock()
				if _, terr := s.sendCalls(ctx, "teardown", s.m.Teardown, a, false); terr != nil {
					return fmt.Errorf("%w; undoing the %d setup call(s) that succeeded: %v", err, done, terr)
				}
				return fmt.Errorf("%w (the teardown calls undid the %d setup call(s) that succeeded)", err, done)
			}
			return err
		}
	case s.ref != nil:
		if err := s.ref.Setup(ctx, a); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.act = a
	s.mu.Unlock()
	return nil
}

// Teardown removes the activity: it sends the mapping's teardown calls
// (once: a later Teardown sends none), every one even when another fails,
// then, with state: reference, removes what is left of the activity's
// keys on the harness's cluster. It returns the number of keys the
// harness removed itself; what the service removed through its own API is
// not counted (0 with state: none). The error names each call that failed.
func (s *System) Teardown(ctx context.Context, a *lua.Activity) (int64, error) {
	s.mu.Lock()
	calls := s.m.Teardown
	if s.tornDown {
		calls = nil
	}
	s.tornDown = true
	s.mu.Unlock()
	var errs []error
	if len(calls) > 0 {
		if _, err := s.sendCalls(ctx, "teardown", calls, a, false); err != nil {
			errs = append(errs, err)
		}
	}
	var n int64
	if s.ref != nil {
		var err error
		n, err = s.ref.Teardown(ctx, a)
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// sendCalls sends calls in order for activity a (a call naming ${bucket}
// once per bucket) and returns how many sends succeeded; stopFirst stops
// at the first failure, otherwise every call is sent and the failures
// are joined.
func (s *System) sendCalls(ctx context.Context, list string, calls []Call, a *lua.Activity, stopFirst bool) (int, error) {
	done := 0
	var errs []error
	for i, c := range calls {
		v := map[string]string{"activity": a.ID, "sku": a.SKU, "stock": strconv.FormatInt(a.Stock, 10),
			"buckets": strconv.FormatUint(uint64(a.Buckets), 10)}
		buckets := []uint32{0}
		if c.perBucket() {
			buckets = buckets[:0]
			for b := uint32(0); b < a.Buckets; b++ {
				buckets = append(buckets, b)
			}
		}
		for _, b := range buckets {
			if c.perBucket() {
				v["bucket"], v["stock"] = strconv.FormatUint(uint64(b), 10), strconv.FormatInt(a.BucketStock(b), 10)
			}
			if err := s.call(ctx, list, i, c, v); err != nil {
				if stopFirst {
					return done, err
				}
				errs = append(errs, err)
				continue
			}
			done++
		}
	}
	return done, errors.Join(errs...)
}

// call sends call i (0-based) of list (setup or teardown) with values v
// and checks its status. The error names it as the mapping's errors do:
// list[i+1].
func (s *System) call(ctx context.Context, list string, i int, c Call, v map[string]string) error {
	t, err := s.target(&Endpoint{Method: c.Method, Path: c.Path, Body: c.Body}, v)
	i++
	what := fmt.Sprintf("service %s: %s[%d] %s %s", list, list, i, c.Method, strings.TrimPrefix(t.URL, s.base))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	at := ""
	if s.m.path != "" {
		at = fmt.Sprintf(" at %s:%d", s.m.path, s.m.lines[fmt.Sprintf("%s[%d].path", list, i)])
	}
	rctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	req, err := t.Request()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	resp, err := s.client.Do(req.WithContext(rctx))
	if err != nil {
		return fmt.Errorf("%s: no answer: %v: fix: the service must answer it at %s once it is ready (with --service-cmd, its readiness URL must answer 200 only then), or correct the mapping's %s[%d]%s",
			what, err, s.base, list, i, at)
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxQuoted+1)) // only what an error quotes: a body may be huge
	resp.Body.Close()
	if expected(c.Expect, resp.StatusCode) {
		return nil
	}
	want := "a 2xx status"
	if len(c.Expect) > 0 {
		want = fmt.Sprintf("one of %v", c.Expect)
	}
	return fmt.Errorf("%s answered HTTP %d, want %s (the answer begins %s): fix: make the service answer it with %s, or correct the mapping's %s[%d]%s (expect: lists the statuses that mean the call did its work)",
		what, resp.StatusCode, want, quoted(head), want, list, i, at)
}

func expected(expect []int, status int) bool {
	if len(expect) == 0 {
		return status >= 200 && status < 300
	}
	for _, e := range expect {
		if e == status {
			return true
		}
	}
	return false
}

// quoted is at most maxQuoted bytes of b, quoted.
func quoted(b []byte) string {
	if len(b) > maxQuoted {
		return fmt.Sprintf("%q…", b[:maxQuoted])
	}
	return fmt.Sprintf("%q", b)
}

// checkCallRefs refuses a ${name} in a call's path that is not a call value.
func checkCallRefs(path string) error {
	_, err := templateRefs(path, "activity", "a setup or teardown call", callValues, "")
	return err
}
