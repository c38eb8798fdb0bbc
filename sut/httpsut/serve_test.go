package httpsut

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/serve"
)

// One real cluster (3 masters, no replicas) with a toxiproxy in front of
// every node: the reference service (sut/serve) reaches it through the
// proxies, the harness reads its state directly (state: reference).
var (
	testCluster *compose.LocalCluster
	testProxies *compose.Proxies
	testRDB     *redis.ClusterClient
	actSeq      atomic.Int64
)

const testSecret = "httpsut-serve-test"

func TestMain(m *testing.M) {
	if addrs := os.Getenv(benchServeEnv); addrs != "" {
		os.Exit(benchServe(addrs)) // the benchmark's service, nothing else
	}
	cfg := clustertest.Config{Package: "httpsut", Proxies: true,
		Options: compose.Options{Masters: 3, ReplicasPerMaster: -1, NodeTimeout: 10 * time.Second}}
	os.Exit(clustertest.Main(m, cfg, func(f *clustertest.Fixture) (func(), error) {
		testCluster, testProxies = f.Cluster, f.Proxies
		testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), ContextTimeoutEnabled: true})
		return func() { _ = testRDB.Close() }, nil
	}))
}

// startServe runs the reference service with defects over real HTTP until
// the test ends and returns its URL.
func startServe(t *testing.T, defects ...serve.Defect) string {
	t.Helper()
	cfg := serve.Config{Listen: "127.0.0.1:0", RedisAddrs: testCluster.Addrs(), Secret: []byte(testSecret), Dialer: testProxies.Dialer(),
		SoldOutTTL: -1, Timeout: 800 * time.Millisecond, RedisTimeout: 200 * time.Millisecond, BreakerHold: 300 * time.Millisecond,
		Defects: serve.DefectSet{}}
	for _, d := range defects {
		cfg.Defects[d] = true
	}
	s, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- serve.Run(ctx, s, func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		t.Cleanup(func() { cancel(); <-done })
		return "http://" + a
	case err := <-done:
		cancel()
		t.Fatalf("service did not start: %v", err)
	}
	return ""
}

// underTest is the service at url as the harness's system (state:
// reference) with a fresh activity of stock in buckets, set up through it.
func underTest(t *testing.T, url string, stock int64, buckets uint32) (*System, sut.Sale) {
	t.Helper()
	st := lua.NewStore(testRDB, lua.Embedded(), []byte(testSecret))
	s, err := New(url, mappingWith(t, "state: reference\ntimeout: 2s\n"), 8, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	a := lua.NewActivity(fmt.Sprintf("hsut%d-%d", time.Now().UnixMilli()%1_000_000, actSeq.Add(1)), "sku1", stock, buckets, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Setup(ctx, a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.Teardown(context.Background(), a) })
	return s, sut.Sale{Activity: a, IDs: st}
}

func judge(t *testing.T, sale sut.Sale, sys *System, h *history.History, masterless []checks.MasterlessWindow) map[string]checks.Check {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := checks.Judge(ctx, sale, sys, checks.CheckInput{History: h, Masterless: masterless})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]checks.Check{}
	for _, c := range rep.Checks {
		out[c.ID] = c
	}
	return out
}

// The reference service under an open-loop load through the engine
// (replays, same-user and foreign requests, releases) passes every check,
// the state checks read on the harness's cluster and the service checks
// judged (its cached request ids all sent by the harness).
func TestReferenceServicePassesUnderLoad(t *testing.T) {
	clustertest.Need(t)
	sys, sale := underTest(t, startServe(t), 40, 2)
	cfg := runner.DefaultConfig()
	cfg.Shape, cfg.Duration, cfg.Users, cfg.Concurrency = runner.Shape{Kind: "constant", Rate: 200}, 2*time.Second, 120, 8
	cfg.Mix = runner.Mix{Replay: 0.05, SameUser: 0.05, ForeignRequest: 0.05, Release: 0.05}
	cfg.CallTimeout = 4 * time.Second
	res, err := runner.Run(context.Background(), cfg, sale, sys)
	if err != nil {
		t.Fatal(err)
	}
	got := judge(t, sale, sys, res.History, nil)
	for id, c := range got {
		if c.Status == checks.StatusFail {
			t.Errorf("%s %s failed on the reference service: %s", id, c.Name, c.Detail)
		}
	}
	for _, id := range []string{"I1", "I3", "I4", "S2", "S3"} {
		if got[id].Status != checks.StatusPass {
			t.Errorf("%s: %s %s; want judged and passed", id, got[id].Status, got[id].Detail)
		}
	}
	if n, _ := got["S2"].Evidence["cached_request_ids"].(int); n == 0 {
		t.Errorf("S2 compared no cached request id: %v", got["S2"].Evidence)
	}
	if sec := sys.ServiceSection(); sec.Vegeta.Requests == 0 || sec.Answers["ACCEPTED"] == 0 || sec.Vegeta.StatusCodes["200"] == 0 {
		t.Errorf("service section %+v: want vegeta's requests and the answers", sec)
	}
}

