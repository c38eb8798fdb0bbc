package adapter

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"seckill-harness/lua"
)

// Values are the harness's values a template may name. The zero value of
// a field renders as its zero ("" or 0).
type Values struct {
	Activity, SKU    string
	Version          int64
	Bucket           uint32
	Stock            int64 // the bucket's stock (setup)
	StartsAtMs       int64 // the sale window (Unix ms)
	EndsAtMs         int64
	RetentionUntilMs int64 // every key of the activity expires by then (absolute, ms)
	SchemaVersion    string
	User             string
	Request          string
	Reservation      string
	Message          string
	Amount           int64 // units reserved by one call (the harness reserves 1)
	NowMs            int64
	TTLMs            int64 // the reservation's time to live
	Reason           string
}

// A template value's scope: the least the harness must know to render it.
type scope uint8

const (
	scopeActivity scope = 1 << iota // activity-wide
	scopeBucket                     // one bucket
	scopeUser                       // one user of a call
	scopeRequest                    // one request (request, reservation, message ids)
	scopeCall                       // one call (now, ttl, amount)
	scopeSetup                      // the bucket's stock
	scopeRelease                    // a release's reason
)

// valueDef is one template name: its scope, its meaning (for docs and
// errors) and how it renders.
type valueDef struct {
	scope  scope
	doc    string
	render func(v *Values) (string, error)
}

func str(f func(v *Values) string) func(v *Values) (string, error) {
	return func(v *Values) (string, error) { return f(v), nil }
}

func num(f func(v *Values) int64) func(v *Values) (string, error) {
	return func(v *Values) (string, error) { return strconv.FormatInt(f(v), 10), nil }
}

// valueNames is the table of template names (docs/ADAPTERS.md lists it).
var valueNames = map[string]valueDef{
	"activity":           {scopeActivity, "the activity id", str(func(v *Values) string { return v.Activity })},
	"sku":                {scopeActivity, "the SKU id", str(func(v *Values) string { return v.SKU })},
	"version":            {scopeActivity, "the activity version", num(func(v *Values) int64 { return v.Version })},
	"retention_until_ms": {scopeActivity, "when every key of the activity must have expired (Unix ms)", num(func(v *Values) int64 { return v.RetentionUntilMs })},
	"retention_until_s":  {scopeActivity, "the same in Unix seconds (rounded up)", num(func(v *Values) int64 { return (v.RetentionUntilMs + 999) / 1000 })},
	"starts_at_ms":       {scopeActivity, "when the sale opens (Unix ms)", num(func(v *Values) int64 { return v.StartsAtMs })},
	"ends_at_ms":         {scopeActivity, "when the sale closes (Unix ms)", num(func(v *Values) int64 { return v.EndsAtMs })},
	"schema_version":     {scopeActivity, "the reference contract's record schema version", str(func(v *Values) string { return v.SchemaVersion })},
	"bucket":             {scopeBucket, "the stock bucket (0-based)", num(func(v *Values) int64 { return int64(v.Bucket) })},
	"stock":              {scopeSetup, "the bucket's stock (setup only)", num(func(v *Values) int64 { return v.Stock })},
	"user":               {scopeUser, "the user id (u<n>)", str(func(v *Values) string { return v.User })},
	"user_num":           {scopeUser, "the user's number: the digits of a harness user id u<n>", renderUserNum},
	"request":            {scopeRequest, "the request id (the idempotency key of one attempt and its re-sends)", str(func(v *Values) string { return v.Request })},
	"reservation":        {scopeRequest, "the reservation id the harness derived for the request", str(func(v *Values) string { return v.Reservation })},
	"request_shard":      {scopeRequest, "the reference contract's request-cache shard of the request: fnv32a(request id) mod 256, three digits", str(func(v *Values) string { return fmt.Sprintf("%03d", lua.RequestShard(v.Request)) })},
	"message":            {scopeRequest, "the message id derived for the reservation", str(func(v *Values) string { return v.Message })},
	"amount":             {scopeCall, "units reserved by one call (1)", num(func(v *Values) int64 { return v.Amount })},
	"now_ms":             {scopeCall, "the harness's clock (Unix ms)", num(func(v *Values) int64 { return v.NowMs })},
	"now_s":              {scopeCall, "the harness's clock (Unix seconds)", num(func(v *Values) int64 { return v.NowMs / 1000 })},
	"ttl_ms":             {scopeCall, "the reservation's TTL in ms", num(func(v *Values) int64 { return v.TTLMs })},
	"ttl_s":              {scopeCall, "the reservation's TTL in seconds (rounded up)", num(func(v *Values) int64 { return (v.TTLMs + 999) / 1000 })},
	"reason":             {scopeRelease, "why a reservation is released (release only)", str(func(v *Values) string { return v.Reason })},
}

