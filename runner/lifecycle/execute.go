package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/metrics"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
)

// execution is the state of one Execute, passed from step to step. It
// holds what several steps share; the state of one concern is a struct of
// its own (state.go), written by the step that owns it and read by the
// later ones.
type execution struct {
	plan     *Plan
	out      Output
	cleanup  []func()     // run in reverse order on the way out
	madeDirs []string     // the output directories prepare made (missingDirs), deepest first
	scripts  *lua.Scripts // prepare: the path's scripts
	act      *lua.Activity
	gi       *GenInfo // a split load's generator (joinActivity); nil: none
	stand    *Stand

	sut     sutState      // set up the system under test
	fault   faultState    // start the faults … heal
	pipe    pipelineState // start the faults and the pipeline … drain
	service serviceState  // start the service
	obs     observers     // observe the servers
	load    loadState     // drive the load
	settled settleState   // heal
	judged  checkState    // check

	warm    *reports.WarmUp // what warmUp readied before t=0
	outcome *Result         // the run's result, once assembled
}

// Execute runs a plan from start to finish (see the package doc for the
// contract): the steps of [Steps], in order. A step before the load that
// fails ends the run with its error (exit 2), every fault healed and
// everything the run started stopped; from the heal on the run happened,
// so the later steps run on fresh contexts (the load's may be cancelled)
// and a report is always written.
func Execute(ctx context.Context, p *Plan, out Output) (*Result, error) {
	x := &execution{plan: p, out: out}
	defer x.close()
	after := newAfter(ctx)
	defer after.stop()
	for _, s := range x.steps(after) {
		if err := s.do(ctx); err != nil {
			x.close()                 // everything stopped: nothing writes in --out any more
			removeMissing(x.madeDirs) // a refused run leaves no empty --out behind
			return nil, err
		}
	}
	if out.OnOutcome != nil {
		out.OnOutcome(out.Dir, x.outcome)
	}
	if x.judged.err != nil {
		// The partial report is written; the run itself could not be judged.
		return x.outcome, x.judged.err
	}
	return x.outcome, nil
}

// step is one step of a run: its name (docs/ARCHITECTURE.md's step table
// lists the same names, in the same order) and what it does.
type step struct {
	name string
	do   func(context.Context) error
}

// steps are the run's steps in order. Those from heal on ignore the load's
// context: each begins a fresh one of its own (afterLoad.begin).
func (x *execution) steps(after *afterLoad) []step {
	return []step{
		{"prepare", x.prepare},
		{"open the stand", x.openStand},
		{"wait for the topology to settle", x.settleTopology},
		{"guard", x.guard},
		{"set up the system under test", x.setUp},
		{"start the faults and the pipeline", x.startFaults},
		{"start the service", x.startService},
		{"set up the activity", x.setUpActivity},
		{"warm up", x.warmUp},
		{"observe the servers", x.observe},
		{"drive the load", x.driveLoad},
		{"heal", func(context.Context) error {
			ctx := after.begin()
			x.heal()
			x.settled.busyErr = x.sut.watchdog.EnsureNotBusy(ctx)
			x.settled.healthErr = settle(ctx, x.out.logger(), x.stand, len(x.plan.Faults) > 0)
			return nil
		}},
		{"drain", func(ctx context.Context) error { x.drain(ctx, after); return nil }},
		{"check", func(context.Context) error { x.check(after.begin()); return nil }},
		{"assemble", func(context.Context) error { x.outcome = x.assemble(after.begin()); return nil }},
		{"write", func(context.Context) error { return x.write(after.begin(), x.outcome) }},
	}
}

// Steps names the steps of a run, in the order Execute takes them.
func Steps() []string {
	var names []string
	for _, s := range (&execution{}).steps(nil) {
		names = append(names, s.name)
	}
	return names
}

// close runs the cleanups in reverse order: heal, stop the pipeline,
// teardown, close the stand. Each runs once, however often close is called.
func (x *execution) close() {
	x.heal()
	for i := len(x.cleanup) - 1; i >= 0; i-- {
		x.cleanup[i]()
	}
	x.cleanup = nil
}

