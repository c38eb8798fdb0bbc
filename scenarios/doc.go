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
//	path: reference               # reserve path (reference, or a known-bad one)
//	adapter: my-script.yaml       # a contract adapter file (docs/ADAPTERS.md),
//	                              # relative to this file and inside its
//	                              # directory (see Files): a team's own
//	                              # reserve script is the system under test
//	                              # (not with path: or pipeline:)
//	service_cmd: ''               # starts the access service under test as
//	                              # a child (sh -c; env SECKILL_LISTEN,
//	                              # SECKILL_REDIS_ADDRS = the proxied nodes,
//	                              # SECKILL_SECRET, SECKILL_PG_URL); faults
//	                              # service-kill|pause|restart act on it
//	service_ready: ''             # its readiness URL ('': http://LISTEN/healthz)
//	local_soldout: 0s             # TTL of the path's local sold-out flag
//	                              # (set by SOLD_OUT, broadcast over Redis
//	                              # Pub/Sub, answers LOCAL_SOLD_OUT until it
//	                              # expires; check L1); 0: none
//	tolerate_events: []           # unplanned events the scenario tolerates
//	                              # (automatic-failover, failover,
//	                              # restart, role-change, cluster-fail,
//	                              # full-resync, node-fail, unreachable,
//	                              # link-down, harness-stall): kept in
//	                              # unplanned_events (tolerated: true), not
//	                              # named by the verdict line
//	regressions:                  # run --baseline: how much worse than the
//	  p99: 20%                    # results history's recent runs a figure
//	  throughput: 10%             # may be (p50, p99, p999, throughput; "off"
//	                              # turns one off); default p99 20%,
//	                              # throughput 10%
//	wait:                         # WAIT after each fresh ACCEPTED, on the
//	  replicas: 0                 #   connection that ran the script; 0: off
//	  timeout: 500ms              #   WAIT's timeout (default with replicas)
//	topology:
//	  masters: 3
//	  replicas: 1                 # per master
//	  node_timeout: 2s            # cluster-node-timeout
//	  appendonly: false
//	  pool_size: 0                # load client connections per node; 0:
//	                              # concurrency + 16 (never exhausted)
//	  pool_timeout: 0             # wait for a free connection before a
//	                              # pool timeout; 0: go-redis's default
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
//	    mix: {replay: 0, same_user: 0, foreign_request: 0, release: 0, return: 0, query: 0}
//	faults:                       # the fault timeline (as --fault)
//	  - kind: failover            # required: a registered kind
//	    name: kill                # default: the kind (kind#2, … for repeats)
//	    at: 5s                    # offset from the start of the load
//	    for: 6s                   # 0: until the end of the load
//	    target: hot-master        # the kind's target parameter
//	    params: {mode: kill}      # the kind's other parameters
//	pipeline:                     # the rest of the reserve path beside the
//	                              # load (sut/pipeline); absent: off
//	  seed: 42                    # default: the scenario's seed
//	  mq:                         # the simulated MQ, per send:
//	    ack: 0.9                  #   shares in [0, 1]; ack + error +
//	    error: 0                  #   timeout = 1; ack not written takes
//	    timeout: 0.1              #   the rest (1 - error - timeout)
//	    timeout_delivered: 0.5    # of the timeouts, stored anyway (duplicates)
//	    timeout_after: 20ms       # a timed-out send blocks the sender this long
//	    lost: 0                   # of the acked, never delivered (expiry's job)
//	  order: {reject: 0.1, delay: 50ms, workers: 8}
//	  dispatcher: {every: 20ms, batch: 100, workers: 8, retry_after: 100ms}
//	                              # scan_after: 0s; > 0: the access service
//	                              # sends right after ACCEPTED and the
//	                              # dispatcher only scans send_pending for
//	                              # members unsent that long (service-crash)
//	  expiry: {every: 100ms, batch: 100, max_pages: 20}
//	  release: {workers: 4, retry: 50ms, attempts: 5}
//	  call_timeout: 2s            # every Redis call of the stages
//	  drain: 10s                  # after the load: until every reservation is
//	                              # ORDER_CREATED or RELEASED (P2); ends after
//	                              # this long without one more reservation
//	                              # finishing, 30x this in all
//	  defects: []                 # negative controls only: order-no-dedupe,
//	                              # order-ignores-fence,
//	                              # expiry-direct-compensate, expiry-no-check,
//	                              # release-on-send-timeout
//	assertions:
//	  invariants: all             # or a list: [I1, I3, I6, P2]
//	  slo:
//	    - {phase: baseline, p99: 20ms, p999: 50ms, min_throughput: 1800}
//	    - {p99: 100ms, of: service_time}   # no phase: the whole run
//	  max_lost_acks: 0
//	  expect_fail:                # a demonstration: these checks must fail
//	    I6: {min: 1}              # I6 counts lost acks, I3 oversold units
//	  max_unknown_ratio: 0.01     # unknown.total / totals.ops
//	  max_dropped_ratio: 0.01     # dropped / scheduled ops; (0, 1], default 0.01
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
// Scenario.Waived. A required invariant whose failure is wholly the
// consequence of a waived one is waived with it, and its detail names the
// cause (reports.Invariant.ConsequenceOf: I3's oversell when every unit
// sold beyond the stock was sold again after an acknowledged reservation
// was lost, under a scenario that waives I6). The ids are those of the checker's table
// (checks.Invariants, listed in docs/CHECKS.md): with the pipeline on, "all"
// also requires the pipeline checks to be in the report, and listing a
// pipeline check without a pipeline: section is an error.
//
// # Files
//
// A path written in a scenario (adapter:, service.mapping:, a suite's
// member files), like an adapter file's script:, is relative to the file
// that names it and must stay inside that file's directory, or inside
// the directory named by --files-root DIR (a flag of every command): a
// path that leaves it (.., an absolute path elsewhere, a symlink that
// leads out) or names anything but a regular file is refused with exit 2
// before it is read (internal/fileref). A path given on the command line
// (--adapter, --service-mapping, a scenario file) is the user's own and
// may be anywhere. No error quotes more than 32 bytes of any value of a
// file, and a file that is not a YAML mapping (or holds control bytes, as
// /proc/*/environ does) is named with its line, not quoted.
//
// # Limits
//
// A scenario file is input from anyone, so what it may ask for is bounded
// (see limits.go): at most 256 KiB (MaxFileBytes), mappings and lists
// nested at most 64 deep (MaxNesting), at most 100,000 values once aliases
// and merges are expanded (MaxNodes: an alias bomb fails at the alias that
// crosses it), 1,000 phases, 256 faults and 256 suite members, 24 h of load
// in all, a peak rate of 1,000,000 ops/s per phase (rate_scale applied)
// and 50,000,000 planned operations (peak rate × duration, or max_ops).
// Fields the history stores narrowed are bounded where they are given:
// buckets at most 65,536 (16-bit bucket index), users at most 2^32,
// retries at most 254. Every refusal names source:line and the limit.
// ResolveContext gives up when its context ends (a signal), so parsing
// never holds up an interrupt.
//
// # Pipeline
//
// A pipeline: section (even an empty one, "pipeline: {}") runs the
// asynchronous half of the reserve path beside the load and drains it
// afterwards: Scenario.Pipeline and Scenario.Drain. Every field not written
// takes sut/pipeline.DefaultConfig's value: every send acked (mq.ack 1,
// error 0, timeout 0, lost 0; timeout_delivered 0.5 and timeout_after 20ms
// apply once timeout > 0), no rejects and no consumer lag (order.reject 0,
// order.delay 0, 8 order workers), the dispatcher polling every 20ms for
// batches of 100 with 8 workers and retry_after 100ms, expiry sweeping every
// 100ms in pages of 100 (at most 20), releases with 4 workers, 50ms between
// attempts and 5 attempts, call_timeout 2s, no defects; except seed, which
// defaults to the scenario's seed (so --set seed=7 reseeds the MQ and order
// draws too), and drain (not a pipeline.Config field), 10s (DefaultDrain,
// like the run command's --drain).
//
// The MQ shares are not normalised: ack + error + timeout must add up to 1
// (within 1e-9). Leave ack out and it is the rest, 1 - error - timeout, so
// "mq: {timeout: 0.1}" or --set pipeline.mq.timeout=0.2 is a complete
// split; write ack and the three must add up to 1 (error, timeout then
// default to 0). timeout_delivered, lost and order.reject are shares of
// their own, each in [0, 1].
//
// Durations (timeout_after, every, retry_after, retry, call_timeout, drain)
// must be positive, order.delay not negative (0: no lag); sizes (workers,
// batch, max_pages, attempts) at least 1. A zero is an error rather than
// the pipeline's silent "0 means the default": leave the field out instead.
// defects names pipeline.DefectNames only.
//
// A dispatcher-crash fault needs the pipeline (without a pipeline: section
// it is an error at the fault's kind), and activity.reservation_ttl must
// exceed the crash (the fault's for, or until the end of the load when for
// is 0): otherwise reservations accepted as the dispatcher stops expire
// before the restarted dispatcher sends them, expiry (correctly) releases
// them, and the crash tests expiry rather than the re-send. Keep the TTL
// well above the crash. Two dispatcher-crash faults must not overlap.
package scenarios
