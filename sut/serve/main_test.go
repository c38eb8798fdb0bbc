package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/activitytest"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// One real cluster (3 masters, no replicas: a paused master is never
// failed over; node timeout 10s) with a toxiproxy in front of every node
// serves the package's tests. The services under test reach it through
// the proxies; the tests set up and read state directly.
var (
	testCluster *compose.LocalCluster
	testProxies *compose.Proxies
	testRDB     *redis.ClusterClient
	testStore   *lua.Store
)

const testSecret = "serve-test-secret"

func TestMain(m *testing.M) {
	cfg := clustertest.Config{Package: "serve", Proxies: true,
		Options: compose.Options{Masters: 3, ReplicasPerMaster: -1, NodeTimeout: 10 * time.Second}}
	os.Exit(clustertest.Main(m, cfg, func(f *clustertest.Fixture) (func(), error) {
		testCluster, testProxies = f.Cluster, f.Proxies
		testRDB = lua.NewClusterClient(&redis.ClusterOptions{Addrs: f.Cluster.Addrs(), ContextTimeoutEnabled: true})
		testStore = lua.NewStore(testRDB, lua.Embedded(), []byte(testSecret))
		return func() { _ = testRDB.Close() }, nil
	}))
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newActivity sets up a fresh activity (sku1, version 1) and tears it down after the test.
func newActivity(t *testing.T, stock int64, buckets uint32) *lua.Activity {
	t.Helper()
	return activitytest.New(t, testRDB, "srv", stock, buckets)
}

// masterOf is the address of the master that owns bucket b's slot.
func masterOf(t *testing.T, a *lua.Activity, b uint32) string {
	t.Helper()
	n, err := testCluster.MasterOfSlot(ctxT(t, 5*time.Second), compose.KeySlot(a.Scope(b).MetaKey()))
	if err != nil {
		t.Fatal(err)
	}
	return n.Addr
}

// served is a service running on a loopback port through the proxies.
type served struct {
	url string
	svc *Service
}

// startService runs a service (cfg's zero fields: the test's defaults)
// over real HTTP until the test ends.
func startService(t *testing.T, cfg Config) served {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	cfg.RedisAddrs = testCluster.Addrs()
	cfg.Secret = []byte(testSecret)
	cfg.Dialer = testProxies.Dialer()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, s, func(a string) { addr <- a }) }()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case err := <-done:
		cancel()
		t.Fatalf("service did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service ended with %v", err)
		}
	})
	return served{url: url, svc: s}
}

// reply is one HTTP answer of the service.
type reply struct {
	Status int
	Answer
	Took time.Duration
	Raw  string
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

func (s served) do(t *testing.T, method, path string, body any) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Took: time.Since(t0), Raw: strings.TrimSpace(string(raw))}
	if err := json.Unmarshal(raw, &r.Answer); err != nil {
		t.Fatalf("%s %s: %d %q: not JSON: %v", method, path, resp.StatusCode, raw, err)
	}
	return r
}

func (s served) reserve(t *testing.T, a *lua.Activity, user, req string) reply {
	t.Helper()
	return s.do(t, "POST", "/v1/reserve", map[string]any{"activity_id": a.ID, "user_id": user, "request_id": req})
}

func (s served) query(t *testing.T, a *lua.Activity, user, req string) reply {
	t.Helper()
	return s.do(t, "GET", "/v1/reserve/"+req+"?activity_id="+a.ID+"&user_id="+user, nil)
}

func (s served) release(t *testing.T, a *lua.Activity, user, rid string) reply {
	t.Helper()
	return s.do(t, "POST", "/v1/release", map[string]any{"activity_id": a.ID, "user_id": user, "reservation_id": rid})
}

// metric is the value of one sample line of GET /metrics (0 when absent).
func (s served) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := httpClient.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+" ") {
			var v float64
			_, _ = fmt.Sscanf(strings.TrimPrefix(line, name+" "), "%g", &v)
			return v
		}
	}
	return 0
}

// rid is the reservation id the harness derives for a request.
func rid(a *lua.Activity, user, req string) string {
	return lua.ReservationID([]byte(testSecret), a.ID, a.SKU, user, req)
}

// withLatency puts a downstream latency toxic of d on node's proxy (the
// scripts run; their replies arrive late) until the returned heal, which
// replaces the proxy (RemoveToxic can hang while latency holds data).
func withLatency(t *testing.T, node string, d time.Duration) (heal func()) {
	t.Helper()
	if err := testProxies.AddToxic(node, compose.Toxic{Name: "slow", Type: "latency", Stream: "downstream",
		Attributes: map[string]any{"latency": d.Milliseconds()}}); err != nil {
		t.Fatal(err)
	}
	healed := false
	heal = func() {
		if !healed {
			healed = true
			if err := testProxies.Replace(node); err != nil {
				t.Errorf("heal the proxy of %s: %v", node, err)
			}
		}
	}
	t.Cleanup(heal)
	return heal
}
