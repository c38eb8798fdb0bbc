package adapter

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// recorderPrelude wraps a script so that it answers {error, log}: error
// is "" or the text of the error the script raised, log one entry per
// redis.call/redis.pcall, {"user_script:LINE: ", command, args...}. A
// command the harness refuses (refusedCommands, in __hrefused) is logged
// and not run: the call raises "the harness refused NAME". It is
// one line, prepended to the script's first line (after a #! line), so
// the script keeps its line numbers; the line of a call is found by
// raising an error four levels up (the Lua of Redis has no debug library).
const recorderPrelude = `local __hlog = {} local __hpc = redis.pcall ` +
	`local function __hwhere() error('', 5) end ` +
	`local function __hrec(...) local a = {} for i = 1, select('#', ...) do a[i] = tostring((select(i, ...))) end ` +
	`local _, w = pcall(__hwhere) table.insert(a, 1, tostring(w)) __hlog[#__hlog + 1] = a end ` +
	`local function __hno(...) local n = string.upper(tostring((...))) if __hrefused[n] then error({err = 'the harness refused ' .. n}) end end ` +
	`local function __hcall(...) __hrec(...) __hno(...) local r = __hpc(...) if type(r) == 'table' and r.err then error(r) end return r end ` +
	`local function __hpcall(...) __hrec(...) __hno(...) return __hpc(...) end ` +
	`local __hok, __herr = pcall(function(...) `

const recorderEnd = "\nend) if __hok then return {__hshape(__herr), __hlog} end " +
	"if type(__herr) == 'table' then __herr = __herr.err or '?' end return {tostring(__herr), __hlog}"

// Limits of a script's reply, checked on every sample call by the
// recorder (recorderShape) before the reply leaves Redis: a reply is
// decoded whole by the client before the harness can judge it, and one
// nested a million deep took 90 s and 446 MB to decode (and blocked its
// node long enough for the cluster to fail it over). The contract's
// replies are flat arrays of a few elements.
const (
	MaxReplyDepth    = 16
	MaxReplyElements = 10_000
)

// replyLimitMark starts the error the recorder raises for a reply past
// the limits.
const replyLimitMark = "the reply exceeds the limits of the harness: "

// recorderShape is the Lua that measures a reply without walking past
// the limits: "" when within them, else the error text.
var recorderShape = fmt.Sprintf(`local function __hwalk(v, d, n) if type(v) ~= 'table' then return n end `+
	`if d > %[1]d then return -1 end for _, x in ipairs(v) do n = n + 1 if n > %[2]d then return -2 end `+
	`n = __hwalk(x, d + 1, n) if n < 0 then return n end end return n end `+
	`local function __hshape(v) local n = __hwalk(v, 1, 0) `+
	`if n == -1 then return '%[3]sit is nested deeper than %[1]d levels' end `+
	`if n == -2 then return '%[3]sit holds more than %[2]d elements' end return '' end `,
	MaxReplyDepth, MaxReplyElements, replyLimitMark)

// instrument returns src with the recorder round it.
func instrument(src string) string {
	head := ""
	if strings.HasPrefix(src, "#!") {
		i := strings.IndexByte(src, '\n')
		if i < 0 {
			return src
		}
		head, src = src[:i+1], src[i+1:]
	}
	body := strings.NewReplacer("redis.call", "__hcall", "redis.pcall", "__hpcall").Replace(noTailCalls(src))
	return head + refusedTable() + recorderShape + recorderPrelude + body + recorderEnd
}

// refusedTable is the Lua table of the refused commands, on one line.
func refusedTable() string {
	var b strings.Builder
	b.WriteString("local __hrefused = {")
	for _, n := range RefusedCommands() {
		fmt.Fprintf(&b, "[%q] = true, ", n)
	}
	b.WriteString("} ")
	return b.String()
}

// refusedMark starts the error the recorder raises for a refused command.
const refusedMark = "the harness refused "

var reReturnCall = regexp.MustCompile(`\breturn\s+redis\.p?call\s*\(`)

// noTailCalls wraps "return redis.call(...)" in parentheses: a tail call
// leaves no frame for the recorder to find the line of.
func noTailCalls(src string) string {
	var b strings.Builder
	last := 0
	for _, m := range reReturnCall.FindAllStringIndex(src, -1) {
		if m[0] < last {
			continue
		}
		end := closeParen(src, m[1])
		if end < 0 {
			continue
		}
		call := m[0] + strings.Index(src[m[0]:], "redis")
		b.WriteString(src[last:call])
		b.WriteString("(")
		b.WriteString(src[call : end+1])
		b.WriteString(")")
		last = end + 1
	}
	b.WriteString(src[last:])
	return b.String()
}