// tagName is the template name of the rendered hash tag.
const tagName = "tag"

func renderUserNum(v *Values) (string, error) {
	d := strings.TrimPrefix(v.User, "u")
	if _, err := strconv.ParseUint(d, 10, 32); err != nil || d == v.User {
		return "", fmt.Errorf("${user_num}: user id %q is not u<number>", v.User)
	}
	return d, nil
}

// Where a template sits decides the values it may name.
const (
	ctxHashTag  = scopeActivity | scopeBucket | scopeUser
	ctxSetup    = scopeActivity | scopeBucket | scopeSetup | scopeCall
	ctxReserve  = scopeActivity | scopeBucket | scopeUser | scopeRequest | scopeCall
	ctxRelease  = scopeActivity | scopeBucket | scopeUser | scopeRequest | scopeCall | scopeRelease
	ctxBucket   = scopeActivity | scopeBucket
	ctxUser     = ctxBucket | scopeUser
	ctxKeyspace = ctxBucket | scopeUser | scopeRequest // teardown keys, expiring keys, record reads
)

// namesIn lists the template names allowed in context ctx, sorted.
func namesIn(ctx scope, tagOK bool) []string {
	var out []string
	for n, d := range valueNames {
		if d.scope&ctx != 0 {
			out = append(out, "${"+n+"}")
		}
	}
	if tagOK {
		out = append(out, "${"+tagName+"}")
	}
	sort.Strings(out)
	return out
}

// Template is one parsed template: literal text and value names.
type Template struct {
	Text string
	segs []seg
}

type seg struct {
	lit  string
	name string // "" for a literal
}

// Refs returns the value names the template uses, in order of appearance.
func (t Template) Refs() []string {
	var out []string
	for _, s := range t.segs {
		if s.name != "" {
			out = append(out, s.name)
		}
	}
	return out
}

// parseTemplate splits text into literals and ${name} references. It
// checks the syntax only; names are checked against a context by check.
func parseTemplate(text string) (Template, error) {
	t := Template{Text: text}
	var lit strings.Builder
	for i := 0; i < len(text); i++ {
		if text[i] != '$' {
			lit.WriteByte(text[i])
			continue
		}
		if i+1 < len(text) && text[i+1] == '$' {
			lit.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(text) || text[i+1] != '{' {
			return t, fmt.Errorf("a lone $ at byte %d of %q: write ${name} for a value or $$ for a literal $", i, text)
		}
		end := strings.IndexByte(text[i+2:], '}')
		if end < 0 {
			return t, fmt.Errorf("${ at byte %d of %q is not closed: write ${name}", i, text)
		}
		if lit.Len() > 0 {
			t.segs = append(t.segs, seg{lit: lit.String()})
			lit.Reset()
		}
		t.segs = append(t.segs, seg{name: text[i+2 : i+2+end]})
		i += 2 + end
	}
	if lit.Len() > 0 {
		t.segs = append(t.segs, seg{lit: lit.String()})
	}
	return t, nil
}

// render writes t with v; tag is the rendered ${tag} (braces included).
func (t Template) render(v *Values, tag string) (string, error) {
	var b strings.Builder
	for _, s := range t.segs {
		if s.name == "" {
			b.WriteString(s.lit)
			continue
		}
		if s.name == tagName {
			b.WriteString(tag)
			continue
		}
		d, ok := valueNames[s.name]
		if !ok {
			return "", fmt.Errorf("unknown value ${%s}", s.name)
		}
		x, err := d.render(v)
		if err != nil {
			return "", err
		}
		b.WriteString(x)
	}
	return b.String(), nil
}

// scopeOf is the union of the scopes of t's references (${tag}: those of
// the hash tag's).
func (t Template) scopeOf(hashTag Template) scope {
	var s scope
	for _, n := range t.Refs() {
		if n == tagName {
			s |= hashTag.scopeOf(Template{})
			continue
		}
		s |= valueNames[n].scope
	}
	return s
}
