package scenarios

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"seckill-harness/internal/fileref"
	"seckill-harness/runner"
)

// The schema describes every field a scenario file may hold. The strict
// check (unknown fields, wrong shapes, unparsable scalars) and --set's key
// validation both read it, so a field exists in one place only.

type stype uint8

const (
	tString stype = iota
	tInt
	tFloat
	tDuration
	tBool
	tStrings // a list of strings, or one scalar (comma-separated)
	tMap     // fixed fields
	tList    // of elem
	tDict    // free keys → elem
)

type field struct {
	name string
	sch  *schema
}

type schema struct {
	t      stype
	fields []field
	elem   *schema
	what   string // for a dict: what its keys are ("parameter", "outcome")
}

func (s *schema) field(name string) *schema {
	for _, f := range s.fields {
		if f.name == name {
			return f.sch
		}
	}
	return nil
}

func (s *schema) names() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.name
	}
	return out
}

var (
	sString   = &schema{t: tString}
	sInt      = &schema{t: tInt}
	sFloat    = &schema{t: tFloat}
	sDuration = &schema{t: tDuration}
	sBool     = &schema{t: tBool}
	sStrings  = &schema{t: tStrings}
)

// Shape parameters, by the shapes they apply to.
var shapeParams = map[string][]string{
	"constant": nil,
	"linear":   {"slope"},
	"sine":     {"amplitude", "period"},
	"spike":    {"peak", "spike_at", "ramp_up", "hold", "ramp_down"},
}

var mixSchema = &schema{t: tMap, fields: mixFields()}

// mixFields are a mix's fields: one per share of runner.Mix.
func mixFields() []field {
	var fs []field
	for _, sh := range new(runner.Mix).Shares() {
		fs = append(fs, field{sh.Name, sFloat})
	}
	return fs
}

// loadFields are the fields of a load phase (and of defaults:, without name).
var loadFields = []field{
	{"duration", sDuration},
	{"mode", sString},
	{"shape", sString},
	{"rate", sFloat},
	{"slope", sFloat},
	{"amplitude", sFloat},
	{"period", sDuration},
	{"peak", sFloat},
	{"spike_at", sDuration},
	{"ramp_up", sDuration},
	{"hold", sDuration},
	{"ramp_down", sDuration},
	{"concurrency", sInt},
	{"max_in_flight", sInt},
	{"max_ops", sInt},
	{"timeout", sDuration},
	{"retries", sInt},
	{"retry_backoff", sDuration},
	{"mix", mixSchema},
}