func (x *execution) prepare(ctx context.Context) error {
	p := x.plan
	if err := CheckProgressMode(x.out.Progress); err != nil {
		return err
	}
	if x.out.MetricsAddr != "" {
		if err := metrics.CheckAddr(x.out.MetricsAddr); err != nil {
			return err
		}
	}
	if len(p.Phases) == 0 {
		return errors.New("the plan has no load phase")
	}
	if p.Stand == nil {
		if err := p.Cluster.Validate(); err != nil {
			return err
		}
	}
	scripts, err := LoadScripts(p.Lua.Dir)
	if err != nil {
		return err
	}
	x.scripts = scripts
	if p.Postgres.URL != "" && p.Pipeline == nil {
		return errors.New("--pg holds the pipeline's orders, and this run has no pipeline: add --pipeline (or run a scenario with a pipeline: section)")
	}
	if p.Postgres.Keep && p.Postgres.URL == "" {
		return errors.New("--pg-keep leaves the run's schema in an existing database: add --pg postgres://user@host:port/db (the throwaway local PostgreSQL is removed with its files)")
	}
	if p.Generator.Split() {
		switch {
		case p.Activity.ID == "" || !p.Activity.Shared:
			return fmt.Errorf("--generator %s needs --activity NAME", p.Generator)
		case p.Stand == nil && !p.Cluster.Shared():
			return fmt.Errorf("--generator %s needs a cluster every generator reaches: --cluster redis://host:port[,host:port…] (a %s cluster would be this process's own)", p.Generator, p.Cluster.Spec)
		case p.Pipeline != nil:
			return fmt.Errorf("--generator %s: the pipeline (dispatcher, MQ, orders) cannot be split across generators yet: run it without --pipeline", p.Generator)
		}
	}
	for i := range p.Phases {
		p.Phases[i].Config.Generator = p.Generator
	}
	if p.Activity.Shared && x.out.History == "" {
		x.out.History = "history.jsonl" // 'verify' reads it back
	}
	if err := p.Phases[0].Config.Validate(); err != nil {
		return fmt.Errorf("invalid load: %w", err)
	}
	if err := runner.CheckLoad(p.Phases); err != nil {
		return fmt.Errorf("invalid load: %w", err)
	}
	if err := p.Wait.Validate(); err != nil {
		return err
	}
	window := p.Window
	if window <= 0 {
		window = p.Duration() + time.Hour
	}
	id := p.Activity.ID
	if id == "" {
		id = fmt.Sprintf("run%d", time.Now().UnixMilli())
	}
	x.act = lua.NewActivity(id, "sku1", p.Stock, p.Buckets, window)
	if err := x.act.Validate(); err != nil {
		return fmt.Errorf("invalid activity: %w", err)
	}
	if err := x.reachService(ctx); err != nil {
		return err
	}
	// Unwritable outputs fail now, not after the whole load; what this
	// creates is removed again if the run is refused before its load.
	if x.out.Dir != "" {
		x.madeDirs = missingDirs(x.out.Dir, x.out.History)
		if err := reports.Preflight(x.out.Dir, x.out.History); err != nil {
			return err
		}
	}
	return nil
}

func (x *execution) openStand(ctx context.Context) error {
	if x.plan.Stand != nil {
		x.stand = x.plan.Stand
		return nil
	}
	spec := x.plan.Cluster
	spec.ReplicationProxies = spec.ReplicationProxies || faults.NeedReplicationProxies(x.plan.Faults)
	spec.ServiceRouting = x.plan.Service.Cmd != ""
	st, err := OpenStand(ctx, x.out.logger(), spec, x.plan.MaxConcurrency(), len(x.plan.Faults) > 0)
	if err != nil {
		return err
	}
	x.stand = st
	x.cleanup = append(x.cleanup, st.Close)
	return nil
}

// settleTopology waits, on a cluster the harness did not create, until
// every node agrees on its topology and it shows what the planned faults
// need (a replica per master for a failover), so the guard judges the
// cluster as it is, not a view some node has not caught up with.
func (x *execution) settleTopology(ctx context.Context) error {
	return x.stand.WaitSettled(ctx, faults.TopologyNeed(x.plan.Faults))
}

// guard refuses, before any key is written, the faults this cluster must
// not get: destructive ones on a cluster the harness did not create unless
// allowed, process-level ones wherever it has no hold on the processes, and
// any whose declared needs the cluster does not meet.
func (x *execution) guard(ctx context.Context) error {
	if err := faults.CheckAllowed(x.plan.Faults, x.stand.Cluster, x.plan.Cluster.AllowDestructive); err != nil {
		return err
	}
	if len(x.plan.Faults) == 0 {
		return nil
	}
	// Each kind's declared needs (topology, proxies, pipeline, its own
	// Available) against the cluster at hand: refused before the load, not
	// found out at inject time.
	s, err := faults.SettingOf(ctx, x.stand.Cluster, x.plan.Cluster.AllowDestructive, x.stand.Proxies != nil, x.plan.Pipeline != nil)
	if err != nil {
		return err
	}
	s.LocalSoldOut = x.plan.LocalSoldOut.TTL > 0
	s.Service = x.plan.Service.Cmd != ""
	var errs []error
	for _, p := range x.plan.Faults {
		errs = append(errs, faults.Available(p, s))
	}
	return errors.Join(errs...)
}

