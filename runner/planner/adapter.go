package planner

import (
	"fmt"
	"path/filepath"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/scenarios"
	"seckill-harness/sut"
	"seckill-harness/sut/adapter"
)

// adapter puts the scenario's adapter file (adapter:, or --adapter) on p
// as its system under test (adapter.System), with report.json's
// system_under_test. It refuses what the file cannot run with: another
// system (Inputs.System), --lua-dir (the reference's scripts), a shared
// activity of split generators (the system sets its activity up itself).
// A file without release: gets no release operation, and no file gets
// status queries: each phase's share of those is sent as fresh reserves,
// and the report says so (lifecycle.LeaveShareOut).
func (in Inputs) adapter(s *scenarios.Scenario, p *lifecycle.Plan) error {
	if s.Adapter == "" {
		if in.StrictPreflight {
			return fmt.Errorf("--strict-preflight without an adapter file: it says how the adapter file's pre-flight refuses the load; add --adapter FILE or drop --strict-preflight")
		}
		return nil
	}
	switch {
	case in.System != nil:
		return fmt.Errorf("--adapter %s and the system %q: one plan runs one system under test", s.Adapter, in.SystemName)
	case in.LuaDir != "":
		return fmt.Errorf("--adapter %s with --lua-dir %s: --lua-dir replaces the reference's scripts, an adapter file names its own: drop one", s.Adapter, in.LuaDir)
	case p.Activity.Shared || in.Generator.Split():
		return fmt.Errorf("--adapter %s with --activity/--generator: a split load joins an activity set up by the reference contract; run the adapter without them", s.Adapter)
	}
	f, err := adapter.Load(s.Adapter) // Validate loaded it already: this reads the same file
	if err != nil {
		return err
	}
	if in.StrictPreflight {
		f.SetStrict()
	}
	sys := &reports.SystemUnderTest{Name: f.Name, Kind: "adapter", Adapter: s.Adapter}
	if f.Strict() {
		sys.Notes = append(sys.Notes, "strict pre-flight: every finding refuses the load")
	}
	for _, role := range []string{"reserve", "release", "setup"} {
		if sc := f.Scripts()[role+".script"]; sc != nil {
			path := sc.Path
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
			sys.Scripts = append(sys.Scripts, reports.SUTScript{Role: role, Path: path, SHA1: sc.SHA1})
		}
	}
	if !f.Has(adapter.OpRelease) {
		lifecycle.LeaveShareOut(p, sys, history.KindRelease, "the adapter file has no release: script")
	}
	// The file maps no status query: what became of a request is asked of
	// the system, never read from keys it may not keep.
	lifecycle.LeaveShareOut(p, sys, history.KindQuery, "an adapter file maps no status query")
	p.Path = func(st *lua.Store) sut.System { return adapter.NewSystem(f, st) }
	p.PathName, p.SystemUnderTest = "adapter:"+f.Name, sys
	return nil
}
