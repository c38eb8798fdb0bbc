package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"seckill-harness/checks"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// cli runs the command in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(context.Background(), args, &out, &out)
	return code, out.String()
}

// redisServers lists the PIDs of the redis-server processes this test
// binary started (its children): the other packages' clusters, which go
// test runs at the same time, come and go on their own.
func redisServers(t *testing.T) string {
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "-x", "redis-server").Output()
	return strings.TrimSpace(string(out))
}

func TestBadInputExitsTwoWithTheFix(t *testing.T) {
	before := redisServers(t)
	dir := t.TempDir()
	aFile := filepath.Join(dir, "a-file")
	if err := os.WriteFile(aFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"run", "--rate", "-5"}, "rate"},
		{[]string{"run", "--mode", "fast"}, "--mode fast: phases[0].mode: \"fast\": unknown mode; valid modes: open, closed"},
		{[]string{"run", "--mix-replay", "0.8", "--mix-same-user", "0.8"}, "--mix-replay 0.8 --mix-same-user 0.8: phases[0].mix: shares add up to"},
		{[]string{"run", "--stock", "1", "--buckets", "4"}, "buckets"},
		{[]string{"run", "--durtion", "1s"}, "unknown flag"},
		{[]string{"run", "--lua-dir", filepath.Join(dir, "nope")}, "lua dir"},
		{[]string{"run", "--lua-dir", dir}, "reserve.lua"},
		{[]string{"run", "--redis-server", filepath.Join(dir, "redis-server"), "--out", dir}, "apt-get install -y redis-server"},
		{[]string{"race", "--masters", "0"}, "--masters"},
		{[]string{"run", "--wait-replicas", "-1", "--out", dir}, "--wait-replicas -1"},
		{[]string{"run", "--wait-timeout", "1s", "--out", dir}, "without --wait-replicas"},
		{[]string{"run", "--wait-replicas", "1", "--wait-timeout", "0s", "--out", dir}, "WAIT 0 would block forever"},
		{[]string{"run", "smoke", "--set", "wait.replicas=-2", "--out", dir}, "wait"},
		{[]string{"compare", "failover-data-loss", "--mitigations", "none,bogus"}, "unknown mitigation \"bogus\""},
		{[]string{"compare", "failover-data-loss", "--variant", "x"}, "NAME:key=value"},
		{[]string{"compare", "failover-data-loss", "--mitigations", "none"}, "at least two"},
		{[]string{"compare", "failover-data-loss", "--mitigations", "none,wait", "--buckets", "1,2"}, "--buckets belongs to the compare by bucket count"},
		{[]string{"run", "smoke", "--cluster", "redis://127.0.0.1:1", "--set", "topology.min_replicas_to_write=1", "--out", dir}, "topology.min_replicas_to_write"},
		// Unwritable outputs, found before the cluster starts (root ignores
		// permission bits: a path under a regular file fails for root too).
		{[]string{"run", "--out", filepath.Join(aFile, "out")}, "is not writable"},
		{[]string{"run", "--out", dir, "--history", filepath.Join(aFile, "h.jsonl")}, "cannot be written"},
		{[]string{"run", "--out", dir, "--history", "report.json"}, "is the run's report.json"},
	}
	for _, c := range cases {
		code, out := cli(t, c.args...)
		if code != exitHarnessError || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 naming %q", c.args, code, out, c.want)
		}
	}
	if after := redisServers(t); after != before {
		t.Fatalf("bad input left processes running: before %q after %q", before, after)
	}
}

