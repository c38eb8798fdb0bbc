// Package lifecycle is the life of one run, as a library: every command of
// seckill-harness (run, suites, compare, capacity, race, selftest,
// generators and verify) maps its flags or scenario to a Plan and an
// Output, calls Execute, and maps the Outcome to its exit code.
//
// Execute is a short sequence of named steps:
//
//	prepare       validate the plan, load the scripts, check --out is writable
//	openStand     start (or reach) the cluster, the proxies and the client
//	settleTopology  on a cluster the harness did not create: wait (bounded)
//	              until every node agrees on the topology and it shows what
//	              the faults need (report.json's topology.settle_wait_ms)
//	guard         refuse faults the cluster must not get
//	setUp         create the system under test, pre-flight it when it can
//	              (sut.Preflighter: an adapter file; a finding fails A1 and
//	              refuses the load), join a named activity
//	startFaults   arm the fault timeline and the async pipeline
//	startService  start the service child (--service-cmd), await its readiness
//	setUpActivity create the run's activity through the system under test
//	              (a service's setup: calls need it ready); its teardown
//	              then runs before the child is stopped
//	warmUp        before t=0: dial every connection the load uses, load the
//	              scripts on every master, wait for a settled cluster
//	              (report.json's warm_up says what and how long)
//	observe       sample every node (and the client's pool) each second, beside the load
//	driveLoad     run the load phases on one clock
//	heal          heal every fault (also on error and Ctrl-C), wait for a healthy cluster
//	drain         let the pipeline finish its reservations
//	check         read the facts back from Redis once, judge the invariants
//	assemble      build report.json: faults, phases, assertions, verdict
//	write         write every report artifact
//
// A Go error from Execute is a harness error (the CLI's exit 2); a failed
// check is in the Outcome. Faults are healed and the cluster the run
// started is removed on every way out.
package lifecycle
