package lifecycle

import (
	"time"

	"seckill-harness/reports"
)

// The parts of a [Plan] that belong together, each a concern of its own.

// ActivityPlan names the run's activity.
type ActivityPlan struct {
	// ID names the activity; "" generates run<unix-ms>. With Shared the
	// activity is set up by generator 0 or joined by the others, and never
	// torn down (see 'verify').
	ID     string
	Shared bool
	Wait   time.Duration // joining generators: how long to wait for generator 0
}

// LuaPlan is where the path's scripts come from and how long one may run.
type LuaPlan struct {
	// Dir holds the team's scripts; "": the embedded ones.
	Dir string
	// ScriptLimit is how long a script of the path under test may run
	// before the harness sends SCRIPT KILL; 0: lua.DefaultScriptLimit.
	ScriptLimit time.Duration
}

// PostgresPlan is where the pipeline's orders are kept.
type PostgresPlan struct {
	// URL names an existing database for the pipeline's orders (the run
	// gets its own schema, dropped after); "": a throwaway local
	// PostgreSQL the run starts and removes. Credentials may come from the
	// PG* environment instead and are never printed.
	URL string
	// Keep leaves the run's schema in the URL database (its name is
	// logged) instead of dropping it; refused without URL.
	Keep bool
}

// ServicePlan is the access service under test started as a child.
type ServicePlan struct {
	// Cmd starts the access service under test as a child of the run (the
	// "start the service" step, runner/servicechild), its Redis client
	// routed through the proxies by the nodes' announced addresses
	// (ClusterSpec.ServiceRouting, docs/SERVICE_ROUTING.md); "": none.
	// Ready is its readiness URL ("": http://<listen>/healthz).
	Cmd, Ready string
	// Listen is the child's SECKILL_LISTEN ("": a free 127.0.0.1 port
	// picked when it starts); the planner sets it to the address the HTTP
	// client (service:) sends to.
	Listen string
}

// Judging is how a run is judged beyond the invariants: its bounds, the
// scenario's assertions, waivers, expected failures, regression
// thresholds and tolerated events.
type Judging struct {
	Bounds   Bounds                                    // what the run must have done to pass (evidence rules)
	Evaluate func(*reports.Report) []reports.Assertion // the scenario's assertions; nil: none
	Waived   func(id string) bool                      // invariants reported but not required
	// ExpectFail maps an invariant id (one of checks.ExpectableIDs) to the
	// fewest failures it is expected to count: the run demonstrates a known
	// loss window. The invariant is then reported with "expected" and its
	// failure does not fail the run; the assertion "<id> fails as
	// expected" does, when it did not fail with at least that count.
	ExpectFail map[string]int64
	// Regressions are the scenario's regression thresholds over
	// history.DefaultThresholds (scenarios.Scenario.Regressions), judged
	// with Output.Baseline.
	Regressions map[string]float64
	// TolerateEvents are the kinds of unplanned events (reports.EventKinds)
	// the scenario tolerates: reported with tolerated: true and not named
	// by the verdict line.
	TolerateEvents []string
}