func TestRunWritesReportAndPasses(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	code, text := cli(t, "run", "--rate", "500", "--duration", "2s", "--users", "800", "--stock", "100",
		"--buckets", "2", "--out", out, "--history", "h.jsonl", "--mix-release", "0.05")
	if code != exitPass {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "seed", "passed", "started_at", "duration_s", "versions", "topology", "load",
		"totals", "throughput_ops_per_s", "latency_ms", "service_time_ms", "phases", "timeseries", "faults", "stock",
		"unknown", "lost_acks", "invariants", "assertions"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	if rep["passed"] != true {
		t.Fatalf("passed=%v", rep["passed"])
	}
	if v := rep["versions"].(map[string]any); v["redis"] != "7.0.15" || !strings.HasPrefix(v["go_redis"].(string), "v9.") {
		t.Errorf("versions %v", v)
	}
	// Every core check of the table (no pipeline, no local sold-out flag,
	// no service here), in every run; the key checks judged, not skipped:
	// the run wrote keys and read the nodes.
	core := 0
	for _, inv := range checks.Invariants() {
		if !inv.Pipeline && !inv.LocalSoldOut && !inv.Service {
			core++
		}
	}
	if n := len(rep["invariants"].([]any)); n != core {
		t.Errorf("%d invariants, want the table's %d core checks", n, core)
	}
	for _, x := range rep["invariants"].([]any) {
		inv := x.(map[string]any)
		if (inv["id"] == "K1" || inv["id"] == "K2") && inv["status"] != "pass" {
			t.Errorf("%s %s: %s", inv["id"], inv["status"], inv["detail"])
		}
	}
	for _, f := range []string{"latency.hgrm", "h.jsonl"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(text, "PASS") || !strings.Contains(text, "I9") {
		t.Errorf("summary lacks the verdict:\n%s", text)
	}
}

// A broken reserve.lua given with --lua-dir (the stock check removed) must
// oversell, be caught, and exit 1.
func TestRunCatchesABrokenScriptAndExitsOne(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	emb := lua.Embedded()
	broken := strings.Replace(emb.Reserve.Source, "if available <= 0 then", "if false then", 1)
	if broken == emb.Reserve.Source {
		t.Fatal("could not break the script")
	}
	for name, src := range map[string]string{lua.ReserveFile: broken, lua.TransitionFile: emb.Transition.Source, lua.CompensateFile: emb.Compensate.Source} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	code, text := cli(t, "run", "--rate", "500", "--duration", "1s", "--users", "400", "--stock", "50", "--buckets", "1",
		"--out", out, "--lua-dir", dir)
	if code != exitCheckFailed {
		t.Fatalf("exit %d, want 1:\n%s", code, text)
	}
	if !strings.Contains(text, "I3") || !strings.Contains(text, "FAIL") {
		t.Fatalf("summary does not name I3:\n%s", text)
	}
}

func TestRunScenarioFileWithSetAndJUnit(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	code, text := cli(t, "run", "testdata/quick.yaml", "--set", "activity.stock=30", "--out", out, "--progress", "plain")
	if code != exitPass {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep["scenario"] != "quick" || rep["stock"].(map[string]any)["initial"].(float64) != 30 {
		t.Fatalf("scenario/stock not applied: %v %v", rep["scenario"], rep["stock"])
	}
	res, ok := rep["resolved_scenario"].(map[string]any)
	if !ok || len(res) == 0 {
		t.Fatal("report lacks the resolved scenario")
	}
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil || !strings.Contains(string(junit), `name="I3 no_oversell"`) || !strings.Contains(string(junit), "p99 &lt;= 2s") {
		t.Fatalf("junit.xml: %v\n%s", err, junit)
	}
}

func TestScenarioUsageErrorsExitTwo(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "no-such-scenario"}, "smoke"}, // lists the built-ins
		{[]string{"run", "smoke", "--rate", "10"}, "--set"},
		{[]string{"run", "smoke", "--set", "activity.nosuch=1"}, "activity.nosuch"},
		{[]string{"run", "--set", "seed=1"}, "name one"},
		{[]string{"run", "smoke", "--path", "nosuch"}, "valid paths"},
		{[]string{"compare", "smoke", "--buckets", "1,x"}, "--buckets"},
		{[]string{"capacity", "smoke", "--factor", "1"}, "--factor"},
		{[]string{"capacity", "nightly"}, "suite"},
		{[]string{"capacity", "smoke", "--precision", "0"}, "--precision"},
		{[]string{"capacity", "smoke", "--path-mix", "both"}, "--path-mix"},
		{[]string{"compare", "smoke", "--slo-p99", "5ms"}, "--capacity"},
		{[]string{"compare", "smoke", "--capacity", "--path-mix", "sold_out"}, "--path-mix"},
	}
	for _, c := range cases {
		code, out := cli(t, c.args...)
		if code != exitHarnessError || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 naming %q", c.args, code, out, c.want)
		}
	}
}

