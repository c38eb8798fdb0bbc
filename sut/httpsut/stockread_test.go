package httpsut

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill-harness/checks"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// stockMapping reads the reference service's stock hash as a service's
// own keys: state: none, the available units (and, with held, the held
// ones) through the mapping's stock: reads.
const stockMapping = "timeout: 2s\nstock:\n  available: [HGET, \"seckill:{a:${activity}:s:${sku}:v:${version}:b:${bucket}}:stock\", available]\n"

// A service whose mapping names a stock read gets I1 (and I9) judged on
// what it shows: the reference service under load passes, I1's detail
// comparing available with initial − (distinct ACCEPTED − RELEASED) over
// the totals and saying the held counter was not compared; three units
// taken from the counter behind its back (a leak) fail it; with held:
// too, the whole stock is compared (available + held == initial). Without
// the stock read I1 skips.
func TestServiceStockRead(t *testing.T) {
	clustertest.Need(t)
	url := startServe(t)
	run := func(mapping string) (*System, sut.Sale, *runner.Result) {
		st := lua.NewStore(testRDB, lua.Embedded(), []byte(testSecret))
		sys, err := New(url, mappingWith(t, mapping), 8, st)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sys.Close)
		a := lua.NewActivity(fmt.Sprintf("hstk%d-%d", time.Now().UnixMilli()%1_000_000, actSeq.Add(1)), "sku1", 40, 2, time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := lua.Setup(ctx, testRDB, a); err != nil { // set up by other means: state: none
			t.Fatal(err)
		}
		if err := sys.Setup(ctx, a); err != nil { // takes note of it
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = lua.Teardown(context.Background(), testRDB, a) })
		sale := sut.Sale{Activity: a, IDs: st}
		cfg := runner.DefaultConfig()
		cfg.Shape, cfg.Duration, cfg.Users, cfg.Concurrency = runner.Shape{Kind: "constant", Rate: 150}, 1500*time.Millisecond, 120, 8
		cfg.Mix = runner.Mix{Replay: 0.05, SameUser: 0.05, Release: 0.05}
		cfg.CallTimeout, cfg.SampleEvery = 4*time.Second, 200*time.Millisecond
		res, err := runner.Run(context.Background(), cfg, sale, sys)
		if err != nil {
			t.Fatal(err)
		}
		return sys, sale, res
	}
	judgeI1 := func(sale sut.Sale, sys *System, res *runner.Result) checks.Check {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := checks.Judge(ctx, sale, sys, checks.CheckInput{History: res.History, Samples: res.Samples})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Checks {
			if c.ID == "I1" {
				return c
			}
		}
		t.Fatal("no I1")
		return checks.Check{}
	}

	sys, sale, h := run(stockMapping)
	got := judgeI1(sale, sys, h)
	t.Logf("stock read: I1 %s: %s", got.Status, got.Detail)
	if n, _ := got.Evidence["samples"].(int); n == 0 {
		t.Errorf("stock read: no sample of the available units during the load: %v", got.Evidence)
	}
	if got.Status != checks.StatusPass || !strings.Contains(got.Detail, "at the end available == initial − (distinct ACCEPTED − RELEASED)") ||
		!strings.Contains(got.Detail, "not compared: this system under test does not expose "+string(sut.Stock)) {
		t.Errorf("stock read: I1 %s %q, want pass with the accounting compared and the held counter not", got.Status, got.Detail)
	}
	// Three units leak behind the service's back.
	if err := testRDB.HIncrBy(context.Background(), sale.Activity.Scope(1).StockKey(), "available", -3).Err(); err != nil {
		t.Fatal(err)
	}
	got = judgeI1(sale, sys, h)
	t.Logf("three units leaked: I1 %s: %s", got.Status, got.Detail)
	if got.Status != checks.StatusFail || !strings.Contains(got.Detail, "total: available=") {
		t.Errorf("three units leaked: I1 %s %q, want the totals' mismatch", got.Status, got.Detail)
	}

	held := stockMapping + "  held: [HGET, \"seckill:{a:${activity}:s:${sku}:v:${version}:b:${bucket}}:stock\", reserved]\n"
	sys, sale, h = run(held)
	if got = judgeI1(sale, sys, h); got.Status != checks.StatusPass || strings.Contains(got.Detail, "not compared") {
		t.Errorf("stock read with held: I1 %s %q, want the whole stock compared and passed", got.Status, got.Detail)
	}

	sys, sale, h = run("timeout: 2s\n")
	if got = judgeI1(sale, sys, h); got.Status != checks.StatusSkip || !strings.Contains(got.Detail, string(sut.Available)) {
		t.Errorf("no stock read: I1 %s %q, want skip", got.Status, got.Detail)
	}
}

// A bad stock: read is refused at its line, naming the fix.
func TestServiceStockReadBadInput(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"stock:\n  available: [GET, \"c:${user}\"]\n", "stock.available: bad reference ${user}: the values a stock read may name are activity, sku, version, bucket"},
		{"state: reference\nstock:\n  available: [GET, c]\n", "stock: state: reference already reads the stock"},
		{"stock:\n  held: [GET, c]\n", "stock.available: missing: give the Redis read"},
		{"stock: ~\n", "stock: empty: give available:"},
	} {
		p := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadMapping(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), p+":") || strings.HasPrefix(err.Error(), p+":0:") {
			t.Errorf("%q: got %v; want %s:… %s", tc.yaml, err, p, tc.want)
		}
	}
}