func (x *execution) setUp(ctx context.Context) error {
	p, log, rdb := x.plan, x.out.logger(), x.stand.Client
	first := p.Phases[0].Config
	secret := p.Secret
	if secret == nil {
		secret = SecretFor(first.Seed)
	}
	x.sut.store = lua.NewStore(rdb, x.scripts, secret)
	// A script that runs too long (a team's loop) is killed, and no node is
	// left answering BUSY when the harness exits.
	x.sut.watchdog = lua.NewWatchdog(x.stand.Cluster, p.Lua.ScriptLimit)
	x.sut.store.SetWatchdog(x.sut.watchdog)
	x.sut.sys = sut.NewReference(x.sut.store)
	if p.Path != nil {
		x.sut.sys = p.Path(x.sut.store)
		if c, ok := x.sut.sys.(io.Closer); ok {
			// A system that holds something running (an in-process
			// service started by its Setup) is stopped with the run.
			x.cleanup = append(x.cleanup, func() { _ = c.Close() })
		}
	}
	if err := x.preflight(ctx); err != nil {
		return err
	}
	if err := x.joinActivity(ctx); err != nil {
		return err
	}
	x.sut.sale = sut.Sale{Activity: x.act, IDs: x.sut.store}
	if p.Wait.Enabled() {
		x.sut.sys = sut.Waiting{System: x.sut.sys, Policy: p.Wait}
		log.Info(fmt.Sprintf("reserve: %s, on the connection that ran the script", p.Wait))
	}
	if err := x.wrapLocalSoldOut(ctx); err != nil {
		return err
	}
	for _, ph := range p.Phases {
		x.out.logger().Info(fmt.Sprintf("load %s: %s; stock %d over %d buckets", ph.Name, ph.Config, p.Stock, p.Buckets))
	}
	return nil
}

// preflight tries a system that has a pre-flight (sut.Preflighter: an
// adapter file) on the stand before its activity is set up. Its findings
// are A1's facts; one that Refuses refuses the load (driveLoad runs none),
// the others let it run; a pre-flight that cannot run is a harness error.
func (x *execution) preflight(ctx context.Context) error {
	pf, ok := sut.Ability[sut.Preflighter](x.sut.sys)
	if !ok {
		return nil
	}
	found, err := pf.Preflight(ctx, x.act)
	if err != nil {
		return fmt.Errorf("the pre-flight of %s: %w", x.sut.sys.Name(), err)
	}
	x.sut.pre = &sut.Preflight{System: x.sut.sys.Name(), Findings: found}
	log := x.out.logger()
	for _, f := range found {
		log.Warn(f.String())
	}
	switch {
	case x.sut.pre.Refused():
		log.Warn(fmt.Sprintf("pre-flight: %s refused before the load (%d finding(s), check A1): no load runs", x.sut.sys.Name(), len(found)))
	case len(found) > 0:
		log.Warn(fmt.Sprintf("pre-flight: %s not cluster-safe (%d finding(s), check A1 fails), but Redis ran every sample call: the load runs, so the other checks and the faults show what the shape costs", x.sut.sys.Name(), len(found)))
	default:
		log.Info(fmt.Sprintf("pre-flight: %s touched only the keys it passes in KEYS, one slot per call", x.sut.sys.Name()))
	}
	return nil
}

// joinActivity joins the shared activity of a split load (the run's own
// is set up later, by setUpActivity, once the service is started).
func (x *execution) joinActivity(ctx context.Context) error {
	p, log, rdb := x.plan, x.out.logger(), x.stand.Client
	pv, ok := sut.Ability[sut.Provisioner](x.sut.sys)
	if !ok {
		return fmt.Errorf("the system under test %q cannot set up an activity (it has no sut.Provisioner)", x.sut.sys.Name())
	}
	if !p.Activity.Shared {
		return nil
	}
	act, gi, err := joinActivity(ctx, log, rdb, pv, x.act, p.Generator, p.Activity.Wait, p.Phases[0].Config)
	if err != nil {
		return err
	}
	x.act, x.gi = act, gi
	if !x.stand.Cluster.Owned() {
		log.Info(fmt.Sprintf("activity %s is kept for 'seckill-harness verify' (which removes it with --teardown); its keys expire at %s anyway",
			act.ID, time.UnixMilli(act.RetentionUntilMs).UTC().Format(time.RFC3339)))
	}
	return nil
}

// setUpActivity sets the run's own activity up through the system under
// test (sut.Provisioner), after the service is started: a service's
// setup calls need it ready. Its teardown is registered then, so it runs
// before the service child is stopped: on a cluster the harness did not
// create, on a stand the caller keeps for further runs (Plan.Stand: the
// self-test's and explore's many runs on one cluster), or always for a
// system set up through its service's API (sut.ServiceProvisioner).
func (x *execution) setUpActivity(ctx context.Context) error {
	if x.plan.Activity.Shared {
		x.leaveQueriesOut()
		return nil // joined by joinActivity
	}
	pv, _ := sut.Ability[sut.Provisioner](x.sut.sys)
	if err := pv.Setup(ctx, x.act); err != nil {
		return err
	}
	if sp, ok := pv.(sut.ServiceProvisioner); (ok && sp.ThroughService()) || !x.stand.Cluster.Owned() || x.plan.Stand != nil {
		x.cleanup = append(x.cleanup, x.teardown)
	}
	x.leaveQueriesOut()
	return nil
}

// leaveQueriesOut sends the query share as fresh reserves when the system
// under test has no status query (sut.Querier), whatever the system, and
// says so in system_under_test. It asks once the system is set up: an
// in-process service makes its client in Setup. The planner says why in
// its own words for the systems it builds (an adapter file, a service
// mapping without a query endpoint).
func (x *execution) leaveQueriesOut() {
	if _, ok := sut.Ability[sut.Querier](x.sut.sys); ok {
		return
	}
	p := x.plan
	if p.SystemUnderTest == nil {
		p.SystemUnderTest = systemUnderTest(p, x.scripts)
	}
	LeaveShareOut(p, p.SystemUnderTest, history.KindQuery, x.sut.sys.Name()+" answers no status query (sut.Querier)")
}

