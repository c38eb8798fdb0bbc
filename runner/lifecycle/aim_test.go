package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/internal/exitcode"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/adapter"
	"seckill-harness/sut/httpsut"
)

// skuShop is the access service of the aim tests, written here and not
// the reference contract: its sale lives under its own hash tag, one slot
// ({sku:<sku>}:stock, :buyers, :reqs), its endpoint is POST
// /shop/<sku>/buy with its own field names, and it reaches the cluster
// through the stand's proxies (the nodes announce them), so the faults
// reach it.
type skuShop struct {
	rdb *redis.ClusterClient
	srv *http.Server
	url string
}

// skuShopBuy answers a request once: its earlier answer when the request
// id is on record, DUP_USER for a user who already bought, GONE without
// stock, else OK (stock taken, buyer and request recorded).
var skuShopBuy = redis.NewScript(`
local prev = redis.call('HGET', KEYS[3], ARGV[2])
if prev then return prev end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[3], ARGV[2], 'DUP_USER')
  return 'DUP_USER'
end
if tonumber(redis.call('GET', KEYS[1]) or '0') <= 0 then return 'GONE' end
redis.call('DECR', KEYS[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[3], ARGV[2], 'OK')
return 'OK'`)

// skuShopMapping is the mapping of skuShop; hashTag "" leaves hash_tag out.
func skuShopMapping(t *testing.T, hashTag string) *httpsut.Mapping {
	t.Helper()
	y := `name: skushop
submit:
  method: POST
  path: /shop/${sku}/buy
  body: {uid: user, rid: request, res: reservation}
query: ~
release: ~
answer: {code: result, reservation_id: res_id}
codes: {OK: ACCEPTED, GONE: SOLD_OUT, DUP_USER: USER_ALREADY_RESERVED, BUSY: SYSTEM_BUSY}
`
	if hashTag != "" {
		y += fmt.Sprintf("hash_tag: %q\n", hashTag)
	}
	path := filepath.Join(t.TempDir(), "skushop.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := httpsut.LoadMapping(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func startSkuShop(t *testing.T, seeds []string) *skuShop {
	t.Helper()
	s := &skuShop{rdb: redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, ReadTimeout: 500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond, DialTimeout: 500 * time.Millisecond, PoolSize: 32})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /shop/{sku}/buy", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ UID, RID, Res string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.UID == "" || in.RID == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		tag := "{sku:" + r.PathValue("sku") + "}"
		res, err := skuShopBuy.Run(r.Context(), s.rdb, []string{tag + ":stock", tag + ":buyers", tag + ":reqs"}, in.UID, in.RID, in.Res).Text()
		var rerr redis.Error
		switch {
		case errors.As(err, &rerr):
			w.WriteHeader(http.StatusServiceUnavailable) // Redis refused it: nothing ran
			_ = json.NewEncoder(w).Encode(map[string]any{"result": "BUSY", "retryable": true, "request_id": in.RID})
			return
		case err != nil:
			w.WriteHeader(http.StatusGatewayTimeout) // it may have run
			return
		}
		out := map[string]string{"result": res, "request_id": in.RID}
		if res == "OK" {
			out["res_id"] = in.Res
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.srv, s.url = &http.Server{Handler: mux}, "http://"+l.Addr().String()
	go func() { _ = s.srv.Serve(l) }()
	t.Cleanup(func() { _ = s.srv.Close(); _ = s.rdb.Close() })
	return s
}

// stock resets the shop's sale of sku to n units.
func (s *skuShop) stock(ctx context.Context, sku string, n int64) error {
	tag := "{sku:" + sku + "}"
	if err := s.rdb.Del(ctx, tag+":buyers", tag+":reqs").Err(); err != nil {
		return err
	}
	return s.rdb.Set(ctx, tag+":stock", n, time.Hour).Err()
}

// masterOfSlot is the address of the master that owns slot now.
func masterOfSlot(t *testing.T, c compose.Cluster, slot int) string {
	t.Helper()
	nodes, err := c.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Role == "master" && n.HasSlot(slot) {
			return n.Addr
		}
	}
	t.Fatalf("no master owns slot %d", slot)
	return ""
}

