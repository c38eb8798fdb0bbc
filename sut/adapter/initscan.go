package adapter

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// scan is what `adapter init` reads from a script's text: how many KEYS
// and ARGV it uses, the local names it gives them and the commands each
// takes part in.
type scan struct {
	nKeys, nArgs int
	keyName      map[int]string   // KEYS[n] -> local name ("" when none)
	argName      map[int]string   // ARGV[n] -> local name
	keyCmds      map[int][]string // KEYS[n] -> commands that take it as their key
	keyFields    map[int][]string // KEYS[n] -> literal hash fields (HGET/HINCRBY)
	argUse       map[int][]string // ARGV[n] -> "CMD" or "CMD OPTION" it follows
	concat       map[int]bool     // ARGV[n] is concatenated into a string
}

var (
	reKeysIdx = regexp.MustCompile(`KEYS\[\s*(\d+)\s*\]`)
	reArgvIdx = regexp.MustCompile(`ARGV\[\s*(\d+)\s*\]`)
	reConcat  = regexp.MustCompile(`\.\.\s*ARGV\[\s*(\d+)\s*\]`)
	reRef     = regexp.MustCompile(`^(?:tonumber\()?\s*(KEYS|ARGV)\[\s*(\d+)\s*\]\s*\)?$`)
)

func maxIndex(re *regexp.Regexp, src string) int {
	n := 0
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		if i, err := strconv.Atoi(m[1]); err == nil && i > n {
			n = i
		}
	}
	return n
}

// scanSource reads src (comments removed line by line).
func scanSource(src string) *scan {
	s := &scan{keyName: map[int]string{}, argName: map[int]string{}, keyCmds: map[int][]string{},
		keyFields: map[int][]string{}, argUse: map[int][]string{}, concat: map[int]bool{}}
	for _, m := range reConcat.FindAllStringSubmatch(src, -1) {
		n, _ := strconv.Atoi(m[1])
		s.concat[n] = true
	}
	s.nKeys, s.nArgs = maxIndex(reKeysIdx, src), maxIndex(reArgvIdx, src)
	alias := map[string][2]string{} // local -> {KEYS|ARGV, n}
	for _, line := range strings.Split(src, "\n") {
		if c := strings.Index(line, "--"); c >= 0 {
			line = line[:c]
		}
		if m := reLocal.FindStringSubmatch(line); m != nil {
			names, exprs := strings.Split(m[1], ","), splitTop(m[2])
			for j, n := range names {
				if j < len(exprs) {
					if r := reRef.FindStringSubmatch(strings.TrimSpace(exprs[j])); r != nil {
						alias[strings.TrimSpace(n)] = [2]string{r[1], r[2]}
						s.name(r[1], r[2], strings.TrimSpace(n))
					}
				}
			}
		}
		for _, loc := range reCall.FindAllStringSubmatchIndex(line, -1) {
			s.call(strings.ToUpper(line[loc[2]:loc[3]]), splitTop(line[loc[1]:]), alias)
		}
	}
	return s
}

func (s *scan) name(kind, n, local string) {
	i, _ := strconv.Atoi(n)
	if kind == "KEYS" {
		s.keyName[i] = local
	} else {
		s.argName[i] = local
	}
}

// ref resolves an argument to KEYS[n] or ARGV[n] (directly or by a local).
func ref(expr string, alias map[string][2]string) (string, int) {
	e := strings.TrimSpace(expr)
	if r := reRef.FindStringSubmatch(e); r != nil {
		n, _ := strconv.Atoi(r[2])
		return r[1], n
	}
	if a, ok := alias[e]; ok {
		n, _ := strconv.Atoi(a[1])
		return a[0], n
	}
	return "", 0
}

// call notes one redis.call(cmd, args...).
func (s *scan) call(cmd string, args []string, alias map[string][2]string) {
	if len(args) == 0 {
		return
	}
	kind, k := ref(args[0], alias)
	if kind == "KEYS" {
		s.keyCmds[k] = append(s.keyCmds[k], cmd)
		if (cmd == "HGET" || cmd == "HINCRBY") && len(args) > 1 {
			if f, err := strconv.Unquote(strings.ReplaceAll(strings.TrimSpace(args[1]), "'", `"`)); err == nil {
				s.keyFields[k] = append(s.keyFields[k], f)
			}
		}
	}
	for i := 1; i < len(args); i++ {
		if strings.EqualFold(strings.Trim(strings.TrimSpace(args[i]), `"'`), "NX") && kind == "KEYS" {
			s.keyCmds[k] = append(s.keyCmds[k], cmd+"NX")
		}
		if kind, n := ref(args[i], alias); kind == "ARGV" {
			use := cmd
			if i > 1 {
				use += " " + strings.ToUpper(strings.Trim(strings.TrimSpace(args[i-1]), `"'`))
			}
			s.argUse[n] = append(s.argUse[n], use)
		}
	}
}