// wrapLocalSoldOut puts the plan's local sold-out flag in front of the system.
func (x *execution) wrapLocalSoldOut(ctx context.Context) error {
	p := x.plan
	if p.LocalSoldOut.TTL <= 0 {
		return nil
	}
	if p.Generator.Split() {
		return fmt.Errorf("--local-soldout with --generator %s: the flag's figures are one process's; run it without --generator", p.Generator)
	}
	flag, err := sut.NewLocalSoldOut(ctx, x.stand.Client, x.act, x.sut.sys, p.LocalSoldOut)
	if err != nil {
		return err
	}
	x.sut.flag, x.sut.sys = flag, flag
	x.cleanup = append(x.cleanup, flag.Close)
	x.out.logger().Info(fmt.Sprintf("local sold-out flag: TTL %s, %v service instances, notices on %s", p.LocalSoldOut.TTL, flag.NoticeState()["instances"], sut.SoldOutChannel(x.act)))
	return nil
}

// SecretFor is the default secret that keys a run's reservation ids: the
// same seed derives the same ids, so split generators and verify agree.
func SecretFor(seed int64) []byte { return []byte(fmt.Sprintf("seckill-harness-%d", seed)) }

// teardown removes exactly the keys this run created on somebody else's cluster.
func (x *execution) teardown() {
	tctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log, act := x.out.logger(), x.act
	pv, ok := sut.Ability[sut.Provisioner](x.sut.sys)
	if !ok {
		return // set up by other means: nothing of it to remove
	}
	if x.pipe.pl != nil {
		x.pipe.pl.Stop() // nothing of the pipeline writes to the activity once it is removed
	}
	n, err := pv.Teardown(tctx, act)
	if sp, ok := pv.(sut.ServiceProvisioner); ok && sp.ThroughService() && err != nil {
		log.Warn(fmt.Sprintf("teardown of activity %s through %s: %v", act.ID, x.sut.sys.Name(), err))
		return
	}
	if err != nil {
		log.Warn(fmt.Sprintf("teardown of activity %s: %v (its keys expire at %s anyway)", act.ID, err, time.UnixMilli(act.RetentionUntilMs).UTC().Format(time.RFC3339)))
		return
	}
	if sp, ok := pv.(sut.ServiceProvisioner); ok && sp.ThroughService() {
		log.Info(fmt.Sprintf("teardown: activity %s removed through %s's teardown calls (and %d keys of it by the harness)", act.ID, x.sut.sys.Name(), n))
		return
	}
	log.Info(fmt.Sprintf("teardown: removed the %d keys of activity %s", n, act.ID))
}

// startFaults arms the fault timeline (it starts with the load) and
// starts the async pipeline beside the load when the plan has one.
func (x *execution) startFaults(ctx context.Context) error {
	tl, err := newTimeline(ctx, x.out.logger(), x.stand, x.act, x.sut.sys, x.plan.Faults)
	if err != nil {
		return err
	}
	x.fault.tl = tl
	if x.sut.flag != nil {
		tl.Env.SoldOutNotices = x.sut.flag
	}
	if x.plan.Pipeline != nil {
		pc := *x.plan.Pipeline
		if pc.Orders == nil {
			orders, err := x.openOrders(ctx)
			if err != nil {
				return fmt.Errorf("pipeline: %w", err)
			}
			pc.Orders = orders
		}
		x.pipe.orders = pc.Orders
		x.pipe.pl = pipeline.New(pc, x.sut.store, x.act)
		if err := x.pipe.pl.Start(ctx); err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
		x.cleanup = append(x.cleanup, x.pipe.pl.Stop)
		tl.Env.Pipeline = x.pipe.pl
	}
	return nil
}

