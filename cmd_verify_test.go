package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

// runGenerators runs generators 0..n-1 of one split load concurrently, each
// through the CLI, and returns their --out directories.
func runGenerators(t *testing.T, spec, activity string, n int, args ...string) []string {
	t.Helper()
	dirs := make([]string, n)
	codes := make([]int, n)
	texts := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i] = filepath.Join(t.TempDir(), fmt.Sprintf("gen%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			a := append([]string{"run", "--cluster", spec, "--activity", activity, "--generator", fmt.Sprintf("%d/%d", i, n),
				"--out", dirs[i], "--progress", "off"}, args...)
			codes[i] = run(context.Background(), a, &out, &out)
			texts[i] = out.String()
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != exitPass {
			t.Fatalf("generator %d/%d: exit %d\n%s", i, n, codes[i], texts[i])
		}
		rep, err := reports.ReadJSON(filepath.Join(dirs[i], "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, inv := range rep.Invariants {
			if (inv.ID == "I2" || inv.ID == "I9") && (inv.Status != reports.StatusSkip || !strings.Contains(inv.Detail, "judged on the merge")) {
				t.Errorf("generator %d: %s %s %q: want skip, judged on the merge", i, inv.ID, inv.Status, inv.Detail)
			}
		}
		for _, f := range []string{"history.jsonl", lifecycle.GenInfoFile, reports.HlogFileName} {
			if _, err := os.Stat(filepath.Join(dirs[i], f)); err != nil {
				t.Errorf("generator %d: %v", i, err)
			}
		}
	}
	return dirs
}

func statuses(rep *reports.Report) map[string]reports.Status {
	m := map[string]reports.Status{}
	for _, inv := range rep.Invariants {
		m[inv.ID] = inv.Status
	}
	return m
}

// Two generators against one cluster (started here, reached as an existing
// redis:// cluster) merge into one passing report judged over both
// histories; a counter changed behind the scripts' back fails the merged
// verification by the right id.
func TestTwoGeneratorsMergeIntoOneVerifiedReport(t *testing.T) {
	clustertest.Need(t)
	// Its own cluster: package main has no shared one (each run starts
	// its own), and this test corrupts a counter behind the scripts' back.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	c, err := compose.Start(ctx, compose.Options{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := "redis://" + strings.Join(c.Addrs(), ",")
	load := []string{"--rate", "400", "--duration", "1500ms", "--users", "800", "--stock", "100", "--buckets", "2", "--mix-release", "0.05"}

	dirs := runGenerators(t, spec, "split1", 2, load...)
	merged := filepath.Join(t.TempDir(), "merged")
	code, text := cli(t, append([]string{"verify", "--cluster", spec, "--out", merged}, dirs...)...)
	if code != exitPass {
		t.Fatalf("verify: exit %d\n%s", code, text)
	}
	if os.Getenv("SHOW_VERIFY") != "" {
		t.Log(text)
	}
	rep, err := reports.ReadJSON(filepath.Join(merged, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ops int64
	for _, d := range dirs {
		g, _ := reports.ReadJSON(filepath.Join(d, "report.json"))
		ops += g.Totals.Ops
	}
	st := statuses(rep)
	if !rep.Passed || len(rep.Sources) != 2 || rep.Totals.Ops != ops || st["I2"] != reports.StatusPass || st["I9"] != reports.StatusPass || st["I3"] != reports.StatusPass {
		t.Fatalf("merged: passed=%v sources=%d ops=%d (want %d) invariants %v\n%s", rep.Passed, len(rep.Sources), rep.Totals.Ops, ops, st, text)
	}
	if rep.Stock.Initial != 100 || rep.Stock.Available != 0 {
		t.Errorf("merged stock %+v: want the shared activity's, sold out", rep.Stock)
	}
	for _, f := range []string{"history.jsonl", "report.html", "summary.md", "junit.xml", reports.HlogFileName} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Error(err)
		}
	}

	// Refusals (exit 2): a generator's run missing, a second process as generator 1.
	if code, text := cli(t, "verify", "--cluster", spec, "--out", t.TempDir(), dirs[0]); code != exitHarnessError || !strings.Contains(text, "1/2") {
		t.Errorf("verify without generator 1: exit %d\n%s", code, text)
	}
	again := append([]string{"run", "--cluster", spec, "--activity", "split1", "--generator", "1/2", "--out", t.TempDir(), "--progress", "off", "--activity-wait", "2s"}, load...)
	if code, text := cli(t, again...); code != exitHarnessError || !strings.Contains(text, "already ran") {
		t.Errorf("generator 1/2 twice: exit %d\n%s", code, text)
	}
	if code, text := cli(t, "run", "--generator", "0/2", "--out", t.TempDir()); code != exitHarnessError || !strings.Contains(text, "--activity") {
		t.Errorf("--generator without --activity: exit %d\n%s", code, text)
	}
	if code, text := cli(t, "run", "--generator", "0/2", "--activity", "x", "--out", t.TempDir()); code != exitHarnessError || !strings.Contains(text, "redis://") {
		t.Errorf("--generator on a local cluster: exit %d\n%s", code, text)
	}

	// Corruption behind the scripts' back, after both generators passed.
	dirs = runGenerators(t, spec, "split2", 2, "--rate", "300", "--duration", "1s", "--users", "800", "--stock", "5000", "--buckets", "2")
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	act, err := lifecycle.ReadActivity(context.Background(), rdb, "split2", "sku1", 2, 5000)
	if err != nil {
		t.Fatal(err)
	}
	stock := act.Scope(0).StockKey()
	// A phantom reservation: conserved (I1 holds), but no record behind it.
	rdb.HIncrBy(context.Background(), stock, "available", -1)
	rdb.HIncrBy(context.Background(), stock, "reserved", 1)
	out := filepath.Join(t.TempDir(), "corrupt")
	code, text = cli(t, append([]string{"verify", "--cluster", spec, "--out", out}, dirs...)...)
	rep, _ = reports.ReadJSON(filepath.Join(out, "report.json"))
	if code != exitCheckFailed || rep == nil || !slices.Equal(rep.FailedChecks(), []string{"I2"}) {
		t.Fatalf("phantom reservation: exit %d, failed %v\n%s", code, rep.FailedChecks(), text)
	}
	// Stock appearing from nowhere: I1 as well.
	rdb.HIncrBy(context.Background(), stock, "available", 2)
	out = filepath.Join(t.TempDir(), "corrupt2")
	code, text = cli(t, append([]string{"verify", "--cluster", spec, "--out", out, "--teardown"}, dirs...)...)
	rep, _ = reports.ReadJSON(filepath.Join(out, "report.json"))
	if code != exitCheckFailed || rep == nil || !slices.Equal(rep.FailedChecks(), []string{"I1", "I2"}) {
		t.Fatalf("stock from nowhere: exit %d, failed %v\n%s", code, rep.FailedChecks(), text)
	}
	if n, _ := rdb.Exists(context.Background(), act.Scope(0).MetaKey(), lifecycle.RegistryKey(act)).Result(); n != 0 || !strings.Contains(text, "teardown: removed") {
		t.Errorf("--teardown left %d keys\n%s", n, text)
	}
}
