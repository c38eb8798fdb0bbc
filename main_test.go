package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/lua"
)

// cli runs the command in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(context.Background(), args, &out, &out)
	return code, out.String()
}

// redisServers lists the PIDs of running redis-server processes.
func redisServers(t *testing.T) string {
	out, _ := exec.Command("pgrep", "-x", "redis-server").Output()
	return strings.TrimSpace(string(out))
}

func TestBadInputExitsTwoWithTheFix(t *testing.T) {
	before := redisServers(t)
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"run", "--rate", "-5"}, "rate"},
		{[]string{"run", "--mode", "fast"}, "open or closed"},
		{[]string{"run", "--mix-replay", "0.8", "--mix-same-user", "0.8"}, "mix shares"},
		{[]string{"run", "--stock", "1", "--buckets", "4"}, "buckets"},
		{[]string{"run", "--durtion", "1s"}, "unknown flag"},
		{[]string{"run", "--lua-dir", filepath.Join(dir, "nope")}, "lua dir"},
		{[]string{"run", "--lua-dir", dir}, "reserve.lua"},
		{[]string{"run", "--redis-server", filepath.Join(dir, "redis-server"), "--out", dir}, "apt-get install -y redis-server"},
		{[]string{"race", "--masters", "0"}, "--masters"},
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
	if n := len(rep["invariants"].([]any)); n != 9 {
		t.Errorf("%d invariants", n)
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