// openOrders gives the pipeline its PostgreSQL order store: a fresh schema
// in the stand's database when it has one, otherwise a throwaway local
// server for this run. Both are removed by the cleanups.
func (x *execution) openOrders(ctx context.Context) (*pipeline.Orders, error) {
	if x.stand.Postgres != nil {
		o, err := pipeline.OpenOrders(ctx, x.stand.Postgres, pipeline.OrdersOptions{NewSchema: true})
		if err != nil {
			return nil, err
		}
		x.cleanup = append(x.cleanup, func() { _ = o.Close() })
		return o, nil
	}
	var db *compose.PostgresDB
	var err error
	switch {
	case x.plan.Postgres.URL != "":
		db, err = compose.OpenPostgres(ctx, x.plan.Postgres.URL, compose.PostgresDBOptions{MaxConns: 32, Keep: x.plan.Postgres.Keep})
	case x.stand.Cluster.Provider() == compose.ProviderDocker:
		// --cluster docker: the order database is a container too.
		db, err = compose.StartDockerPostgresDB(ctx, compose.DockerPostgresOptions{}, compose.PostgresDBOptions{MaxConns: 32})
	default:
		db, err = compose.StartPostgresDB(ctx, compose.PostgresOptions{}, compose.PostgresDBOptions{MaxConns: 32})
	}
	if err != nil {
		return nil, err
	}
	x.cleanup = append(x.cleanup, func() { _ = db.Close() })
	x.pipe.pgURL = serviceDBURL(x.plan.Postgres.URL, db)
	kept := ""
	switch {
	case x.plan.Postgres.Keep:
		kept = " (kept after the run: --pg-keep)"
		x.pipe.orderServer = "existing " + db.Redacted()
	case db.Docker() != nil:
		dp := db.Docker()
		kept = fmt.Sprintf(" (container %.12s of %s, ready in %v, removed after the run)", dp.ContainerID(), dp.Image(), dp.Ready().Round(time.Millisecond))
		x.pipe.orderServer = fmt.Sprintf("docker container %.12s (%s)", dp.ContainerID(), dp.Image())
	case db.Local() != nil:
		x.pipe.orderServer = "local throwaway " + db.Redacted()
	default:
		x.pipe.orderServer = "existing " + db.Redacted()
	}
	x.out.logger().Info(fmt.Sprintf("pipeline: orders in PostgreSQL %s, schema %s%s", db.Redacted(), db.Schema(), kept))
	return pipeline.OpenOrders(ctx, db.Pool(), pipeline.OrdersOptions{})
}

func (x *execution) driveLoad(ctx context.Context) error {
	if x.sut.pre.Refused() {
		// Refused by the pre-flight: no operation is sent; the checks
		// judge the untouched activity and A1 the findings.
		x.obs.servers.Stop()
		x.obs.host.Stop()
		x.load.res = &runner.Result{Config: x.plan.Phases[0].Config, Began: time.Now(), History: &history.History{}}
		return nil
	}
	// The load's end stops the timeline's schedule (heal), not an
	// injection under way: that one completes and is healed.
	x.fault.stopTimeline = x.fault.tl.Stop
	opts := []runner.Option{runner.WithOnStart(func(began time.Time) {
		x.obs.host.SetOrigin(began)
		x.fault.tl.Start(ctx, began)
	})}
	if pp := progressOption(x.out.Progress, x.out.ErrOut, func() string { return strings.Join(x.fault.tl.Active(), "+") }, x.liveProgress()); pp != nil {
		opts = append(opts, pp)
	}
	opts = append(opts, x.liveOptions()...)
	// The history streams to disk as the run goes (soak-length runs hold a
	// few chunks, not every operation); every reader streams it back.
	opts = append(opts, runner.WithHistorySpool(""))
	if x.pipe.pl.ServiceSends() {
		opts = append(opts, runner.WithAccepted(x.pipe.pl.ServiceSend))
	}
	var ended func()
	if x.plan.OnLoad != nil {
		ended = x.plan.OnLoad(ctx, x.stand.Cluster)
	}
	res, runErr := runner.RunPhases(ctx, x.plan.Phases, x.sut.sale, x.sut.sys, opts...)
	if ended != nil {
		ended()
	}
	x.obs.servers.Stop() // the series end with the load
	x.obs.host.Stop()
	if res != nil {
		// report.pool and servers.pool: the servers sampler's one series.
		x.load.poolReport = reports.PoolOf(x.stand.PoolSize, x.obs.servers.Pool(res.Began))
		if pr := x.load.poolReport; x.plan.Cluster.PoolSize > 0 || pr.Waits > 0 || pr.Timeouts > 0 {
			fmt.Fprintf(x.out.log(), "pool: %d connection(s) per node, %d wait(s) for a connection (%.0f ms in all), %d pool timeout(s), at most %d connections open\n",
				pr.Size, pr.Waits, pr.WaitMs, pr.Timeouts, pr.MaxConns)
		}
		// Replication lag was read in every round of the servers sampler.
		x.load.lag = x.obs.servers.Replication(res.Began)
	}
	if res == nil {
		return runErr
	}
	x.load.res, x.load.runErr = res, runErr
	if n := res.Observed.CutAtTail; n > 0 {
		x.out.logger().Warn(fmt.Sprintf("load: %d operation(s) still unfinished %s after the load's end (one send's deadline and backoff) were cut: those on the wire are UNKNOWN, those not yet sent DROPPED", n, res.Config.Tail()))
	}
	if runErr != nil {
		x.load.interrupted = runErr.Error()
		if cause := context.Cause(ctx); cause != nil {
			x.load.interrupted = cause.Error() // names the signal
		}
	}
	return nil
}

// heal stops the timeline and heals every fault, once, on a fresh context
// of HealBudget (the load's may be cancelled; a signal does not cut it).
func (x *execution) heal() {
	if x.fault.healed || x.fault.tl == nil {
		return
	}
	x.fault.healed = true
	if x.fault.stopTimeline != nil {
		x.fault.stopTimeline()
	}
	hctx, cancel := context.WithTimeout(context.Background(), HealBudget)
	defer cancel()
	x.fault.healErr = x.fault.tl.HealAll(hctx)
}