// Every malformed scenario in scenarios/testdata/bad gives exit 2 from the
// CLI with a message naming the file and its line.
func TestValidateMalformedFilesExitTwoNamingFileAndLine(t *testing.T) {
	files, _ := filepath.Glob("scenarios/testdata/bad/*.yaml")
	if len(files) < 10 {
		t.Fatalf("only %d malformed scenario files", len(files))
	}
	for _, f := range files {
		code, out := cli(t, "validate", f)
		if code != exitHarnessError || !strings.Contains(out, f+":") {
			t.Errorf("%s: exit %d, output %q; want exit 2 naming %s:<line>", f, code, out, f)
		}
	}
	if code, out := cli(t, "validate", "smoke", "nightly", "testdata/quick.yaml"); code != exitPass {
		t.Fatalf("valid scenarios: exit %d\n%s", code, out)
	}
}

func TestEveryBuiltinValidatesFromTheCLI(t *testing.T) {
	code, out := cli(t, "list")
	if code != exitPass {
		t.Fatalf("list: %d", code)
	}
	var names []string
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 2 && !strings.HasPrefix(line, "run one") {
			names = append(names, f[0])
		}
	}
	if len(names) < 15 {
		t.Fatalf("list shows %d scenarios", len(names))
	}
	if code, out := cli(t, append([]string{"validate"}, names...)...); code != exitPass {
		t.Fatalf("validate built-ins: exit %d\n%s", code, out)
	}
}

func TestCompareAndCapacityPrintTheirTables(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	code, text := cli(t, "compare", "testdata/quick.yaml", "--buckets", "1,2", "--out", out)
	if code != exitPass || !strings.Contains(text, "first sold out") || !strings.Contains(text, "unsold elsewhere then") {
		t.Fatalf("compare: exit %d\n%s", code, text)
	}
	if _, err := os.Stat(filepath.Join(out, "compare.json")); err != nil {
		t.Fatal(err)
	}
	code, text = cli(t, "capacity", "testdata/quick.yaml", "--start", "200", "--factor", "2", "--max-steps", "2",
		"--step-duration", "1s", "--slo-p99", "2s", "--out", out)
	if code != exitPass || !strings.Contains(text, "highest rate that held: 400 ops/s") {
		t.Fatalf("capacity: exit %d\n%s", code, text)
	}
}

func TestRunWithPipelineReportsPChecks(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	code, text := cli(t, "run", "--pipeline", "--drain", "10s", "--duration", "2s", "--rate", "400", "--users", "1000",
		"--stock", "150", "--buckets", "2", "--mix-release", "0", "--fault", "dispatcher-crash:at=500ms,for=700ms",
		"--out", out, "--progress", "off")
	if code != exitPass {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	raw, _ := os.ReadFile(filepath.Join(out, "report.json"))
	var rep struct {
		Invariants []struct{ ID, Status string }
		Pipeline   map[string]any
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, inv := range rep.Invariants {
		ids[inv.ID] = inv.Status
	}
	for _, id := range []string{"P1", "P2", "P3", "P4", "P5", "E1", "E2", "E3", "E4", "E5"} {
		if ids[id] != "pass" {
			t.Errorf("%s: %q", id, ids[id])
		}
	}
	if len(rep.Pipeline) == 0 {
		t.Fatal("report lacks the pipeline summary")
	}
	// The orders are in PostgreSQL: the final stage's figures are reported.
	db, _ := rep.Pipeline["order_db"].(map[string]any)
	th, _ := db["throughput"].(map[string]any)
	if n, _ := th["orders_created"].(float64); n != 150 {
		t.Errorf("orders_created %v, want the stock (150): %v", th["orders_created"], db)
	}
	if r, _ := th["orders_per_s"].(float64); r <= 0 {
		t.Errorf("orders_per_s %v", th["orders_per_s"])
	}
	t.Logf("order_db: %v", db)
}

func TestCompareAndCapacityWriteHTML(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	if code, text := cli(t, "capacity", "testdata/quick.yaml", "--start", "200", "--factor", "2", "--max-steps", "1",
		"--step-duration", "1s", "--slo-p99", "2s", "--out", out); code != exitPass {
		t.Fatalf("capacity: exit %d\n%s", code, text)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !strings.Contains(string(b), "apacity") {
		t.Fatalf("capacity report.html: %v", err)
	}
}
