package adapter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

func throwaway(name string) *lua.Activity {
	return lua.NewActivity(fmt.Sprintf("%s%d", name, activitySeq.Add(1)), "sku1", 1, 1, time.Hour)
}

func runPreflight(t *testing.T, f *File, a *lua.Activity) []Finding {
	t.Helper()
	got, err := Preflight(context.Background(), testRDB, f, a)
	if err != nil {
		t.Fatalf("preflight: %v", err)
	}
	for _, x := range got {
		t.Logf("finding: %s (keys %q)", x, x.Keys)
	}
	return got
}

// gone fails when any of keys still exists: the pre-flight leaves nothing.
func gone(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if n, err := testRDB.Exists(context.Background(), k).Result(); err != nil || n != 0 {
			t.Errorf("key %q left behind by the pre-flight (exists %d, %v)", k, n, err)
		}
	}
}

// keys-from-argv.lua builds its buyers set and order record from ARGV:
// the pre-flight names the keys, the script line and what to do, and
// leaves no key of the throwaway activity behind.
func TestPreflightNamesKeysBuiltFromARGV(t *testing.T) {
	clustertest.Need(t)
	f := mustLoad(t, "../../docs/adapters/keys-from-argv.yaml")
	a := throwaway("pfargv")
	got := runPreflight(t, f, a)
	if len(got) == 0 {
		t.Fatal("no finding for a script that builds its keys from ARGV")
	}
	buyers := "buyers:" + a.ID
	var named bool
	for _, x := range got {
		if x.Kind != KindUndeclared || x.Problem() != "not cluster-safe" {
			t.Errorf("finding of kind %s (%s), want %s", x.Kind, x.Problem(), KindUndeclared)
		}
		for _, k := range x.Keys {
			if strings.HasPrefix(k, "counter:") {
				t.Errorf("declared key %q reported as undeclared", k)
			}
			if k == buyers && strings.HasSuffix(x.Where, "keys-from-argv.lua:11") {
				named = true
			}
		}
		if !strings.Contains(x.Detail, "pass every key the script touches in KEYS") {
			t.Errorf("finding says no fix: %s", x.Detail)
		}
	}
	if !named {
		t.Errorf("no finding names %q at keys-from-argv.lua:11", buyers)
	}
	gone(t, "counter:{"+a.ID+":0}", buyers)
}

// The correct shapes have no finding, and their keys are removed.
func TestPreflightPassesSafeScripts(t *testing.T) {
	clustertest.Need(t)
	for _, name := range []string{"cluster-safe", "reference", "different-idempotency", "no-per-user-check"} {
		t.Run(name, func(t *testing.T) {
			f := mustLoad(t, "../../docs/adapters/"+name+".yaml")
			a := throwaway("pfsafe")
			if got := runPreflight(t, f, a); len(got) != 0 {
				t.Fatalf("%d findings on %s, want none", len(got), name)
			}
			cmds, _, _, _, _ := f.SetupCommands(ActivityValues(a, 0))
			for _, c := range cmds {
				gone(t, c[1])
			}
		})
	}
}

// writeAdapter writes an adapter file and its script into a temp dir.
func writeAdapter(t *testing.T, yaml, script string) *File {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return mustLoad(t, p)
}

const miniReply = `
  reply:
    outcomes:
      ACCEPTED: [1]
      SOLD_OUT: [0]
    otherwise: ERROR
`

