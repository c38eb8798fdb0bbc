package adapter

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Finding is one thing wrong with a file's scripts, seen without a
// cluster (StaticFindings) or by running them before any load
// (Preflight). Both report it the same way: Kind says what, Where points
// at the line to fix (the adapter file's or the script's), Keys names the
// keys at fault (rendered for sample values; empty when the finding is
// about the script's text), Detail says in a team's words what is wrong
// and what to do.
type Finding struct {
	Kind   string // one of the Kind* constants
	Where  string // file:line
	Keys   []string
	Detail string
	// Refuses: Redis itself refused a sample call here (CROSSSLOT, a key
	// on another node, the script's own error), so the load would fail
	// the same way, or the recorder stopped a command the harness refuses
	// (KindRefusedCommand): the run refuses the load. A finding Redis let
	// through (a key outside KEYS that Redis ran) does not refuse it
	// unless the file says preflight: strict: the load runs, and the
	// checks and faults show what the shape costs. Static findings have
	// it false (no call ran).
	Refuses bool
}

// The kinds of finding. KindSlots, KindBuiltKey and KindUndeclared make a
// script unsafe on Redis Cluster; A1 fails on every kind, and the run
// refuses the load on a finding that Refuses.
const (
	// KindSlots: the KEYS of one call are in different slots.
	KindSlots = "keys-in-different-slots"
	// KindBuiltKey: the script's text builds a key instead of taking it
	// from KEYS (static).
	KindBuiltKey = "key-built-in-script"
	// KindUndeclared: a sample call touched a key it does not pass in
	// KEYS (Preflight).
	KindUndeclared = "key-not-in-keys"
	// KindScriptError: a sample call failed with an error of the script's
	// own (Preflight).
	KindScriptError = "script-error"
	// KindRefusedCommand: a sample call ran a command the harness
	// refuses (refusedCommands), with a name the text does not write out
	// (Preflight; one written out refuses the file at Load). The recorder
	// stops it before Redis runs it; it always refuses the load.
	KindRefusedCommand = "refused-command"
	// KindDynamicCommand: a redis.call whose command name is not written
	// out, so it cannot be checked against the refused commands (static).
	KindDynamicCommand = "command-name-not-literal"
)

// Problem is the finding's verdict in a team's words.
func (x Finding) Problem() string {
	switch x.Kind {
	case KindScriptError:
		return "script fails"
	case KindRefusedCommand:
		return "refused command"
	case KindDynamicCommand:
		return "command not checked"
	}
	return "not cluster-safe"
}

func (x Finding) String() string {
	return fmt.Sprintf("%s: %s (%s): %s", x.Where, x.Problem(), x.Kind, x.Detail)
}

// sampleValues are two calls of different users, requests and buckets:
// keys that share a slot for one and not the other are caught too.
var sampleValues = []Values{
	{Activity: "act1", SKU: "sku1", Version: 1, Bucket: 0, Stock: 10, RetentionUntilMs: 1_900_000_000_000,
		User: "u1", Request: "r1", Reservation: "resv1", Message: "msg1", Amount: 1, NowMs: 1_800_000_000_000, TTLMs: 60_000, Reason: "test"},
	{Activity: "act1", SKU: "sku1", Version: 1, Bucket: 3, Stock: 10, RetentionUntilMs: 1_900_000_000_000,
		User: "u2", Request: "r2", Reservation: "resv2", Message: "msg2", Amount: 1, NowMs: 1_800_000_000_000, TTLMs: 60_000, Reason: "test"},
}

// StaticFindings reports what can be seen before any load: the KEYS of one
// call of an op rendered into different slots (for sample values), and
// keys a script builds itself (from ARGV or string literals) instead of
// taking them from KEYS. The scan of the Lua source is deliberately
// narrow: it names only a key argument that is visibly built (a string
// literal, a concatenation, ARGV, or a local assigned one of those), so
// it has no false findings on scripts that pass their keys through
// locals or functions; what it cannot see is for the pre-flight against
// the stand. It also names every redis.call whose command name is not
// written out (KindDynamicCommand): Load refuses the refused commands
// (refusedCommands) written out, not those.
func (f *File) StaticFindings() []Finding {
	var out []Finding
	for _, op := range []Op{OpReserve, OpRelease} {
		if f.Has(op) {
			out = append(out, f.slotFindings(op)...)
		}
	}
	paths := make([]string, 0, len(f.scripts))
	for p := range f.scripts {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		out = append(out, scanScript(f.scripts[p])...)
		out = append(out, commandFindings(f.scripts[p])...)
	}
	return out
}