// masterOf is the address of the master owning bucket b's slot.
func masterOf(t *testing.T, a *lua.Activity, b uint32) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := testCluster.MasterOfSlot(ctx, compose.KeySlot(a.Scope(b).MetaKey()))
	if err != nil {
		t.Fatal(err)
	}
	return n.Addr
}

// unreachable sends n fresh reserves through the engine's stepper while
// bucket 0's master is cut off from the service (its proxy disabled), and
// returns the history and that window (from the first send to the last
// answer: the master was out of reach throughout).
func unreachable(t *testing.T, sys *System, sale sut.Sale, n int) (*history.History, []checks.MasterlessWindow) {
	t.Helper()
	cfg := runner.DefaultConfig()
	cfg.CallTimeout, cfg.RetrySends = 4*time.Second, 0
	step := runner.NewStepper(cfg, sale, sys)
	ctx := context.Background()
	warm := step.Do(ctx, history.Op{Kind: history.KindFresh, User: 1000, Req: 1000})
	node := masterOf(t, sale.Activity, 0)
	if err := testProxies.Disable(node); err != nil {
		t.Fatal(err)
	}
	var ops []history.Op
	for u := uint32(0); len(ops) < n && u < 1000; u++ {
		if sale.Activity.BucketOf(history.UserID(u)) != 0 {
			continue
		}
		ops = append(ops, step.Do(ctx, history.Op{Kind: history.KindFresh, User: u, Req: u}))
	}
	if err := testProxies.Enable(node); err != nil {
		t.Fatal(err)
	}
	w := checks.MasterlessWindow{Fault: "proxy disabled", From: ops[0].Start, To: ops[len(ops)-1].End, Buckets: []uint32{0}}
	return &history.History{Ops: append([]history.Op{warm}, ops...)}, []checks.MasterlessWindow{w}
}

// While bucket 0's master is out of reach the reference service fails
// closed (SYSTEM_BUSY, retryable, the original request_id): S1 passes;
// the fail-open defect answers ACCEPTED from a local counter: S1 fails.
func TestFailClosedCatchesFailOpen(t *testing.T) {
	clustertest.Need(t)
	sys, sale := underTest(t, startServe(t), 10, 1)
	h, w := unreachable(t, sys, sale, 4)
	if c := judge(t, sale, sys, h, w)["S1"]; c.Status != checks.StatusPass || c.Evidence["busy"] == int64(0) {
		t.Errorf("S1 on the reference service: %s %s %v; want pass with SYSTEM_BUSY answers", c.Status, c.Detail, c.Evidence)
	}
	sys, sale = underTest(t, startServe(t, serve.DefectFailOpen), 10, 1)
	h, w = unreachable(t, sys, sale, 4)
	if c := judge(t, sale, sys, h, w)["S1"]; c.Status != checks.StatusFail || c.Evidence["accepted_without_master"] == 0 {
		t.Errorf("S1 on the fail-open defect: %s %s %v; want fail: ACCEPTED without a master", c.Status, c.Detail, c.Evidence)
	}
}

