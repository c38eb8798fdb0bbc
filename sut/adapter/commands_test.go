package adapter

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"seckill-harness/internal/clustertest"
)

// loadWith writes an adapter file a.yaml and its script s.lua to a fresh
// directory and loads it.
func loadWith(t *testing.T, yaml string, script []byte) (*File, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.lua"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

const sScript = "reserve:\n  script: s.lua\n  keys: [\"c:{${activity}}\"]" + miniReply

// Every refused command, written out in a script (the forms
// among them: CONFIG SET dir, DEBUG SLEEP, SCRIPT FLUSH, CLUSTER RESET
// HARD, MIGRATE to another host), refuses the file at Load, naming the
// script's line and the command; the same text in a comment or a string
// does not.
func TestLoadRefusesRefusedCommandsInScripts(t *testing.T) {
	calls := map[string]string{
		"CONFIG": "redis.call('CONFIG', 'SET', 'dir', '/tmp')", "DEBUG": `redis.call("debug", "sleep", 1)`,
		"SCRIPT": "redis.pcall('Script', 'FLUSH')", "CLUSTER": "redis.call('CLUSTER', 'RESET', 'HARD')",
		"MIGRATE": "redis.call('MIGRATE', '10.0.0.9', 6379, KEYS[1], 0, 1000)", "KEYS": "redis.call( 'keys' , '*')",
		"FLUSHALL": "redis . call ( [[FLUSHALL]] )",
	}
	for _, n := range RefusedCommands() {
		if calls[n] == "" {
			calls[n] = fmt.Sprintf("redis.call('%s')", strings.ToLower(n))
		}
	}
	calls["FLUSHDB"] = `redis.call"FLUSHDB"`
	for n, call := range calls {
		src := "local k = KEYS[1]\n-- a comment\nlocal r = " + call + "\nreturn 1\n"
		_, err := loadWith(t, sScript, []byte(src))
		if err == nil || !strings.Contains(err.Error(), "s.lua:3 calls "+n+", a command the harness refuses") || !strings.Contains(err.Error(), "a.yaml:2: reserve.script:") {
			t.Errorf("%s (%s): error %v, want one naming s.lua:3 and %s", n, call, err, n)
		}
	}
	for _, src := range []string{
		"-- redis.call('FLUSHALL')\nreturn 1\n",
		"--[[ redis.call('KEYS', '*')\n]] return 1\n",
		"local s = \"redis.call('FLUSHALL')\" return 1\n",
		"local s = [==[ redis.call('CONFIG', 'SET') ]==] return redis.call('GET', KEYS[1])\n",
		"return redis.call('GET', KEYS[1]) -- not KEYS *\n",
	} {
		if _, err := loadWith(t, sScript, []byte(src)); err != nil {
			t.Errorf("%q: %v, want it loaded (the command is in a comment or a string)", src, err)
		}
	}
}

// A refused command in the setup's commands or a state read refuses the
// file at Load, at the file's line; so does a command name that is a
// template (it could not be checked).
func TestLoadRefusesRefusedCommandLists(t *testing.T) {
	for _, c := range []struct{ tail, want string }{
		{"setup:\n  commands:\n    - [SET, \"c:{${activity}}\", \"${stock}\"]\n    - [flushall]\n", "a.yaml:12: setup.commands[2]: FLUSHALL is a command the harness refuses"},
		{"setup:\n  commands:\n    - [CONFIG, SET, dir, /tmp]\n", "a.yaml:11: setup.commands[1]: CONFIG is a command the harness refuses"},
		{"state:\n  available: [KEYS, \"*\"]\n", "a.yaml:10: state.available: KEYS is a command the harness refuses"},
		{"setup:\n  commands:\n    - [\"${activity}\", x]\n", "a.yaml:11: setup.commands[1][1]: the command name is a template"},
	} {
		_, err := loadWith(t, sScript+c.tail, []byte("return 1\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.tail, err, c.want)
		}
	}
}

// Binary script text (4 KB of random bytes, a NUL in Lua, Latin-1) is
// refused at Load naming the file, without one byte of it.
func TestLoadRefusesBinaryScripts(t *testing.T) {
	random := make([]byte, 4096)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string][]byte{
		"random": random, "nul": []byte("return 1\x00\n"), "latin-1": []byte("-- caf\xe9\nreturn 1\n"),
	} {
		_, err := loadWith(t, sScript, src)
		if err == nil {
			t.Errorf("%s: loaded, want refused", name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "s.lua is not Lua source text") || !strings.Contains(msg, "a.yaml:2: reserve.script:") {
			t.Errorf("%s: error %q, want it to name s.lua and say it is not Lua text", name, msg)
		}
		if !utf8.ValidString(msg) || strings.ContainsRune(msg, 0) || len(msg) > 400 {
			t.Errorf("%s: error quotes the file (%d bytes): %q", name, len(msg), msg)
		}
	}
}

// A call whose command name is not written out cannot be checked: a
// static finding at its line (the file still loads).
func TestStaticFindingForCommandNamesNotWrittenOut(t *testing.T) {
	for src, line := range map[string]string{
		"local x = 1\nreturn redis.call(ARGV[1], KEYS[1])\n":                "s.lua:2",
		"local c = 'FLUSH' .. 'ALL'\n\nredis.call(c)\nreturn 1\n":           "s.lua:3",
		"local r = redis\nreturn r.call('FLUSHALL')\n":                      "s.lua:1",
		"local ok = pcall(redis.call, 'FLUSHALL')\nreturn 1\n":              "s.lua:1",
		"return redis.call(\"FLUSH\\65LL\")\n":                              "s.lua:1",
		"local t = {}\n\n\nt[1] = redis.pcall(string.upper('keys'), '*')\n": "s.lua:4",
	} {
		f, err := loadWith(t, sScript, []byte(src))
		if err != nil {
			t.Errorf("%q: %v, want it loaded with a finding", src, err)
			continue
		}
		var found bool
		for _, x := range f.StaticFindings() {
			found = found || (x.Kind == KindDynamicCommand && strings.HasSuffix(x.Where, line) && x.Problem() == "command not checked")
		}
		if !found {
			t.Errorf("%q: findings %v, want %s at %s", src, f.StaticFindings(), KindDynamicCommand, line)
		}
	}
	f, err := loadWith(t, sScript, []byte("local n = redis.call('GET', KEYS[1])\nredis.log(redis.LOG_NOTICE, 'x')\nlocal cfg = {redis = 1}\nlocal m = cfg.redis + 1\nreturn redis.sha1hex('x')\n"))
	if err != nil || len(f.StaticFindings()) != 0 {
		t.Errorf("written-out names: %v %v, want no finding", err, f.StaticFindings())
	}
}

// sentinels puts a key on every master and reports those gone afterwards.
func sentinels(t *testing.T, name string) func() []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for i := 0; len(keys) < 3*8 && i < 64; i++ {
		k := fmt.Sprintf("%s-sentinel-%d", name, i)
		if err := testRDB.Set(ctx, k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return func() []string {
		var lost []string
		for _, k := range keys {
			if n, _ := testRDB.Exists(ctx, k).Result(); n == 0 {
				lost = append(lost, k)
			}
			testRDB.Del(ctx, k)
		}
		return lost
	}
}

// A refused command the text does not name (ARGV[1] = FLUSHALL) is
// stopped by the pre-flight's recorder before Redis runs it: a finding
// at its line that refuses the load, whatever the strictness, and every
// other key of the cluster still there.
func TestPreflightStopsARefusedCommandNamedAtRunTime(t *testing.T) {
	clustertest.Need(t)
	check := sentinels(t, "pfrefused")
	f := writeAdapter(t, `
reserve:
  script: s.lua
  keys: ["c:{${activity}}"]
  args: [FLUSHALL]`+miniReply, "local n = redis.call('INCR', KEYS[1])\nredis.call(ARGV[1])\nreturn 1\n")
	got := systemPreflight(t, f.Path)
	var found bool
	for _, x := range got {
		found = found || (x.Kind == KindRefusedCommand && x.Refuses && strings.HasSuffix(x.Where, "s.lua:2") && strings.Contains(x.Detail, "a sample reserve call ran FLUSHALL"))
		if x.Kind == KindScriptError {
			t.Errorf("the refusal reported as a script error too: %s", x)
		}
	}
	if !found {
		t.Errorf("findings %v, want %s at s.lua:2 naming FLUSHALL that refuses the load", got, KindRefusedCommand)
	}
	if lost := check(); len(lost) > 0 {
		t.Errorf("the sample call ran FLUSHALL: %d keys gone (%v)", len(lost), lost[0])
	}
}

// A setup script that reaches a refused command by a name it does not
// write out: the recorder stops it, the finding refuses the load and no
// sample call runs.
func TestPreflightStopsARefusedCommandInTheSetupScript(t *testing.T) {
	clustertest.Need(t)
	check := sentinels(t, "pfsetup")
	f := writeAdapter(t, `
reserve:
  script: s.lua
  keys: ["c:{${activity}}"]`+miniReply+`setup:
  script: s.lua
  keys: ["c:{${activity}}"]
  args: [FLUSHALL]
`, "if ARGV[1] then redis.call(ARGV[1]) end\nreturn 1\n")
	got := runPreflight(t, f, throwaway("pfsetup"))
	if len(got) != 1 || got[0].Kind != KindRefusedCommand || !got[0].Refuses || !strings.HasSuffix(got[0].Where, "s.lua:1") {
		t.Errorf("findings %v, want one %s at s.lua:1 that refuses the load", got, KindRefusedCommand)
	}
	if lost := check(); len(lost) > 0 {
		t.Errorf("the setup ran FLUSHALL: %d keys gone", len(lost))
	}
}

// docs/ADAPTERS.md lists every refused command.
func TestDocsListEveryRefusedCommand(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ADAPTERS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range RefusedCommands() {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("docs/ADAPTERS.md does not list `%s` among the commands the harness refuses", n)
		}
	}
}