func (f *File) slotFindings(op Op) []Finding {
	for _, v := range sampleValues {
		keys, _, err := f.Render(op, v)
		if err != nil || len(keys) < 2 {
			continue
		}
		slots := KeySlots(keys)
		for i := 1; i < len(keys); i++ {
			if slots[i] != slots[0] {
				p := fmt.Sprintf("%s.keys[%d]", op, i+1)
				return []Finding{{Kind: KindSlots, Where: fmt.Sprintf("%s:%d", f.Path, f.line(p)), Keys: []string{keys[0], keys[i]},
					Detail: fmt.Sprintf("%s KEYS[1] %q is in slot %d, KEYS[%d] %q in slot %d: a script's keys must share one slot; give them the same hash tag (${tag})",
						op, keys[0], slots[0], i+1, keys[i], slots[i])}}
			}
		}
	}
	return nil
}

// keyCommands take a key as their first argument.
var keyCommands = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX INCR INCRBY DECR DECRBY
		INCRBYFLOAT APPEND STRLEN DEL UNLINK EXISTS EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL PERSIST TYPE
		HGET HSET HSETNX HMSET HMGET HINCRBY HINCRBYFLOAT HDEL HEXISTS HGETALL HLEN HKEYS HVALS
		SADD SREM SISMEMBER SMISMEMBER SMEMBERS SCARD ZADD ZREM ZSCORE ZCARD ZRANGE ZRANGEBYSCORE ZINCRBY
		LPUSH RPUSH LPOP RPOP LLEN LRANGE XADD XLEN`) {
		keyCommands[c] = true
	}
}

var (
	reLocal    = regexp.MustCompile(`^\s*local\s+([A-Za-z_][\w\s,]*?)\s*=\s*(.+)$`)
	reCall     = regexp.MustCompile(`redis\.p?call\(\s*["']([A-Za-z]+)["']\s*,\s*`)
	reKeysElem = regexp.MustCompile(`^KEYS\[\s*\d+\s*\]$`)
)

// built reports whether a Lua expression visibly builds a key.
func built(expr string, builtLocals map[string]bool) bool {
	e := strings.TrimSpace(expr)
	if reKeysElem.MatchString(e) {
		return false
	}
	return strings.Contains(e, "..") || strings.Contains(e, "ARGV") || strings.ContainsAny(e, `"'`) ||
		strings.Contains(e, "string.format") || builtLocals[e]
}

// scanScript finds redis.call(CMD, key, …) whose key is built in the script.
func scanScript(s *Script) []Finding {
	var out []Finding
	builtLocals := map[string]bool{}
	for i, line := range strings.Split(s.Source, "\n") {
		if c := strings.Index(line, "--"); c >= 0 {
			line = line[:c]
		}
		if m := reLocal.FindStringSubmatch(line); m != nil {
			names, exprs := strings.Split(m[1], ","), splitTop(m[2])
			for j, n := range names {
				if j < len(exprs) {
					builtLocals[strings.TrimSpace(n)] = built(exprs[j], builtLocals)
				}
			}
		}
		for _, loc := range reCall.FindAllStringSubmatchIndex(line, -1) {
			cmd := strings.ToUpper(line[loc[2]:loc[3]])
			args := splitTop(line[loc[1]:])
			if !keyCommands[cmd] || len(args) == 0 || !built(args[0], builtLocals) {
				continue
			}
			out = append(out, Finding{Kind: KindBuiltKey, Where: fmt.Sprintf("%s:%d", s.Path, i+1),
				Detail: fmt.Sprintf("%s's key %s is built in the script, not passed in KEYS: Redis Cluster routes a script by its KEYS only; pass the key in KEYS (with the call's hash tag)", cmd, strings.TrimSpace(args[0]))})
		}
	}
	return out
}
