package adapter

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// refusedCommands are the Redis commands the harness refuses in an
// adapter's scripts (redis.call, redis.pcall) and command lists (setup
// commands, state reads), with why. A reserve path touches the keys it
// is given; these act on the whole node, its data set, its
// configuration, its replication or the cluster, or run text the harness
// cannot read — and with --cluster the node holds the user's own data.
// Redis 7.0 already refuses most of them inside a script (noscript), not
// FLUSHALL, FLUSHDB, SWAPDB, KEYS, SCAN, RANDOMKEY or MIGRATE, and none
// of them as a setup command: the harness refuses them all, before any
// call reaches a cluster.
var refusedCommands = map[string]string{}

func init() {
	for why, names := range map[string]string{
		"it deletes or swaps every key of the node":                                               "FLUSHALL FLUSHDB SWAPDB",
		"it walks the whole keyspace, blocking the node, and reaches keys the call does not pass": "KEYS SCAN RANDOMKEY",
		"it moves keys to another Redis server":                                                   "MIGRATE",
		"it stops the server, or changes its configuration, users, modules or logs":               "SHUTDOWN CONFIG DEBUG ACL MODULE CLIENT MONITOR LATENCY SLOWLOG",
		"it writes or rewrites the node's data files":                                             "SAVE BGSAVE BGREWRITEAOF",
		"it changes the node's replication or the cluster":                                        "CLUSTER REPLICAOF SLAVEOF FAILOVER SYNC PSYNC READONLY READWRITE",
		"it runs or removes scripts the harness does not read":                                    "SCRIPT FUNCTION EVAL EVALSHA EVAL_RO EVALSHA_RO FCALL FCALL_RO",
	} {
		for _, n := range strings.Fields(names) {
			refusedCommands[n] = why
		}
	}
}

