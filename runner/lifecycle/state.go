package lifecycle

import (
	"context"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/lua"
	"seckill-harness/metrics"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/samplers/host"
	"seckill-harness/samplers/servers"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
	"seckill-harness/sut/servicechild"
)

// The state of one concern of a run, each written by the step named in
// its doc (and the helpers it calls) and read by the later steps. None
// needs a lock: the steps run one after the other, and what runs beside
// the load (samplers, the timeline) keeps its own state.

// sutState is the system under test, as "set up the system under test"
// leaves it.
type sutState struct {
	store    *lua.Store // the reference scripts on the stand, keyed by the run's secret (ids, the pipeline)
	sale     sut.Sale
	sys      sut.System        // the system under test, with its wrappers (WAIT, local sold-out flag)
	flag     *sut.LocalSoldOut // the path's local sold-out flag; nil: none
	pre      *sut.Preflight    // what the system's pre-flight found; nil: it has none
	watchdog *lua.Watchdog
}

// faultState is the fault timeline ("start the faults and the pipeline")
// and its heal ("heal", and close on the way out).
type faultState struct {
	tl           *faults.Timeline
	stopTimeline context.CancelFunc // set by "drive the load"
	healed       bool
	healErr      error
}

// pipelineState is the async pipeline and its PostgreSQL order store
// ("start the faults and the pipeline"), and its evidence ("drain").
type pipelineState struct {
	pl     *pipeline.Pipeline
	orders *pipeline.Orders // the pipeline's PostgreSQL order store
	// orderServer says which PostgreSQL holds the orders (report.json
	// pipeline.order_db.server): "local throwaway postgres://…", "docker
	// container <id> (<image>)", "existing postgres://…" (never credentials).
	orderServer string
	pgURL       string // the orders' database with the run's schema, for the service child
	ev          *pipeline.Evidence
}

// serviceState is the service under test started as a child ("start the
// service").
type serviceState struct {
	child *servicechild.Child // nil: none
	conns *connSampler        // its connections, sorted (service_behind_proxies)
}

// observers sample beside the load ("observe the servers"; "drive the
// load" stops them).
type observers struct {
	servers *servers.Sampler // the nodes' view
	host    *host.Sampler    // the machine's and the harness's view
	live    *metrics.Live    // --metrics-addr's server; nil: none
}

// loadState is what "drive the load" found.
type loadState struct {
	res         *runner.Result
	runErr      error
	interrupted string // why the load stopped early ("" = it ran to its end)
	poolReport  *reports.Pool
	lag         []compose.ReplicationSample // replication lag, sampled beside the load
}

// settleState is what "heal" found after healing the faults.
type settleState struct {
	busyErr   error // a script still running on a node after the load
	healthErr error // the cluster did not settle healthy
}

// checkState is what "check" found.
type checkState struct {
	err     error                 // the final state could not be read back
	evicted *checks.EvictionFacts // the nodes' evictions over the run (K2)
	chk     *checks.CheckReport
}