// roleWords are the local-name fragments of each harness value, in the
// order they are tried ("keep_until" is a retention before it is a TTL).
var roleWords = []struct{ words, tmpl string }{
	{"until deadline retention expireat expire_at keep", "${retention_until_ms}"},
	{"ttl expire timeout", "${ttl_ms}"},
	{"user uid buyer member customer", "${user}"},
	{"resv reservation order hold ticket", "${reservation}"},
	{"req request idem dedup token nonce", "${request}"},
	{"now time timestamp", "${now_ms}"},
	{"activity sale event campaign promo", "${activity}"},
	{"sku item product goods", "${sku}"},
	{"amount qty quantity num", "${amount}"},
	{"version ver", "${version}"},
}

func roleOfName(name string) string {
	n := strings.ToLower(name)
	for _, r := range roleWords {
		for _, w := range strings.Fields(r.words) {
			if strings.Contains(n, w) {
				return r.tmpl
			}
		}
	}
	return ""
}

// argRole guesses ARGV[n]'s value and says why.
func (s *scan) argRole(n int) (tmpl, why string) {
	if t := roleOfName(s.argName[n]); t != "" {
		return t, fmt.Sprintf("local %s", s.argName[n])
	}
	for _, u := range s.argUse[n] {
		switch {
		case u == "SADD" || u == "SISMEMBER" || u == "SREM" || u == "SMISMEMBER" || strings.HasPrefix(u, "SADD ") || strings.HasPrefix(u, "SISMEMBER "):
			return "${user}", "a set member (" + u + ")"
		case strings.HasSuffix(u, " PXAT") || u == "PEXPIREAT" || strings.HasPrefix(u, "PEXPIREAT "):
			return "${retention_until_ms}", "an absolute expiry (" + u + ")"
		case strings.HasSuffix(u, " EXAT") || strings.HasPrefix(u, "EXPIREAT"):
			return "${retention_until_s}", "an absolute expiry (" + u + ")"
		case strings.HasSuffix(u, " PX") || strings.HasPrefix(u, "PEXPIRE"):
			return "${ttl_ms}", "a TTL (" + u + ")"
		case strings.HasSuffix(u, " EX") || strings.HasPrefix(u, "EXPIRE"):
			return "${ttl_s}", "a TTL (" + u + ")"
		case strings.HasPrefix(u, "DECRBY") || strings.HasPrefix(u, "INCRBY"):
			return "${amount}", "a count (" + u + ")"
		}
	}
	if s.concat[n] {
		return "${activity}", "UNKNOWN: part of a key name the script builds; set the value it expects"
	}
	return "${request}", "UNKNOWN: the script's use says nothing; set the value it expects"
}

func hasAny(list []string, names ...string) bool {
	for _, x := range list {
		for _, n := range names {
			if x == n {
				return true
			}
		}
	}
	return false
}

// keyRole guesses KEYS[n]: its template suffix (after ${tag}:), whether
// it is the stock, and why.
func (s *scan) keyRole(n int, stockTaken bool) (suffix string, stock bool, why string) {
	name, cmds := strings.ToLower(s.keyName[n]), s.keyCmds[n]
	nameHas := func(words string) bool {
		for _, w := range strings.Fields(words) {
			if name != "" && strings.Contains(name, w) {
				return true
			}
		}
		return false
	}
	switch {
	case !stockTaken && (nameHas("stock inventory remain quota avail count") || hasAny(cmds, "DECR", "DECRBY", "HINCRBY", "HGET", "INCRBY")):
		return "stock", true, "the stock: " + describeUse(name, cmds)
	case nameHas("buyer user member") || hasAny(cmds, "SADD", "SISMEMBER", "SREM", "SMISMEMBER"):
		return "buyers", false, "one per bucket: " + describeUse(name, cmds)
	case nameHas("req idem dedup token seen nonce"):
		return "request:${request}", false, "one per request: " + describeUse(name, cmds)
	case nameHas("order hold resv reservation record"):
		return "hold:${reservation}", false, "one per reservation: " + describeUse(name, cmds)
	case hasAny(cmds, "GET", "EXISTS") && hasAny(cmds, "SET", "SETNX"):
		return "request:${request}", false, "read before written, like an idempotency key: " + describeUse(name, cmds)
	case hasAny(cmds, "SETNX"):
		return "request:${request}", false, "set if absent, like an idempotency key: " + describeUse(name, cmds)
	case hasAny(cmds, "SET"):
		return "hold:${reservation}", false, "written once, like a record: " + describeUse(name, cmds)
	}
	return fmt.Sprintf("key%d", n), false, "UNKNOWN: " + describeUse(name, cmds)
}

func describeUse(name string, cmds []string) string {
	var parts []string
	if name != "" {
		parts = append(parts, "local "+name)
	}
	if len(cmds) > 0 {
		seen := map[string]bool{}
		var u []string
		for _, c := range cmds {
			if !seen[c] {
				seen[c] = true
				u = append(u, c)
			}
		}
		parts = append(parts, strings.Join(u, " "))
	} else {
		parts = append(parts, "no command the harness recognises")
	}
	return strings.Join(parts, ", ")
}
