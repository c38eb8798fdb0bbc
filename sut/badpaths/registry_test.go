package badpaths

import (
	"strings"
	"testing"

	"seckill-harness/checks"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

func TestRegistry(t *testing.T) {
	clustertest.Need(t)
	if err := Validate(); err != nil {
		t.Fatalf("a Lua variant does not derive from the embedded scripts: %v", err)
	}
	names := Names()
	if len(names) != 18 {
		t.Fatalf("names %v", names)
	}
	valid := map[string]bool{}
	for _, id := range checks.InvariantIDs() {
		valid[id] = true
	}
	for _, n := range names {
		info, ok := Get(n)
		if !ok || info.Description == "" || info.Why == "" || len(info.Expect) == 0 {
			t.Errorf("%s: incomplete entry %+v", n, info)
		}
		for _, id := range info.Expect {
			if !valid[id] {
				t.Errorf("%s expects unknown invariant %q", n, id)
			}
		}
		newPath, ok := Lookup(n)
		if info.Pending != "" {
			if ok || info.Runnable() {
				t.Errorf("%s is pending but Lookup returns it", n)
			}
			continue
		}
		if info.PipelineDefect != "" {
			// A pipeline defect: no reserve path of its own, a load with the pipeline.
			l, lok := GetLoad(info.Load, false)
			if ok || !info.Runnable() || !lok || l.Pipeline == nil {
				t.Errorf("%s: pipeline defect %q: Lookup %v, runnable %v, load %q with pipeline %v", n, info.PipelineDefect, ok, info.Runnable(), info.Load, lok && l.Pipeline != nil)
			}
			if d, err := info.Defects(); err != nil || len(d.Names()) != 1 || d.Names()[0] != info.PipelineDefect {
				t.Errorf("%s: defects %v %v", n, d.Names(), err)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: Lookup failed", n)
			continue
		}
		if _, ok := GetLoad(info.Load, false); !ok {
			t.Errorf("%s: unknown load %q", n, info.Load)
		}
		if p := newPath(lua.NewStore(testRDB, nil, testSecret)); p.Name() != n {
			t.Errorf("%s builds a path named %q", n, p.Name())
		}
	}
	if info, _ := Get(ReleaseOnSendTimeout); !info.Runnable() || info.PipelineDefect != ReleaseOnSendTimeout {
		t.Errorf("release-on-send-timeout must run as the pipeline defect of that name: %+v", info)
	}
	if _, ok := Lookup(ReleaseOnSendTimeout); ok {
		t.Error("release-on-send-timeout is not a reserve path: Lookup must not find it")
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("unknown name found")
	}
}

// The Lua variants differ from the embedded scripts exactly where intended.
func TestVariantsAreTheIntendedEdits(t *testing.T) {
	emb := lua.Embedded()
	for _, c := range []struct {
		v         *variant
		file      string
		mustLose  string // text of the reference that must be gone
		unchanged func(s *lua.Scripts) bool
	}{
		{reserveVariant("x", noRequestIdempotencyEdits), lua.ReserveFile, `redis.call("HGET", KEYS[3], request_id)`,
			func(s *lua.Scripts) bool {
				return s.Compensate.SHA1 == emb.Compensate.SHA1 && s.Transition.SHA1 == emb.Transition.SHA1
			}},
		{reserveVariant("x", noUserMarkerEdits), lua.ReserveFile, `redis.call("GET", KEYS[4])`,
			func(s *lua.Scripts) bool {
				return s.Compensate.SHA1 == emb.Compensate.SHA1 && s.Transition.SHA1 == emb.Transition.SHA1
			}},
		{reserveVariant("x", noTTLEdits), lua.ReserveFile, `redis.call("PEXPIREAT", KEYS[5], retention_until_ms)`,
			func(s *lua.Scripts) bool {
				return s.Compensate.SHA1 == emb.Compensate.SHA1 && s.Transition.SHA1 == emb.Transition.SHA1
			}},
		{compensateVariant("x", compensateNoStatusEdits), lua.CompensateFile, `if status == "RELEASED" then`,
			func(s *lua.Scripts) bool {
				return s.Reserve.SHA1 == emb.Reserve.SHA1 && s.Transition.SHA1 == emb.Transition.SHA1
			}},
	} {
		s, err := c.v.get()
		if err != nil {
			t.Fatal(err)
		}
		src := s.Reserve.Source
		if c.file == lua.CompensateFile {
			src = s.Compensate.Source
		}
		if strings.Contains(src, c.mustLose) || !strings.Contains(src, "badpath") {
			t.Errorf("%s: the edit did not apply", c.file)
		}
		if !c.unchanged(s) {
			t.Errorf("%s: another script changed", c.file)
		}
	}
	// An edit that no longer applies fails loudly, naming the file.
	_, err := applyEdits(lua.ReserveFile, "local x = 1", []edit{{"local y", "local z"}})
	if err == nil || !strings.Contains(err.Error(), "reserve.lua") {
		t.Fatalf("a missing edit passed: %v", err)
	}
}