var (
	defaultsSchema = &schema{t: tMap, fields: loadFields}
	phaseSchema    = &schema{t: tMap, fields: append([]field{{"name", sString}}, loadFields...)}

	topologySchema = &schema{t: tMap, fields: []field{
		{"masters", sInt}, {"replicas", sInt}, {"node_timeout", sDuration}, {"appendonly", sBool}, {"pool_size", sInt}, {"pool_timeout", sDuration},
		{"min_replicas_to_write", sInt}, {"min_replicas_max_lag", sDuration}, {"appendfsync", sString},
	}}
	activitySchema = &schema{t: tMap, fields: []field{
		{"stock", sInt}, {"buckets", sInt}, {"users", sInt}, {"scale_users", sBool},
		{"reservation_ttl", sDuration}, {"window", sDuration},
	}}
	faultSchema = &schema{t: tMap, fields: []field{
		{"name", sString}, {"kind", sString}, {"at", sDuration}, {"for", sDuration}, {"target", sString},
		{"params", &schema{t: tDict, elem: sString, what: "parameter"}},
	}}
	sloSchema = &schema{t: tMap, fields: []field{
		{"phase", sString}, {"of", sString},
		{"p50", sDuration}, {"p95", sDuration}, {"p99", sDuration}, {"p999", sDuration}, {"max", sDuration},
		{"min_throughput", sFloat},
	}}
	boundSchema      = &schema{t: tMap, fields: []field{{"exactly", sInt}, {"min", sInt}, {"max", sInt}}}
	assertionsSchema = &schema{t: tMap, fields: []field{
		{"invariants", sStrings},
		{"slo", &schema{t: tList, elem: sloSchema}},
		{"max_lost_acks", sInt},
		{"expect_fail", &schema{t: tDict, elem: &schema{t: tMap, fields: []field{{"min", sInt}}}, what: "invariant"}},
		{"max_unknown_ratio", sFloat},
		{"max_dropped_ratio", sFloat},
		{"min_throughput", sFloat},
		{"outcomes", &schema{t: tDict, elem: boundSchema, what: "outcome"}},
	}}

	pipelineSchema = &schema{t: tMap, fields: []field{
		{"seed", sInt},
		{"mq", &schema{t: tMap, fields: []field{
			{"ack", sFloat}, {"error", sFloat}, {"timeout", sFloat}, {"timeout_delivered", sFloat},
			{"timeout_after", sDuration}, {"lost", sFloat},
		}}},
		{"order", &schema{t: tMap, fields: []field{{"reject", sFloat}, {"delay", sDuration}, {"workers", sInt}}}},
		{"dispatcher", &schema{t: tMap, fields: []field{
			{"every", sDuration}, {"batch", sInt}, {"workers", sInt}, {"retry_after", sDuration}, {"scan_after", sDuration},
		}}},
		{"expiry", &schema{t: tMap, fields: []field{{"every", sDuration}, {"batch", sInt}, {"max_pages", sInt}}}},
		{"release", &schema{t: tMap, fields: []field{{"workers", sInt}, {"retry", sDuration}, {"attempts", sInt}}}},
		{"call_timeout", sDuration},
		{"drain", sDuration},
		{"defects", sStrings},
	}}

	rootSchema = &schema{t: tMap, fields: []field{
		{"name", sString},
		{"description", sString},
		{"proves", sString},
		{"seed", sInt},
		{"rate_scale", sFloat},
		{"path", sString},
		{"adapter", sString},
		{"service_cmd", sString},
		{"service_ready", sString},
		{"service", &schema{t: tMap, fields: []field{{"url", sString}, {"mapping", sString}}}},
		{"local_soldout", sDuration},
		{"tolerate_events", sStrings},
		{"regressions", &schema{t: tDict, elem: sString, what: "figure"}},
		{"wait", &schema{t: tMap, fields: []field{{"replicas", sInt}, {"timeout", sDuration}}}},
		{"topology", topologySchema},
		{"activity", activitySchema},
		{"defaults", defaultsSchema},
		{"phases", &schema{t: tList, elem: phaseSchema}},
		{"faults", &schema{t: tList, elem: faultSchema}},
		{"pipeline", pipelineSchema},
		{"assertions", assertionsSchema},
		{"suite", sStrings},
	}}
)