// slowReserves sends n fresh reserves through the engine's stepper while
// bucket 0's master answers late (a latency toxic beyond the service's
// Redis timeout): the service times out inside and re-sends.
func slowReserves(t *testing.T, sys *System, sale sut.Sale, n int) *history.History {
	t.Helper()
	cfg := runner.DefaultConfig()
	cfg.CallTimeout = 4 * time.Second
	step := runner.NewStepper(cfg, sale, sys)
	ctx := context.Background()
	h := &history.History{}
	// Warm the service's pool with four reserves at once, so that a
	// re-send is written on an idle connection rather than wait for a
	// handshake through the latency.
	warm := make(chan history.Op, 4)
	for i := uint32(0); i < 4; i++ {
		go func() { warm <- step.Do(ctx, history.Op{Kind: history.KindFresh, User: 2000 + i, Req: 2000 + i}) }()
	}
	for i := 0; i < 4; i++ {
		h.Ops = append(h.Ops, <-warm)
	}
	node := masterOf(t, sale.Activity, 0)
	if err := testProxies.AddToxic(node, compose.Toxic{Name: "slow", Type: "latency", Stream: "downstream",
		Attributes: map[string]any{"latency": 500}}); err != nil {
		t.Fatal(err)
	}
	for u := uint32(0); u < uint32(n); u++ {
		h.Ops = append(h.Ops, step.Do(ctx, history.Op{Kind: history.KindFresh, User: u, Req: u}))
	}
	if err := testProxies.Replace(node); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the late scripts have run
	return h
}

// The new-request-id-on-timeout defect re-sends a timed-out call under a
// request id no client sent: S2 finds it in the answers and in Redis's
// request cache; the reference service, under the same latency, passes.
func TestNoNewRequestIDCatchesTheDefect(t *testing.T) {
	clustertest.Need(t)
	sys, sale := underTest(t, startServe(t), 10, 1)
	if c := judge(t, sale, sys, slowReserves(t, sys, sale, 2), nil)["S2"]; c.Status != checks.StatusPass {
		t.Errorf("S2 on the reference service: %s %s", c.Status, c.Detail)
	}
	sys, sale = underTest(t, startServe(t, serve.DefectNewRequestIDOnTimeout), 10, 1)
	c := judge(t, sale, sys, slowReserves(t, sys, sale, 2), nil)["S2"]
	if c.Status != checks.StatusFail {
		t.Fatalf("S2 on new-request-id-on-timeout: %s %s; want fail", c.Status, c.Detail)
	}
	t.Logf("S2 on new-request-id-on-timeout: %s", c.Detail)
	// retry-without-ids also leaves a result cached under the new id.
	sys, sale = underTest(t, startServe(t, serve.DefectRetryWithoutIDs), 10, 1)
	c = judge(t, sale, sys, slowReserves(t, sys, sale, 2), nil)["S2"]
	if ids, _ := c.Evidence["never_sent"].([]string); c.Status != checks.StatusFail || len(ids) == 0 {
		t.Fatalf("S2 on retry-without-ids: %s %s %v; want fail naming the request ids cached in Redis", c.Status, c.Detail, c.Evidence)
	}
	t.Logf("S2 on retry-without-ids: %s", c.Detail)
}

// The timeout-is-failure defect answers a Redis timeout FAILED (not
// retryable) and compensates the reservation the late script made: S4
// finds the reservation behind the FAILED answer. The reference service,
// under the same latency, answers OUTCOME_UNKNOWN (or the outcome, once
// the query resolves it) and passes S4, judged (not vacuous).
func TestTimeoutIsUnknownCatchesTimeoutIsFailure(t *testing.T) {
	clustertest.Need(t)
	sys, sale := underTest(t, startServe(t), 10, 1)
	c := judge(t, sale, sys, slowReserves(t, sys, sale, 2), nil)["S4"]
	if c.Status != checks.StatusPass || c.Evidence["unknown_answers"] == int64(0) {
		t.Errorf("S4 on the reference service: %s %s %v; want pass with OUTCOME_UNKNOWN answers", c.Status, c.Detail, c.Evidence)
	}
	sys, sale = underTest(t, startServe(t, serve.DefectTimeoutIsFailure), 10, 1)
	c = judge(t, sale, sys, slowReserves(t, sys, sale, 2), nil)["S4"]
	if n, _ := c.Evidence["failed_but_reserved"].(int64); c.Status != checks.StatusFail || n == 0 {
		t.Fatalf("S4 on timeout-is-failure: %s %s %v; want fail naming the reservation behind a FAILED answer", c.Status, c.Detail, c.Evidence)
	}
	t.Logf("S4 on timeout-is-failure: %s", c.Detail)
}