// logEntry is one command a recorded script ran (or tried to).
type logEntry struct {
	line int
	args []string // the command name first
}

// parseRecord decodes a recorded script's answer.
func parseRecord(reply any) (errText string, log []logEntry, ok bool) {
	arr, isArr := reply.([]any)
	if !isArr || len(arr) != 2 {
		return "", nil, false
	}
	errText, _ = arr[0].(string)
	entries, _ := arr[1].([]any)
	for _, e := range entries {
		fields, _ := e.([]any)
		if len(fields) < 2 {
			continue
		}
		x := logEntry{}
		for i, fv := range fields {
			s := fmt.Sprint(fv)
			if i == 0 {
				x.line = scriptLine(s)
				continue
			}
			x.args = append(x.args, s)
		}
		log = append(log, x)
	}
	return errText, log, true
}

// call runs one sample call of op and records its findings. Its error is
// for what is no finding (Redis unreachable).
func (p *preflight) call(ctx context.Context, op Op, v Values) error {
	keys, args, err := p.f.Render(op, v)
	if err != nil {
		return fmt.Errorf("adapter preflight: %s call: %w", op, err)
	}
	p.touch(keys...)
	s := p.f.Script(op)
	reply, err := p.rdb.Eval(ctx, instrument(s.Source), keys, anys(args)...).Result()
	if err != nil && strings.Contains(err.Error(), "Error compiling script") && len(commandFindings(s)) == 0 {
		// The recorder could not wrap it: run it as it is, for Redis's
		// word (only when every command name is written out, so Load has
		// checked them all).
		reply, err = p.rdb.Eval(ctx, s.Source, keys, anys(args)...).Result()
		if err == nil {
			return nil
		}
	}
	if err != nil {
		return p.callError(op, keys, err)
	}
	errText, log, ok := parseRecord(reply)
	if !ok {
		return nil
	}
	p.classify(ctx, op, v, keys, errText, log)
	return nil
}

// callError classifies an error Redis answered the EVAL itself with.
func (p *preflight) callError(op Op, keys []string, err error) error {
	var rerr redis.Error
	if !errors.As(err, &rerr) || errors.Is(err, redis.Nil) {
		return fmt.Errorf("adapter preflight: %s call: %w", op, err)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "CROSSSLOT") {
		slots := KeySlots(keys)
		for i := range keys {
			if slots[i] != slots[0] {
				pth := fmt.Sprintf("%s.keys[%d]", op, i+1)
				p.add(Finding{Kind: KindSlots, Where: fmt.Sprintf("%s:%d", p.f.Path, p.f.line(pth)), Keys: []string{keys[0], keys[i]}, Refuses: true,
					Detail: fmt.Sprintf("the %s call's KEYS[1] %q is in slot %d and KEYS[%d] %q in slot %d; Redis refused the call: %q. A script's keys must share one slot: give every key the same hash tag (${tag})",
						op, keys[0], slots[0], i+1, keys[i], slots[i], msg)})
				return nil
			}
		}
	}
	p.scriptError(op, scriptLine(msg), msg)
	return nil
}

func (p *preflight) scriptError(op Op, line int, msg string) {
	p.add(Finding{Kind: KindScriptError, Where: fmt.Sprintf("%s:%d", p.f.Script(op).Path, line), Refuses: true,
		Detail: fmt.Sprintf("a sample %s call failed; Redis said %q. It will fail the same way under load: fix the script, or the adapter's keys, args or setup", op, msg)})
}

