package pipeline_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/internal/activitytest"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
)

// One real 3×1 cluster of local redis-server processes and one throwaway
// local PostgreSQL serve the package; every run gets its own order schema.
var (
	testPG    *compose.PostgresDB
	testRDB   *redis.ClusterClient
	testStore *lua.Store
	secret    = []byte("pipeline-test")
)

var _ faults.PipelineControl = (*pipeline.Pipeline)(nil)

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, clustertest.Config{Package: "pipeline"}, func(f *clustertest.Fixture) (func(), error) {
		ctx, cancel := context.WithTimeout(context.Background(), clustertest.StartTimeout)
		defer cancel()
		pg, err := compose.StartPostgresDB(ctx, compose.PostgresOptions{}, compose.PostgresDBOptions{MaxConns: 64})
		if err != nil {
			return nil, fmt.Errorf("need PostgreSQL (apt-get install -y postgresql, or make deps): %w", err)
		}
		testPG = pg
		testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), PoolSize: 128, ContextTimeoutEnabled: true})
		testStore = lua.NewStore(testRDB, lua.Embedded(), secret)
		return func() { _ = testRDB.Close(); pg.Close() }, nil
	}))
}

// variant returns the embedded scripts with one edit of one script (a
// user's broken script): old must occur exactly once.
func variant(t *testing.T, file, old, new string) *lua.Scripts {
	t.Helper()
	s := *lua.Embedded()
	src := map[string]*lua.Script{lua.TransitionFile: s.Transition, lua.CompensateFile: s.Compensate}[file]
	if n := strings.Count(src.Source, old); n != 1 {
		t.Fatalf("%s: %q occurs %d times, want 1 (the script changed: update the test's edit)", file, old, n)
	}
	body := strings.Replace(src.Source, old, new, 1)
	sum := sha1.Sum([]byte(body))
	edited := &lua.Script{Name: file, Source: body, SHA1: hex.EncodeToString(sum[:])}
	switch file {
	case lua.TransitionFile:
		s.Transition = edited
	default:
		s.Compensate = edited
	}
	s.Origin = "test variant of " + file
	return &s
}

// reserveVariant returns the embedded scripts with edits (old -> new, each
// occurring exactly once) of reserve.lua: a team's broken reserve script.
func reserveVariant(t *testing.T, edits ...[2]string) *lua.Scripts {
	t.Helper()
	s := *lua.Embedded()
	body := s.Reserve.Source
	for _, e := range edits {
		if n := strings.Count(body, e[0]); n != 1 {
			t.Fatalf("reserve.lua: %q occurs %d times, want 1 (the script changed: update the test's edit)", e[0], n)
		}
		body = strings.Replace(body, e[0], e[1], 1)
	}
	sum := sha1.Sum([]byte(body))
	s.Reserve = &lua.Script{Name: lua.ReserveFile, Source: body, SHA1: hex.EncodeToString(sum[:])}
	s.Origin = "test variant of " + lua.ReserveFile
	return &s
}

// spec is one run: a load through the reference path plus the pipeline.
type spec struct {
	stock   int64
	buckets uint32
	load    runner.Config
	pipe    pipeline.Config
	scripts *lua.Scripts // the pipeline's scripts (nil: embedded)
	pstore  *lua.Store   // the pipeline's store (nil: testRDB with scripts), e.g. on a client whose link is cut
	reserve *lua.Scripts // the load's scripts (nil: embedded), e.g. a broken reserve.lua
	faults  []string
	// before runs after the pipeline started, before the load.
	before func(p *pipeline.Pipeline)
	drain  time.Duration // 0: no drain phase
}

type outcome struct {
	sale     sut.Sale
	sys      sut.System
	res      *runner.Result
	ev       *pipeline.Evidence
	drainErr error
	facts    *checks.EndToEndFacts
	orders   *pipeline.Orders
	checks   map[string]checks.Check
	rep      *checks.CheckReport
	planned  []*faults.Planned
}

func loadConfig(rate float64, d time.Duration) runner.Config {
	cfg := runner.DefaultConfig()
	cfg.Shape = runner.Shape{Kind: "constant", Rate: rate}
	cfg.Duration = d
	cfg.Mix = runner.Mix{Replay: 0.05, SameUser: 0.03, ForeignRequest: 0.02}
	cfg.SampleEvery = 500 * time.Millisecond
	return cfg
}