// checkTree reports every unknown field, wrong shape and unparsable scalar.
func checkTree(source string, n *node, sch *schema, path string, errs *[]error) {
	bad := func(p pos, path, format string, args ...any) {
		*errs = append(*errs, errors.New(fileref.Clip(fmt.Sprintf("%s: %s: %s", where(source, p), path, fmt.Sprintf(format, args...)))))
	}
	if n == nil {
		return
	}
	switch sch.t {
	case tMap, tDict:
		if n.kind == nullNode {
			return // an empty section
		}
		if n.kind != mapNode {
			bad(n.pos, path, "want a mapping, got a %s", kindName(n))
			return
		}
		for _, k := range n.keys {
			sub := sch.elem
			if sch.t == tMap {
				sub = sch.field(k)
				if sub == nil {
					msg := fmt.Sprintf("unknown field %q; valid fields of %s: %s", k, orRoot(path), strings.Join(sch.names(), ", "))
					if s := suggest(k, sch.names()); s != "" {
						msg += fmt.Sprintf(" (did you mean %s?)", s)
					}
					bad(n.keyPos[k], join(path, fileref.Cut(k)), "%s", msg)
					continue
				}
			}
			checkTree(source, n.vals[k], sub, join(path, fileref.Cut(k)), errs)
		}
	case tList:
		if n.kind == nullNode {
			return
		}
		if n.kind != seqNode {
			bad(n.pos, path, "want a list (- item lines or [a, b]), got a %s", kindName(n))
			return
		}
		for i, it := range n.items {
			checkTree(source, it, sch.elem, fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case tStrings:
		switch n.kind {
		case nullNode, scalarNode:
		case seqNode:
			for i, it := range n.items {
				if it.kind != scalarNode {
					bad(it.pos, fmt.Sprintf("%s[%d]", path, i), "want a name, got a %s", kindName(it))
				}
			}
		default:
			bad(n.pos, path, "want a list of names, got a %s", kindName(n))
		}
	default:
		if n.kind == nullNode {
			bad(n.pos, path, "no value; want %s", scalarWant(sch.t))
			return
		}
		if n.kind != scalarNode {
			bad(n.pos, path, "want %s, got a %s", scalarWant(sch.t), kindName(n))
			return
		}
		if err := parseScalar(sch.t, n.text); err != nil {
			bad(n.pos, path, "%q: %v", n.text, err)
		}
	}
}

func orRoot(path string) string {
	if path == "" {
		return "a scenario"
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(source string, p pos) string {
	switch {
	case p.flag != "":
		return p.flag
	case p.set != "":
		return "--set " + p.set
	case p.line > 0:
		return fmt.Sprintf("%s:%d", source, p.line)
	}
	return source
}

func scalarWant(t stype) string {
	switch t {
	case tInt:
		return "an integer"
	case tFloat:
		return "a number"
	case tDuration:
		return "a Go duration like 500ms or 10s"
	case tBool:
		return "true or false"
	}
	return "a string"
}

func parseScalar(t stype, text string) error {
	var err error
	switch t {
	case tInt:
		_, err = parseInt(text)
	case tFloat:
		_, err = parseFloat(text)
	case tDuration:
		_, err = parseDuration(text)
	case tBool:
		_, err = parseBool(text)
	}
	return err
}

func parseInt(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseInt(s, 0, 64); err == nil {
		return v, nil
	}
	// 1e6 and 100000.0 are integers too.
	if f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<62 {
		return int64(f), nil
	}
	return 0, fmt.Errorf("want an integer")
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(s), "_", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a number")
	}
	return f, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("want a Go duration like 500ms, 10s or 1m30s")
	}
	return d, nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on":
		return true, nil
	case "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("want true or false")
}

// suggest returns the valid name closest to s, if it is close.
func suggest(s string, valid []string) string {
	best, bestD := "", 1<<30
	for _, v := range valid {
		if d := editDistance(s, v); d < bestD {
			best, bestD = v, d
		}
	}
	if bestD <= 2 || (bestD <= 3 && len(s) > 6) {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// SetKeys lists the key patterns --set accepts, for help texts and errors.
// <i> is a list index (0-based), <name> an entry's name, * every entry.
func SetKeys() []string {
	var out []string
	var walk func(prefix string, s *schema)
	walk = func(prefix string, s *schema) {
		switch s.t {
		case tMap:
			for _, f := range s.fields {
				walk(join(prefix, f.name), f.sch)
			}
		case tList:
			sel := "<i>"
			if s.elem.field("name") != nil {
				sel = "<i|name|*>"
			}
			walk(prefix+"."+sel, s.elem)
		case tDict:
			walk(prefix+".<"+s.what+">", s.elem)
		default:
			out = append(out, prefix)
		}
	}
	walk("", rootSchema)
	return out
}

// setKeyList is SetKeys condensed for error messages: one entry per
// section with its fields in braces.
func setKeyList() string {
	groups := map[string][]string{}
	var order []string
	for _, k := range SetKeys() {
		i := strings.LastIndex(k, ".")
		g, leaf := "", k
		if i >= 0 {
			g, leaf = k[:i], k[i+1:]
		}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], leaf)
	}
	var parts []string
	for _, g := range order {
		leaves := groups[g]
		if g == "" {
			parts = append(parts, leaves...)
			continue
		}
		if len(leaves) == 1 {
			parts = append(parts, g+"."+leaves[0])
			continue
		}
		parts = append(parts, g+".{"+strings.Join(leaves, ",")+"}")
	}
	return strings.Join(parts, " ")
}