// classify turns a recorded call into findings: every key a command
// touched that the call does not pass in KEYS, and the script's error.
func (p *preflight) classify(ctx context.Context, op Op, v Values, keys []string, errText string, log []logEntry) {
	built := p.f.builtKeys(op, v)
	callSlot := -1
	if len(keys) > 0 {
		callSlot = KeySlot(keys[0])
	}
	nonLocal := strings.Contains(errText, "non local key")
	for i, e := range log {
		if why := refusal(e.args[0]); why != "" {
			p.add(refusedFinding(p.f.Script(op).Path, e.line, "a sample "+string(op)+" call", strings.ToUpper(e.args[0]), why))
			continue
		}
		ks, err := p.rdb.CommandGetKeys(ctx, anys(e.args)...).Result()
		if err != nil {
			continue // a command without keys (TIME), or one Redis does not know
		}
		p.touch(ks...)
		refused := ""
		if nonLocal && i == len(log)-1 {
			refused = errText
		}
		for _, k := range ks {
			if !contains(keys, k) {
				p.add(Finding{Kind: KindUndeclared, Where: fmt.Sprintf("%s:%d", p.f.Script(op).Path, e.line), Keys: []string{k}, Refuses: refused != "",
					Detail: undeclaredDetail(strings.ToUpper(e.args[0]), k, callSlot, refused) + builtNote(op, built[k])})
			}
		}
	}
	if strings.HasPrefix(errText, replyLimitMark) {
		p.add(Finding{Kind: KindScriptError, Where: p.f.Script(op).Path, Refuses: true,
			Detail: fmt.Sprintf("a sample %s call's reply was refused: %s (the harness takes replies of at most %d levels and %d elements: a reply is decoded whole before it is judged). The contract's replies are flat arrays: return the code, and the reservation id where the file maps one", op, strings.TrimPrefix(errText, replyLimitMark), MaxReplyDepth, MaxReplyElements)})
		return
	}
	if errText != "" && !nonLocal && !strings.Contains(errText, refusedMark) {
		line := scriptLine(errText)
		if line == 0 && len(log) > 0 {
			line = log[len(log)-1].line
		}
		p.scriptError(op, line, errText)
	}
}

// undeclaredDetail says what is wrong with key, touched by cmd and not
// passed in KEYS, and what to do.
func undeclaredDetail(cmd, key string, callSlot int, refused string) string {
	slot := KeySlot(key)
	what := fmt.Sprintf("%s touches %q (slot %d), which the call does not pass in KEYS", cmd, key, slot)
	fix := "pass every key the script touches in KEYS (reserve.keys in the adapter file), each with the call's hash tag (${tag}) so they share one slot"
	switch {
	case refused != "":
		return fmt.Sprintf("%s; Redis refused it: %q (Redis Cluster runs a script on the node of its KEYS and lets it reach only that node's keys). Fix: %s", what, refused, fix)
	case callSlot < 0:
		return fmt.Sprintf("%s, and the call passes no KEYS: Redis Cluster sends such a script to any node. Fix: %s", what, fix)
	case slot != callSlot:
		return fmt.Sprintf("%s; the call's KEYS are in slot %d. Redis ran it only because both slots are on one node of this cluster: after a resharding or a failover, or on another cluster, the same call fails with \"Script attempted to access a non local key in a cluster node\". Fix: %s", what, callSlot, fix)
	}
	return fmt.Sprintf("%s; it shares the call's slot %d, so Redis runs it (the load runs, unless preflight: strict), but Redis Cluster requires every key a script touches in KEYS: while the slot migrates, Redis picks ASK or not from the declared KEYS alone, and a declared key that does not exist on the source (a KEYS entry that is only the hash tag never does) sends the call to the importing node, where this key may not be yet. Fix: %s", what, callSlot, fix)
}

// builtKeys renders op's built_keys for the call's values (those that
// render), as a set.
func (f *File) builtKeys(op Op, v Values) map[string]bool {
	c := f.tmpl.calls[op]
	tag, err := f.Tag(v)
	if c == nil || err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, t := range c.built {
		if k, err := t.render(&v, tag); err == nil {
			out[k] = true
		}
	}
	return out
}

// builtNote says whether an undeclared key is one the file lists in the
// call's built_keys.
func builtNote(op Op, listed bool) string {
	if listed {
		return fmt.Sprintf(" (The file lists it in %s.built_keys: the teardown removes it and K1 reads its expiry.)", op)
	}
	return fmt.Sprintf(" (While the script builds it, list it in %s.built_keys, so the teardown removes it and K1 reads its expiry.)", op)
}

// refusedFinding is the refused command name that what (a sample call,
// the setup script) reached at script path:line: the recorder stopped
// it, and the load is refused.
func refusedFinding(path string, line int, what, name, why string) Finding {
	return Finding{Kind: KindRefusedCommand, Where: fmt.Sprintf("%s:%d", path, line), Refuses: true,
		Detail: fmt.Sprintf("%s ran %s, a command the harness refuses: %s. The pre-flight stopped it before Redis ran it; under load nothing would. Remove the call, and write every command's name out as a string literal so the harness checks it before any call: %s", what, name, why, refusedFix)}
}