// drain lets the pipeline bring its reservations to an end (unless the run
// was interrupted) and collects its evidence; the reconciliation runs on
// after, the context of the steps from heal on.
func (x *execution) drain(ctx context.Context, after *afterLoad) {
	if x.pipe.pl == nil {
		return
	}
	if d := x.plan.Drain; d > 0 && ctx.Err() == nil {
		x.out.logger().Info(fmt.Sprintf("pipeline: draining for up to %s", d))
		// A drain that times out is a finding (P2 lists the stuck), not a harness error.
		if err := x.pipe.pl.Drain(ctx, d); err != nil && !errors.Is(err, pipeline.ErrDrainTimeout) {
			x.out.logger().Warn(fmt.Sprintf("pipeline: drain: %v", err))
		}
	}
	// The load's ACCEPTED answers: reconciliation names a reservation Redis
	// lost before any order from them alone.
	x.pipe.pl.Acknowledged(checks.AcceptedReservations(x.load.res.History))
	rctx, cancel := context.WithTimeout(after.begin(), time.Minute)
	if _, err := x.pipe.pl.Reconcile(rctx); err != nil {
		x.out.logger().Warn(fmt.Sprintf("pipeline: reconciliation: %v", err))
	}
	cancel()
	x.pipe.pl.Stop()
	x.pipe.ev = x.pipe.pl.Evidence()
}

// check reads the final state back and judges the invariants (and the
// pipeline's checks when it ran). When the state cannot be read (a cluster
// still failing over after Ctrl-C, say), the checks are empty and judged.err
// says why: the partial report is still written.
func (x *execution) check(ctx context.Context) {
	x.judged.evicted = x.evictions(ctx)
	if err := x.judge(ctx); err != nil {
		x.judged.err = err
		// The servers' own counters still judge (an evicted stock hash is
		// a reason the state cannot be read).
		x.judged.chk = &checks.CheckReport{Checks: checks.JudgeServerSide(&checks.Facts{Evictions: x.judged.evicted})}
	}
}

func (x *execution) judge(ctx context.Context) error {
	history := x.load.res.History
	if x.pipe.ev != nil {
		history = checks.WithPipelineReleases(x.load.res.History, x.pipe.ev, x.load.res.Began)
	}
	// One read of the state: the invariants and, with a pipeline, its
	// checks down to the order database.
	chk, err := checks.Judge(ctx, x.sut.sale, x.sut.sys, checks.CheckInput{History: history, Samples: x.load.res.Samples,
		FaultsInjected: len(x.plan.Faults) > 0, LocalSoldOutTTL: x.plan.LocalSoldOut.TTL, Generator: x.plan.Generator,
		Pipeline: x.pipe.ev, Orders: x.pipe.orders, Evictions: x.judged.evicted, ExpiryAllowances: expiryAllowances(x.fault.tl), Preflight: x.sut.pre,
		Service:    x.service.conns.result(),
		Masterless: masterless(x.plan.Faults, x.plan.FaultNames, x.act, x.load.res.Elapsed)})
	if err != nil {
		return fmt.Errorf("reading the final state back: %w", err)
	}
	x.judged.chk = chk
	return nil
}

// evictions reads every node's evicted_keys once more, now that the run
// settled, and returns each node's evictions since the servers sampler's
// first round, before the load (K2's facts); nil without a sampler.
func (x *execution) evictions(ctx context.Context) *checks.EvictionFacts {
	if x.obs.servers == nil {
		return nil
	}
	nodes, unread := x.obs.servers.Evictions(ctx)
	ef := &checks.EvictionFacts{Unread: unread}
	for _, n := range nodes {
		ef.Nodes = append(ef.Nodes, checks.NodeEvictions{Node: n.Addr, Role: n.Role, Evicted: n.Evicted, Restarted: n.Restarted})
	}
	return ef
}

