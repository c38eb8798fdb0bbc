// Package scenarios holds the scenario schema (YAML), its loading with
// source positions, validation, --set overrides, assertion evaluation and
// the embedded built-in library (smoke, stock-one, the failover and other
// chaos scenarios, flash-sale, nightly, …).
//
// # File format
//
// Durations are Go duration strings ("500ms", "10s", "1m30s"); rates are
// ops/s. Every field is optional except where noted; unknown fields are
// errors (file:line, the field, the valid field names).
//
//	name: failover-kill          # default: the file name without .yaml
//	description: free text
//	proves: one line              # what a pass proves (listings)
//	seed: 42                      # workload seed
//	rate_scale: 1                 # multiplies every phase's rate, slope,
//	                              # amplitude and peak (and users when
//	                              # activity.scale_users); must be > 0
//	path: reference               # reserve path (KnownPaths)
//	topology:
//	  masters: 3
//	  replicas: 1                 # per master
//	  node_timeout: 2s            # cluster-node-timeout
//	  appendonly: false
//	activity:
//	  stock: 1000                 # total, split over the buckets
//	  buckets: 2                  # 1..stock (any when stock is 0)
//	  users: 20000                # distinct users (> 0)
//	  scale_users: false          # users × rate_scale too
//	  reservation_ttl: 15m
//	  window: 0s                  # activity open for; 0: load + 1h
//	defaults:                     # fields every phase inherits
//	  concurrency: 64
//	phases:                       # run back to back; none: one phase
//	  - name: baseline            #   "load" built from defaults:
//	    duration: 10s             # > 0
//	    mode: open                # open | closed
//	    shape: constant           # constant | linear | sine | spike
//	    rate: 2000                # open: ops/s (> 0); the base of every shape
//	    slope: 0                  # linear: ops/s added per second
//	    amplitude: 0              # sine: rate ± amplitude ...
//	    period: 0s                #   ... over period
//	    peak: 0                   # spike: from rate up to peak ...
//	    spike_at: 0s              #   starting at spike_at, ramp_up,
//	    ramp_up: 0s               #   hold, ramp_down (must end within
//	    hold: 0s                  #   the phase)
//	    ramp_down: 0s
//	    concurrency: 64           # workers
//	    max_in_flight: 20000      # open: over it an op is dropped
//	    max_ops: 0                # 0: no cap; the phase ends at the cap
//	    timeout: 2s               # per send; a timed-out send is UNKNOWN
//	    retries: 3                # same-id re-sends after UNKNOWN/TRYAGAIN
//	    retry_backoff: 50ms
//	    mix: {replay: 0, same_user: 0, foreign_request: 0, release: 0}
//	faults:                       # the fault timeline (as --fault)
//	  - kind: failover            # required: a registered kind
//	    name: kill                # default: the kind (kind#2, … for repeats)
//	    at: 5s                    # offset from the start of the load
//	    for: 6s                   # 0: until the end of the load
//	    target: hot-master        # the kind's target parameter
//	    params: {mode: kill}      # the kind's other parameters
//	assertions:
//	  invariants: all             # or a list: [I1, I3, I6]
//	  slo:
//	    - {phase: baseline, p99: 20ms, p999: 50ms, min_throughput: 1800}
//	    - {p99: 100ms, of: service_time}   # no phase: the whole run
//	  max_lost_acks: 0
//	  max_unknown_ratio: 0.01     # unknown.total / totals.ops
//	  min_throughput: 1500        # whole run, ops/s
//	  outcomes:                   # totals.outcomes bounds
//	    ACCEPTED: {exactly: 1}
//	    SOLD_OUT: {min: 1, max: 99999}
//	suite: [a, b]                 # a suite: other scenarios, nothing else
//
// # Resolution rules
//
// A phase field not given on the phase comes from defaults:, else from
// runner.DefaultConfig (open, constant 2,000 ops/s for 10 s, 64 workers,
// max_in_flight 20,000, timeout 2 s, 3 retries, 50 ms backoff). The mix is
// merged share by share (phase over defaults); an unset share is 0, so the
// default mix is all fresh requests. Shape parameters that do not apply to
// the phase's shape are errors, as are shape fields on a closed phase.
//
// Latency SLOs use the structured form above: phase (a load phase name, or
// when the scenario has faults "baseline", "during <fault name>",
// "after <fault name>"; omitted: the whole run), of (latency from the
// intended send, the default; or service_time), then any of p50, p95, p99,
// p999, max (upper bounds, inclusive) and min_throughput (ops/s completed
// in the phase). Evaluate names them like "p99 <= 20ms in baseline".
//
// Required invariants: "all" (the default) requires every invariant in the
// report not to fail (skip is fine: nothing to judge). An explicit list
// requires those and waives the others (reported, not required): see
// Scenario.Waived.
package scenarios