func run(t *testing.T, sp spec) *outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	a := activitytest.New(t, testRDB, "pl", sp.stock, sp.buckets)
	pstore := testStore
	if sp.scripts != nil {
		pstore = lua.NewStore(testRDB, sp.scripts, secret)
	}
	if sp.pstore != nil {
		pstore = sp.pstore
	}
	orders, err := pipeline.OpenOrders(ctx, testPG.Pool(), pipeline.OrdersOptions{NewSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orders.Close() })
	sp.pipe.Orders = orders
	lstore := testStore
	if sp.reserve != nil {
		lstore = lua.NewStore(testRDB, sp.reserve, secret)
	}
	p := pipeline.New(sp.pipe, pstore, a)
	env := &faults.Env{Pipeline: p, Logf: t.Logf}
	var items []*faults.Planned
	for _, s := range sp.faults {
		pl, err := faults.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, pl)
	}
	tl := &faults.Timeline{Env: env, Items: items}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if sp.before != nil {
		sp.before(p)
	}
	lctx, lcancel := context.WithCancel(ctx)
	opts := []runner.Option{runner.WithOnStart(func(b time.Time) { tl.Start(lctx, b) })}
	if p.ServiceSends() {
		opts = append(opts, runner.WithAccepted(p.ServiceSend))
	}
	sale, sys := sut.Sale{Activity: a, IDs: lstore}, sut.NewReference(lstore)
	res, err := runner.Run(lctx, sp.load, sale, sys, opts...)
	lcancel()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := tl.HealAll(ctx); err != nil {
		t.Fatal(err)
	}
	out := &outcome{sale: sale, sys: sys, res: res, planned: items, checks: map[string]checks.Check{}}
	if sp.drain > 0 {
		out.drainErr = p.Drain(ctx, sp.drain)
	}
	if _, err := p.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	out.ev = p.Evidence()
	out.orders = orders
	// One read of the state, as a run does: the core, pipeline and
	// end-to-end checks from one CollectFacts.
	f, err := checks.CollectFacts(ctx, sale, sys, checks.CheckInput{History: checks.WithPipelineReleases(res.History, out.ev, res.Began),
		Samples: res.Samples, Pipeline: out.ev, Orders: orders})
	if err != nil {
		t.Fatal(err)
	}
	out.facts, out.rep = f.EndToEnd, checks.JudgeFacts(f)
	for _, c := range out.rep.Checks {
		out.checks[c.ID] = c
	}
	return out
}

func (o *outcome) log(t *testing.T) {
	t.Helper()
	for _, c := range o.rep.Checks {
		t.Logf("%-3s %-4s %-26s %s", c.ID, c.Status, c.Name, c.Detail)
	}
	s := o.ev.Stats
	t.Logf("pipeline: sends=%d resends=%d acked=%d unknown=%d errors=%d timeouts_stored=%d lost=%d abandoned=%d | deliveries=%d duplicates=%d redeliveries=%d skipped=%d | orders=%d rejected=%d refused=%d | releases=%d (rejected %d, expired %d) expiries_checked=%d held_by_order=%d held_by_mq=%d | illegal=%d redis_errors=%d | dispatcher stops=%d starts=%d | stuck=%d drain=%dms",
		s.Send.Sends, s.Send.Resends, s.Send.Acked, s.Send.UnknownSends, s.Send.SendErrors, s.Send.TimeoutsStored, s.Send.LostByMQ, s.Send.AbandonedAtCrash,
		s.Delivery.Deliveries, s.Delivery.DuplicateDeliveries, s.Delivery.Redeliveries, s.Order.DuplicatesSkipped, s.Order.Orders, s.Order.Rejected, s.Order.Refused,
		s.Release.Releases, s.Release.ReleasesRejected, s.Release.ReleasesExpired, s.Expiry.ExpiriesChecked, s.Expiry.ExpiryHeldByOrder, s.Expiry.ExpiryHeldByMQ,
		s.Script.IllegalAnswers, s.Script.RedisErrors, s.Send.DispatcherStops, s.Send.DispatcherStarts, s.Drain.Stuck, s.Drain.DrainMs)
	th := o.ev.Throughput
	t.Logf("postgres %s: %d order transactions, p50 %.2fms p99 %.2fms max %.2fms; stock-row UPDATE p99 %.2fms; %d orders at %.0f orders/s; no_stock=%d user_already_ordered=%d tx_errors=%d (last %q)",
		o.ev.OrderDB, th.Transactions, th.TxP50Ms, th.TxP99Ms, th.TxMaxMs, th.StockRowP99Ms, th.OrdersCreated, th.OrdersPerSec,
		s.Order.NoStock, s.Order.UserAlreadyOrdered, s.Order.OrderTxErrors, o.ev.LastOrderError)
	if r := o.ev.Reconciliation; r.Final != nil {
		t.Logf("reconciliation: %d passes, during load %v; final: %d compared, counts %v, stock %v, repaired %d",
			r.Passes, r.DuringLoad, r.Final.Reservations, r.Final.Counts, r.Final.Stock, r.Final.Repaired)
	}
}

// expectFail asserts that check id failed and logs its evidence.
func (o *outcome) expectFail(t *testing.T, id string) {
	t.Helper()
	c, ok := o.checks[id]
	if !ok {
		t.Fatalf("no check %s", id)
	}
	if c.Status != checks.StatusFail {
		o.log(t)
		t.Fatalf("%s did not catch the broken implementation: %s %s", id, c.Status, c.Detail)
	}
	t.Logf("%s caught it: %s; violations: %v", id, c.Detail, c.Evidence["violations"])
}

func (o *outcome) expectPass(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if c := o.checks[id]; c.Status == checks.StatusFail {
			o.log(t)
			t.Fatalf("%s failed: %s (evidence %v)", id, c.Detail, c.Evidence)
		}
	}
}