// assemble builds the report: meta, faults and phases, assertions,
// waivers and the verdict.
func (x *execution) assemble(ctx context.Context) *Result {
	p, res := x.plan, x.load.res
	faulted := len(p.Faults) > 0
	meta := runner.ReportMeta{Scenario: p.Name, Versions: Versions(ctx, x.stand.Client, x.scripts),
		Topology: x.stand.Topology(ctx), HGRMFile: "latency.hgrm", Wait: p.Wait}
	var faultPhases []reports.PhaseSpan
	meta.Faults, faultPhases = faultReports(p.Faults, p.FaultNames, res, x.judged.chk, x.act)
	meta.Phases = append(loadPhaseSpans(res), faultPhases...)
	meta.Assertions = append(meta.Assertions, healthAssertions(x.fault.healErr, x.settled.healthErr, faulted)...)
	if x.out.History != "" {
		meta.HistoryFile = x.out.History
	}
	rep, rec := runner.BuildReport(res, meta)
	x.judged.chk.Fill(rep, res.History, meta.Wait)
	rep.ResolvedScenario = p.Resolved
	if x.pipe.ev != nil {
		rep.Pipeline = x.pipe.ev.Summary()
		if db, ok := rep.Pipeline["order_db"].(map[string]any); ok && x.pipe.orderServer != "" {
			db["server"] = x.pipe.orderServer
		}
	}
	rep.Path = "reference"
	if p.PathName != "" {
		rep.Path = p.PathName
	}
	rep.SystemUnderTest = systemUnderTest(p, x.scripts)
	if svc, ok := sut.Ability[sut.Service](x.sut.sys); ok {
		rep.Service = svc.ServiceSection()
	}
	if x.sut.pre.Refused() && rep.SystemUnderTest != nil {
		sys := *rep.SystemUnderTest // the plan's is shared by its re-runs
		rep.SystemUnderTest = &sys
		sys.Notes = append(slices.Clone(sys.Notes), fmt.Sprintf("refused before the load: the pre-flight found %d place(s) not cluster-safe (check A1); no load ran", len(x.sut.pre.Findings)))
	} else if x.sut.pre != nil && len(x.sut.pre.Findings) > 0 && rep.SystemUnderTest != nil {
		sys := *rep.SystemUnderTest
		rep.SystemUnderTest = &sys
		sys.Notes = append(slices.Clone(sys.Notes), fmt.Sprintf("not cluster-safe: the pre-flight found %d place(s) (check A1 fails), but Redis ran every sample call, so the load ran and the other checks judge it", len(x.sut.pre.Findings)))
	}
	for i := range rep.Invariants {
		if _, expected := p.Judging.ExpectFail[strings.ToUpper(rep.Invariants[i].ID)]; expected {
			continue // judged by its expectation, not waived
		}
		if p.Judging.Waived != nil && p.Judging.Waived(rep.Invariants[i].ID) && !checks.Unwaivable(rep.Invariants[i].ID) {
			rep.Invariants[i].Waived = true
		}
	}
	rep.Invariants = waiveConsequences(rep.Invariants)
	rep.Assertions = append(rep.Assertions, expectFailures(rep, p.Judging.ExpectFail)...)
	if x.load.interrupted != "" {
		rep.Interrupted = &reports.Interruption{Reason: x.load.interrupted, AtS: res.Elapsed.Seconds()}
	}
	rep.ErrorTexts = res.ErrorTexts
	rep.ReplicationLag = replicationReport(x.load.lag)
	rep.WarmUp = x.warm
	rep.Pool = x.load.poolReport
	if x.sut.flag != nil {
		rep.LocalSoldOut = checks.AnalyzeLocalSoldOut(res.History.All(), int(x.act.Buckets), x.sut.flag.TTL())
		x.sut.flag.Fill(rep.LocalSoldOut)
	}
	rep.Servers = x.serversSection(ctx)
	rep.Host = x.obs.host.Section(res.Began, res.Elapsed, lateStarts(res))
	x.scriptKills(rep)
	notInjected, actedDespite := injections(p.Faults)
	if x.judged.err != nil {
		rep.Assertions = append(rep.Assertions, assertion("final state read back from Redis", false, 0, nil, x.judged.err.Error()))
	}
	// A load refused by the pre-flight has no figures to hold to bounds:
	// A1's failure is the verdict.
	if !x.sut.pre.Refused() {
		rep.Assertions = append(rep.Assertions, judgeEvidence(collectFacts(res, rep, notInjected, actedDespite, len(p.Faults), x.load.interrupted), p.Judging.Bounds)...)
	}
	if p.Judging.Evaluate != nil && !x.sut.pre.Refused() {
		rep.Assertions = append(rep.Assertions, p.Judging.Evaluate(rep)...)
	}
	x.judgeBaseline(ctx, rep)
	x.aimFaults(rep, res.Began)
	judgeInconclusive(rep)
	judgeMissed(rep)
	x.events(rep)
	rep.Passed = len(rep.FailedChecks()) == 0 && len(rep.InconclusiveChecks()) == 0 && rep.Interrupted == nil
	oc := &Result{Report: rep, Result: res, Checks: x.judged.chk, Activity: x.act, RunErr: x.load.runErr,
		HealErr: x.fault.healErr, HealthErr: x.settled.healthErr, NotInjected: notInjected, Pipeline: x.pipe.ev, recorder: rec}
	return oc
}

// scriptKills reports the SCRIPT KILLs the watchdog sent, and fails the
// run when it sent any or a node stayed busy.
func (x *execution) scriptKills(rep *reports.Report) {
	for _, k := range x.sut.watchdog.Kills() {
		rep.ScriptKills = append(rep.ScriptKills, reports.ScriptKill{Node: k.Node, At: k.At, Reason: k.Reason})
	}
	if len(rep.ScriptKills) > 0 || x.settled.busyErr != nil {
		var nodes []string
		for _, k := range rep.ScriptKills {
			if !slices.Contains(nodes, k.Node) {
				nodes = append(nodes, k.Node)
			}
		}
		detail := fmt.Sprintf("%d SCRIPT KILL(s) sent", len(rep.ScriptKills))
		if len(nodes) > 0 {
			detail = fmt.Sprintf("a script ran past its limit of %s and was killed (%d SCRIPT KILL(s) on %s)", x.sut.watchdog.Limit(), len(rep.ScriptKills), strings.Join(nodes, ", "))
		}
		if x.settled.busyErr != nil {
			detail += "; " + x.settled.busyErr.Error()
		}
		rep.Assertions = append(rep.Assertions, assertion("no script of the path under test ran past its limit", false, float64(len(rep.ScriptKills)), ptr(0), detail))
	}
}