// RefusedCommands lists the refused commands, sorted.
func RefusedCommands() []string {
	out := make([]string, 0, len(refusedCommands))
	for n := range refusedCommands {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// refusal says why the harness refuses command name ("" when it does
// not).
func refusal(name string) string { return refusedCommands[strings.ToUpper(strings.TrimSpace(name))] }

const refusedFix = "an adapter's scripts and commands may touch only the keys of the sale (docs/ADAPTERS.md, \"Commands the harness refuses\")"

// luaCall is one place a script reaches redis.call or redis.pcall: the
// command name when it is written out as a string literal ("" when it is
// not: a variable, ARGV[n], a concatenation, redis.call passed on or
// aliased), and how it is written.
type luaCall struct {
	line int
	name string
	text string
}

var (
	reRedisCall = regexp.MustCompile(`\bredis\s*\.\s*p?call\b`)
	reRedisRef  = regexp.MustCompile(`\bredis\b\s*(\.\s*\w+)?`)
	reLitName   = regexp.MustCompile(`^(?:"([A-Za-z_]+)"|'([A-Za-z_]+)'|\[(=*)\[([A-Za-z_]+)\]=*\])$`)
)

// scriptCalls finds every redis.call and redis.pcall of src (comments
// and strings skipped) and every other use of redis that is not a field
// access (redis passed on or aliased: local r = redis, redis["call"]),
// whose commands cannot be read either.
func scriptCalls(src string) []luaCall {
	code := codeOnly(src)
	lineAt := func(i int) int { return strings.Count(src[:i], "\n") + 1 }
	var out []luaCall
	for _, m := range reRedisRef.FindAllStringSubmatchIndex(code, -1) {
		ref := strings.Join(strings.Fields(code[m[0]:m[1]]), "")
		if m[2] >= 0 && ref != "redis.call" && ref != "redis.pcall" {
			continue // redis.log, redis.sha1hex, …
		}
		if before := strings.TrimRight(code[:m[0]], " \t"); strings.HasSuffix(before, ".") && !strings.HasSuffix(before, "..") || strings.HasSuffix(before, ":") {
			continue // a field of another table: cfg.redis
		}
		if after := strings.TrimLeft(code[m[1]:], " \t"); m[2] < 0 && strings.HasPrefix(after, "=") && !strings.HasPrefix(after, "==") {
			continue // a field's name: {redis = 1}
		}
		x := luaCall{line: lineAt(m[0]), text: "redis passed on or aliased"}
		if m[2] >= 0 {
			x.name, x.text = firstArg(src, m[1])
		}
		out = append(out, x)
	}
	return out
}

// firstArg reads the command name of the call whose function expression
// ends at src[i]: the first argument of f(…), or the literal of f"…",
// f'…', f[[…]].
func firstArg(src string, i int) (name, text string) {
	rest := strings.TrimLeft(src[i:], " \t\r\n")
	var arg string
	switch {
	case rest == "":
		return "", "redis.call"
	case rest[0] == '(':
		arg = strings.TrimSpace(splitTop(rest[1:])[0])
	case rest[0] == '"' || rest[0] == '\'' || rest[0] == '[':
		arg = rest[:skipLua(rest, 0)]
	default:
		return "", "redis.call passed on as a value"
	}
	if m := reLitName.FindStringSubmatch(arg); m != nil {
		return strings.ToUpper(m[1] + m[2] + m[4]), arg
	}
	if len(arg) > 40 {
		arg = arg[:40] + "…"
	}
	return "", "redis.call(" + arg + ", …)"
}

// checkText refuses script text that is not Lua source: not UTF-8, or
// holding a NUL byte (a binary file). The error names the file, never
// its bytes.
func checkText(path string, src []byte) error {
	if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
		return fmt.Errorf("%s is not Lua source text (binary data, or not UTF-8): give the script's .lua file, saved as UTF-8 text", path)
	}
	return nil
}

// refuseScript refuses a script that calls a refused command by its
// written-out name: path:line, the command and why.
func refuseScript(s *Script) error {
	for _, c := range scriptCalls(s.Source) {
		if why := refusal(c.name); why != "" {
			return fmt.Errorf("%s:%d calls %s, a command the harness refuses: %s. Remove the call: %s", s.Path, c.line, c.name, why, refusedFix)
		}
	}
	return nil
}

// refuseCommands refuses a file whose scripts call, or whose command
// lists run, a refused command; the error names the script's (or the
// file's) line, the command and why.
func (f *File) refuseCommands() error {
	paths := make([]string, 0, len(f.scripts))
	for p := range f.scripts {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := refuseScript(f.scripts[p]); err != nil {
			return f.errAt(p, "%v", err)
		}
	}
	lists := []struct {
		p    string
		cmds [][]Template
	}{{"setup.commands", nil}}
	if f.Setup != nil && f.Setup.Script == "" {
		lists[0].cmds = f.tmpl.setup
	}
	for _, r := range stateReads {
		if ts := f.tmpl.reads[r.name]; ts != nil {
			lists = append(lists, struct {
				p    string
				cmds [][]Template
			}{"state." + r.name, [][]Template{ts}})
		}
	}
	for _, l := range lists {
		for i, cmd := range l.cmds {
			p := l.p
			if l.p == "setup.commands" {
				p = fmt.Sprintf("%s[%d]", l.p, i+1)
			}
			if len(cmd) == 0 {
				continue
			}
			if len(cmd[0].Refs()) > 0 {
				return f.errAt(p+"[1]", "the command name is a template: write the command's name out (e.g. HSET), so the harness can check it is not one it refuses")
			}
			if why := refusal(cmd[0].Text); why != "" {
				return f.errAt(p, "%s is a command the harness refuses: %s. Remove it: %s", strings.ToUpper(cmd[0].Text), why, refusedFix)
			}
		}
	}
	return nil
}

// commandFindings are the static findings of the calls of s whose
// command name is not written out: the harness cannot check it is not a
// refused one before the pre-flight runs the script.
func commandFindings(s *Script) []Finding {
	var out []Finding
	for _, c := range scriptCalls(s.Source) {
		if c.name != "" {
			continue
		}
		out = append(out, Finding{Kind: KindDynamicCommand, Where: fmt.Sprintf("%s:%d", s.Path, c.line),
			Detail: fmt.Sprintf("%s: the command's name is not written out, so the harness cannot check before a call that it is not one it refuses (FLUSHALL, KEYS, CONFIG, …); the pre-flight refuses the load if a sample call runs one, but a path it does not sample can. Write the name as a string literal: redis.call('HGET', …)", c.text)})
	}
	return out
}