// A key in another slot of the same node: Redis 7.0 runs the script
// without a word; the recorder still names the key.
func TestPreflightCatchesWhatRedisLetsThrough(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	a := throwaway("pfnode")
	declared := "c:{" + a.ID + "}"
	node, err := testRDB.MasterForKey(ctx, declared)
	if err != nil {
		t.Fatal(err)
	}
	var side string
	for i := 0; side == ""; i++ {
		k := fmt.Sprintf("side%d", i)
		if KeySlot(k) == KeySlot(declared) {
			continue
		}
		if n, err := testRDB.MasterForKey(ctx, k); err == nil && n.Options().Addr == node.Options().Addr {
			side = k
		}
	}
	f := writeAdapter(t, `
reserve:
  script: s.lua
  keys: ["c:{${activity}}"]`+miniReply, fmt.Sprintf("redis.call('GET', KEYS[1])\n-- the side key:\nreturn redis.call('EXISTS', %q)\n", side))
	if err := testRDB.Eval(ctx, f.Script(OpReserve).Source, []string{declared}).Err(); err != nil {
		t.Fatalf("Redis refused the same-node key (%v): this test needs a Redis that lets it through", err)
	}
	got := runPreflight(t, f, a)
	if len(got) != 1 || got[0].Kind != KindUndeclared || fmt.Sprint(got[0].Keys) != "["+side+"]" ||
		!strings.HasSuffix(got[0].Where, "s.lua:3") || !strings.Contains(got[0].Detail, "only because both slots are on one node") {
		t.Fatalf("findings %+v, want one naming %q at s.lua:3", got, side)
	}
}

// KEYS in different slots: Redis's CROSSSLOT, at the adapter file's line.
func TestPreflightCrossSlotKeys(t *testing.T) {
	clustertest.Need(t)
	f := writeAdapter(t, `
reserve:
  script: s.lua
  keys:
    - "stock:{${activity}}"
    - "buyer:{${user}}"`+miniReply, "return 1\n")
	got := runPreflight(t, f, throwaway("pfslot"))
	if len(got) != 1 || got[0].Kind != KindSlots || !strings.Contains(got[0].Detail, "CROSSSLOT Keys in request don't hash to the same slot") ||
		!strings.HasSuffix(got[0].Where, "a.yaml:6") {
		t.Fatalf("findings %+v, want one CROSSSLOT at a.yaml:6", got)
	}
}

// A script that errors: its own error, at its line, not a cluster finding.
func TestPreflightScriptError(t *testing.T) {
	clustertest.Need(t)
	f := writeAdapter(t, `
reserve:
  script: s.lua
  keys: ["c:{${activity}}"]`+miniReply, "local n = tonumber(redis.call('GET', KEYS[1]))\nreturn n + 1\n")
	got := runPreflight(t, f, throwaway("pferr"))
	if len(got) != 1 || got[0].Kind != KindScriptError || got[0].Problem() != "script fails" ||
		!strings.HasSuffix(got[0].Where, "s.lua:2") || !strings.Contains(got[0].Detail, "arithmetic on local 'n'") {
		t.Fatalf("findings %+v, want one script error at s.lua:2", got)
	}
}

// A reply nested far deeper than any contract's (a table a million deep)
// is refused by the pre-flight at the stated limit, before any load
// decodes one: the recorder measures it inside Redis and stops at the
// limit. Before, it passed the pre-flight and the load's first reply took
// 90 s and 446 MB to decode.
func TestPreflightRefusesAReplyPastTheLimits(t *testing.T) {
	clustertest.Need(t)
	for _, tc := range []struct {
		name, src, want string
	}{
		{"deep", "local r = {} local t = r for i = 1, 1000000 do local n = {} t[1] = n t = n end\nreturn r\n", "nested deeper than 16 levels"},
		{"wide", "local r = {} for i = 1, 20000 do r[i] = i end\nreturn r\n", "more than 10000 elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeAdapter(t, `
reserve:
  script: s.lua
  keys: ["c:{${activity}}"]`+miniReply, tc.src)
			got := runPreflight(t, f, throwaway("pfshape"+tc.name))
			if len(got) == 0 || got[0].Kind != KindScriptError || !got[0].Refuses || !strings.Contains(got[0].Detail, tc.want) {
				t.Fatalf("findings %+v, want a refusing script error saying %q", got, tc.want)
			}
			if strings.Contains(got[0].Detail, "Redis said") {
				t.Errorf("the harness's own limit is put in Redis's mouth: %s", got[0].Detail)
			}
		})
	}
}