// injections sorts the planned faults by faults.Planned.Effect: those
// that never took effect, with why ("spec: why"), and those that took
// effect though their Inject failed, with the fault's outcome.
func injections(planned []*faults.Planned) (notInjected, actedDespite []string) {
	for _, f := range planned {
		e := f.Effect()
		if e.Took && e.Detail == "" {
			continue
		}
		name := f.Spec
		if name == "" {
			name = f.Kind
		}
		if e.Took {
			actedDespite = append(actedDespite, fmt.Sprintf("%s: %s", name, e.Detail))
		} else {
			notInjected = append(notInjected, fmt.Sprintf("%s: %s", name, e.Detail))
		}
	}
	return notInjected, actedDespite
}

// write writes the report artifacts (when the output has a directory),
// the generator's sidecar, and the text summary.
func (x *execution) write(ctx context.Context, oc *Result) error {
	log := x.out.log()
	if x.out.Dir == "" {
		return nil
	}
	if err := writeOutputs(x.out, oc.Report, oc.recorder, oc.Result, oc.Checks); err != nil {
		return err
	}
	if x.gi != nil {
		x.gi.History, x.gi.Cluster = x.out.History, x.stand.Cluster.Provider()
		if ext, ok := x.stand.Cluster.(*compose.ExternalCluster); ok {
			x.gi.Cluster = ext.Redacted()
		}
		if err := writeGenInfo(x.out.Dir, x.gi); err != nil {
			return err
		}
		// Done only once everything verify reads is on disk.
		if err := markDone(ctx, x.stand.Client, x.act, x.gi); err != nil {
			return fmt.Errorf("activity %s: mark generator %s done: %w", x.act.ID, x.plan.Generator, err)
		}
	}
	if err := reports.WriteText(log, oc.Report); err != nil {
		return err
	}
	x.appendRecord(ctx, oc.Report)
	fmt.Fprintf(log, "report: %s\n", filepath.Join(x.out.Dir, "report.json"))
	if x.plan.Generator.Split() {
		fmt.Fprintf(log, "generator %s of activity %s: I2 and I9 are judged on the merge: seckill-harness verify --cluster … --out DIR <every generator's --out>\n", x.plan.Generator, x.act.ID)
	}
	return nil
}

// loadPhaseSpans names the load phases as report phases (only when there
// are several: one phase is the whole run).
func loadPhaseSpans(res *runner.Result) []reports.PhaseSpan {
	if len(res.Phases) < 2 {
		return nil
	}
	var out []reports.PhaseSpan
	for _, p := range res.Phases {
		out = append(out, reports.PhaseSpan{Name: p.Name, Start: p.Start, End: p.End})
	}
	return out
}

// writeOutputs writes the run's whole artifact set (report.json,
// latency.*, summary.md, report.html, junit.xml and, with a history path,
// the history) into o.Dir, atomically, removing files of an earlier run
// there.
func writeOutputs(o Output, rep *reports.Report, rec *reports.Recorder, res *runner.Result, chk *checks.CheckReport) error {
	in := &reports.Inputs{Report: rep, Hists: rec.Histograms()}
	if o.History != "" {
		in.History, in.HistoryPath = res.History.WriteJSONL, o.History
	}
	if chk != nil && chk.Drawing != nil {
		windows := linWindows(rep.Faults, res.Elapsed)
		in.Linearizability = func(w io.Writer) error { return chk.Drawing.Render(w, windows) }
	}
	return reports.WriteArtifacts(o.Dir, in)
}

// linWindows are the run's fault windows as the linearizability drawing
// marks them: from injection to heal (to the run's end when it never
// healed).
func linWindows(faults []reports.Fault, elapsed time.Duration) []checks.LinWindow {
	var out []checks.LinWindow
	for _, f := range faults {
		if _, injected := f.Evidence["note"]; injected {
			continue // never injected
		}
		name := f.Name
		if name == "" {
			name = f.Kind
		}
		w := checks.LinWindow{Name: name, From: time.Duration(f.InjectedAtS * float64(time.Second)), To: elapsed}
		if f.Healed {
			w.To = time.Duration(f.HealedAtS * float64(time.Second))
		}
		out = append(out, w)
	}
	return out
}

// replicationReport turns the lag samples into report.json's replication_lag.
func replicationReport(samples []compose.ReplicationSample) []reports.ReplicationSample {
	var out []reports.ReplicationSample
	for _, s := range samples {
		r := reports.ReplicationSample{TS: s.TS}
		for _, l := range s.Replicas {
			r.Replicas = append(r.Replicas, reports.ReplicaLag{Replica: l.Replica, Master: l.Master, LinkStatus: l.LinkStatus,
				MasterOffset: l.MasterOffset, ReplicaOffset: l.ReplicaOffset, LagBytes: l.LagBytes})
		}
		out = append(out, r)
	}
	return out
}
