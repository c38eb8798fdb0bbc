package planner

import (
	"fmt"
	"net/url"
	"path/filepath"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/scenarios"
	"seckill-harness/sut"
	"seckill-harness/sut/httpsut"
	"seckill-harness/sut/servicechild"
)

// service puts the scenario's running access service (service:, or
// --service and --service-mapping) on p as its system under test
// (httpsut.System), with report.json's system_under_test (kind service).
// The mapping's client policy becomes every phase's: its per-request
// deadline bounds each send (with room for the look-up of an UNKNOWN
// outcome when the mapping has a query endpoint), its retry policy is the
// engine's re-sends of the same request. A mapping without a release
// endpoint gets no release operation, one without a query endpoint no
// status query: each phase's share of those is sent as fresh reserves,
// and the report says so (lifecycle.LeaveShareOut). It refuses what the service
// cannot run with: another system, --lua-dir, a split load.
func (in Inputs) service(s *scenarios.Scenario, p *lifecycle.Plan) error {
	sv := s.Service
	if sv.URL == "" {
		return nil
	}
	switch {
	case in.System != nil:
		return fmt.Errorf("--service %s and the system %q: one plan runs one system under test", sv.URL, in.SystemName)
	case in.LuaDir != "":
		return fmt.Errorf("--service %s with --lua-dir %s: --lua-dir replaces the harness's scripts, a service runs its own: drop one", sv.URL, in.LuaDir)
	case p.Activity.Shared || in.Generator.Split():
		return fmt.Errorf("--service %s with --activity/--generator: a split load is not supported against a service yet; run one generator", sv.URL)
	}
	m, err := httpsut.LoadMapping(sv.Mapping) // Validate loaded it already: this reads the same file
	if err != nil {
		return err
	}
	sys := &reports.SystemUnderTest{Name: m.Name, Kind: "service", URL: sv.URL}
	if sv.Mapping != "" {
		sys.Mapping = sv.Mapping
		if abs, err := filepath.Abs(sv.Mapping); err == nil {
			sys.Mapping = abs
		}
	}
	deadline := m.RequestTimeout()
	if m.Query != nil {
		deadline *= 2 // the submit, then the look-up of an UNKNOWN outcome
	}
	workers := 1
	for i := range p.Phases {
		c := &p.Phases[i].Config
		c.CallTimeout, c.RetrySends, c.RetryBackoff = deadline, m.Retry.Sends, m.Backoff()
		workers = max(workers, c.Concurrency)
	}
	if m.Release == nil {
		lifecycle.LeaveShareOut(p, sys, history.KindRelease, "the service mapping has no release endpoint")
	}
	if m.Query == nil {
		lifecycle.LeaveShareOut(p, sys, history.KindQuery, "the service mapping has no query endpoint")
	}
	sys.Notes = append(sys.Notes, "client: "+m.Policy())
	if len(m.Setup) > 0 || len(m.Teardown) > 0 {
		sys.Notes = append(sys.Notes, fmt.Sprintf("the sale is set up through the service's API: %d setup call(s) once it is ready, before the load; %d teardown call(s) once after the run", len(m.Setup), len(m.Teardown)))
	}
	if !m.ReferenceState() {
		sys.Notes = append(sys.Notes, "state: none: the harness neither sets the activity up in Redis nor reads the service's state back (the checks that need it skip, I3 and I4 are judged from the answers); set state: reference in the mapping when the service keeps the reference contract's keys")
	}
	url := sv.URL
	p.Path = func(st *lua.Store) sut.System {
		s, err := httpsut.New(url, m, workers, st)
		if err != nil {
			panic(err) // Validate checked the URL (httpsut.CheckURL)
		}
		return s
	}
	p.PathName, p.SystemUnderTest = "service:"+m.Name, sys
	return nil
}

// childService gives a service the run starts (service_cmd:, --service-cmd)
// its address before the run is validated and planned: the HTTP client
// (service:) is built before the child starts. Without service.url the
// child gets a free 127.0.0.1 port, which becomes service.url (sent to
// with the contract's mapping, or service.mapping); with one, the child
// listens on its host:port (childListen, the plan's Service.Listen, which
// the lifecycle passes as SECKILL_LISTEN).
func childService(s *scenarios.Scenario) error {
	if s.ServiceCmd == "" || s.Service.URL != "" {
		return nil
	}
	l, err := servicechild.FreeListen()
	if err != nil {
		return err
	}
	s.Service.URL = "http://" + l
	return nil
}

// childListen is the host:port of service.url ("" when it has none:
// the child then picks a free port and no HTTP client sends to it).
func childListen(s *scenarios.Scenario) string {
	u, err := url.Parse(s.Service.URL)
	if err != nil {
		return ""
	}
	return u.Host
}