// activityAway is an activity id whose reference hot slot (bucket 0's
// stock key) lives on another master than addr: a fault that aimed at the
// reference contract's keys would miss the shop.
func activityAway(t *testing.T, c compose.Cluster, addr, prefix string) string {
	t.Helper()
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		a := lua.NewActivity(id, "sku1", 1, 1, time.Hour)
		if masterOfSlot(t, c, compose.KeySlot(a.Scope(0).StockKey())) != addr {
			return id
		}
	}
	t.Fatal("no activity id with its reference keys away from the shop's master")
	return ""
}

// The faults aim where the system under test keeps its sale. A service
// of the test's own (skuShop: keys under {sku:sku1}, slot 12156, its own
// paths) runs under failover mode=kill, partition and slot-migration,
// each at hot-master / the hot slot, on an activity whose reference keys
// live on another master: with hash_tag "sku:${sku}" in its mapping, each
// fault acts on the master that holds slot 12156, says it was chosen by
// the mapping's hash_tag and that its target served most of the
// service's Redis traffic before the injection. Without hash_tag the
// target is observed (the master that served the traffic; the slot with
// the keys) and is the same master. With a hash_tag naming a slot of
// another master the fault misses the service: the run is inconclusive
// (exit 3), its verdict and the fault's aim naming the miss.
func TestFaultsAimAtTheServiceSale(t *testing.T) {
	clustertest.Need(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server")
	}
	ctx := context.Background()
	st, err := OpenStand(ctx, nil, ClusterSpec{Spec: "local", Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second, ServiceRouting: true}, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cr, ok := st.Cluster.(compose.ClientRouting)
	if !ok || len(cr.Seeds()) == 0 {
		t.Fatal("the stand's nodes do not announce their proxies")
	}
	shop := startSkuShop(t, cr.Seeds())
	const saleSlot = 12156 // {sku:sku1}
	if got := compose.KeySlot("{sku:sku1}"); got != saleSlot {
		t.Fatalf("slot of {sku:sku1} = %d, want %d", got, saleSlot)
	}
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 150, 6*time.Second, 5000, 32
	cfg.Mix = runner.Mix{}
	plan := func(name, owner string) *Plan {
		return &Plan{Name: "aim-" + name, Stand: st, Cluster: ClusterSpec{Masters: 3, Replicas: 1}, Stock: 100000, Buckets: 1,
			Activity: ActivityPlan{ID: activityAway(t, st.Cluster, owner, "aim-"+name)}, Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	}

	// The reference path and the reference contract as an adapter file aim
	// at their own hot slot, which serves their traffic: no miss, a pass.
	ref := plan("reference", "")
	ref.Stock = 200
	if err := ref.AddFaults([]string{"partition:at=2500ms,for=2s"}); err != nil {
		t.Fatal(err)
	}
	file, err := adapter.Load("../../docs/adapters/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	viaFile := plan("adapter", "")
	viaFile.Stock, viaFile.PathName = 200, "adapter:reference"
	viaFile.Path = func(s *lua.Store) sut.System { return adapter.NewSystem(file, s) }
	if err := viaFile.AddFaults([]string{"failover:mode=kill,at=2500ms,for=2500ms"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p        *Plan
		chosenBy string
	}{{ref, "reference contract keys"}, {viaFile, "adapter hash_tag {a:" + viaFile.Activity.ID + ":s:sku1:v:1:b:0}"}} {
		hot := masterOfSlot(t, st.Cluster, compose.KeySlot(lua.NewActivity(c.p.Activity.ID, "sku1", 1, 1, time.Hour).Scope(0).StockKey()))
		oc, err := Execute(ctx, c.p, Output{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", c.p.Name, err)
		}
		if len(oc.Report.Faults) != 1 || oc.Report.Faults[0].Aim == nil {
			t.Fatalf("%s: want one fault with its aim, got %+v", c.p.Name, oc.Report.Faults)
		}
		a := oc.Report.Faults[0].Aim
		t.Logf("%s: acted on %v (hot master %s), chosen by %q, share %s (%d of %d commands in %.1fs); verdict %s",
			c.p.Name, a.Masters, hot, a.ChosenBy, fmtShare(a.Share), a.TargetCommands, a.Commands, a.WindowS, oc.Report.Verdict())
		if len(a.Masters) != 1 || a.Masters[0] != hot || a.ChosenBy != c.chosenBy || a.Share == nil || *a.Share <= 0 || a.Missed != "" {
			t.Errorf("%s: aim %+v (share %s), want master %s chosen by %q with a share > 0 and no miss", c.p.Name, a, fmtShare(a.Share), hot, c.chosenBy)
		}
		if oc.Report.Aim == nil || oc.Report.Aim.ChosenBy != c.chosenBy {
			t.Errorf("%s: report aim %+v, want chosen by %q", c.p.Name, oc.Report.Aim, c.chosenBy)
		}
		if err := Judge(oc); err != nil {
			t.Errorf("%s: judged %v, want a pass; verdict %s", c.p.Name, err, oc.Report.Verdict())
		}
	}

	run := func(name, hashTag, fault string) (*Result, string) {
		t.Helper()
		owner := masterOfSlot(t, st.Cluster, saleSlot)
		if err := shop.stock(ctx, "sku1", 100000); err != nil {
			t.Fatal(err)
		}
		m := skuShopMapping(t, hashTag)
		p := plan(name, owner)
		p.Phases[0].Config.CallTimeout, p.Phases[0].Config.RetrySends, p.Phases[0].Config.RetryBackoff = m.RequestTimeout(), m.Retry.Sends, m.Backoff()
		p.PathName = "service:skushop"
		p.Path = func(s *lua.Store) sut.System {
			sys, err := httpsut.New(shop.url, m, cfg.Concurrency, s)
			if err != nil {
				panic(err)
			}
			return sys
		}
		if err := p.AddFaults([]string{fault}); err != nil {
			t.Fatal(err)
		}
		oc, err := Execute(ctx, p, Output{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(oc.NotInjected) > 0 {
			t.Fatalf("%s: not injected: %v", name, oc.NotInjected)
		}
		if len(oc.Report.Faults) != 1 || oc.Report.Faults[0].Aim == nil {
			t.Fatalf("%s: want one fault with its aim, got %+v", name, oc.Report.Faults)
		}
		a := oc.Report.Faults[0].Aim
		share := -1.0
		if a.Share != nil {
			share = *a.Share
		}
		t.Logf("%s: %s acted on %v (slot %d's master was %s), chosen by %q, share %.4f (%d of %d commands in %.1fs, by master %v); verdict %s",
			name, fault, a.Masters, saleSlot, owner, a.ChosenBy, share, a.TargetCommands, a.Commands, a.WindowS, a.ByMaster, oc.Report.Verdict())
		return oc, owner
	}
	hit := func(name, hashTag, fault, chosenBy string) {
		t.Helper()
		oc, owner := run(name, hashTag, fault)
		a := oc.Report.Faults[0].Aim
		if len(a.Masters) != 1 || a.Masters[0] != owner {
			t.Errorf("%s: the fault acted on %v, want the master of slot %d, %s", name, a.Masters, saleSlot, owner)
		}
		if !strings.Contains(a.ChosenBy, chosenBy) || oc.Report.Faults[0].Evidence["target_chosen_by"] != a.ChosenBy {
			t.Errorf("%s: target chosen by %q (evidence %v), want %q", name, a.ChosenBy, oc.Report.Faults[0].Evidence["target_chosen_by"], chosenBy)
		}
		if a.Share == nil || *a.Share <= 0.5 || oc.Report.Faults[0].Evidence["sut_traffic_share"] != *a.Share {
			t.Errorf("%s: the target's share of the service's Redis traffic before the injection is %s (evidence %v), want most of it",
				name, fmtShare(a.Share), oc.Report.Faults[0].Evidence["sut_traffic_share"])
		}
		if a.Missed != "" || oc.Inconclusive() {
			t.Errorf("%s: a fault on the service's master judged a miss: %q, verdict %s", name, a.Missed, oc.Report.Verdict())
		}
	}
	const tag = "sku:${sku}"
	hit("failover-kill", tag, "failover:mode=kill,at=2500ms,for=2500ms", "service mapping hash_tag {sku:sku1}")
	hit("partition-master", tag, "partition:at=2500ms,for=2s", "service mapping hash_tag {sku:sku1}")
	hit("slot-migration", tag, "slot-migration:at=2500ms,batch=50,pause=20ms", "service mapping hash_tag {sku:sku1}")
	hit("observed-partition", "", "partition:at=2500ms,for=2s", "observed traffic")
	hit("observed-slot-migration", "", "slot-migration:at=2500ms,batch=50,pause=20ms", "observed traffic")

	// A target the scenario names (node=) acts there by design: its share
	// is stated, and no miss is judged.
	owner := masterOfSlot(t, st.Cluster, saleSlot)
	other := ""
	for _, a := range st.Cluster.Addrs() {
		if nodes, _ := st.Cluster.Nodes(ctx); other == "" && a != owner {
			for _, n := range nodes {
				if n.Addr == a && n.Role == "master" {
					other = a
				}
			}
		}
	}
	oc, _ := run("explicit-node", tag, "partition:target=node="+other+",at=2500ms,for=2s")
	if a := oc.Report.Faults[0].Aim; len(a.Masters) != 1 || a.Masters[0] != other || a.ChosenBy != "the scenario" || a.Share == nil || *a.Share != 0 || a.Missed != "" || oc.Inconclusive() {
		t.Errorf("explicit node=%s: aim %+v (share %s), verdict %s; want that master, chosen by the scenario, share 0, no miss", other, a, fmtShare(a.Share), oc.Report.Verdict())
	}

	// A hash_tag naming a slot on another master than the sale's.
	wrong := ""
	for i := 0; wrong == ""; i++ {
		if c := fmt.Sprintf("elsewhere-%d", i); masterOfSlot(t, st.Cluster, compose.KeySlot("{"+c+"}")) != owner {
			wrong = c
		}
	}
	oc, _ = run("wrong-hash-tag", wrong, "partition:at=2500ms,for=2s")
	a := oc.Report.Faults[0].Aim
	err = Judge(oc)
	if exitcode.Of(err) != exitcode.Inconclusive || !errors.Is(err, exitcode.ErrInconclusive) {
		t.Fatalf("wrong hash_tag: the run judged %v (exit %d), want inconclusive (exit 3); verdict %s", err, exitcode.Of(err), oc.Report.Verdict())
	}
	v := oc.Report.Verdict()
	for _, want := range []string{"the fault missed the system under test", "its sale is on " + owner, "the fault acted on " + a.Masters[0]} {
		if !strings.Contains(v, want) || !strings.Contains(a.Missed, want) {
			t.Errorf("wrong hash_tag: verdict %q / aim.missed %q lacks %q", v, a.Missed, want)
		}
	}
	if a.Masters[0] == owner || a.Share == nil || *a.Share != 0 {
		t.Errorf("wrong hash_tag: the fault acted on %v with share %s; want another master than %s, share 0", a.Masters, fmtShare(a.Share), owner)
	}
	missed := 0
	for _, as := range oc.Report.Assertions {
		if as.Status == reports.StatusInconclusive && strings.Contains(as.Detail, "missed the system under test") {
			missed++
		}
	}
	if missed != 1 {
		t.Errorf("wrong hash_tag: %d inconclusive assertions name the miss, want 1: %+v", missed, oc.Report.Assertions)
	}
}

func fmtShare(s *float64) string {
	if s == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.4f", *s)
}
