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
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/clustertest"
	"seckill-harness/reports"
	"seckill-harness/runner/catalogue"
	"seckill-harness/scenarios"
)

// TestNightlyCIPassesOnTheReferencePath runs the CI chaos suite end to end
// as `seckill-harness run nightly-ci` does, so a new check that breaks a
// nightly scenario on the reference path fails make test. It takes the
// suite's time: ~80 s of load plus each member's cluster start-up,
// settling and pipeline drain.
func TestNightlyCIPassesOnTheReferencePath(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: nightly-ci is minutes of load")
	}
	redis.SetLogger(quietRedisLog{}) // as main does: pool chatter while nodes are killed
	before := redisServers(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	t0 := time.Now()
	code := run(context.Background(), []string{"run", "nightly-ci", "--out", out, "--progress", "off"}, &stdout, &stderr)
	t.Logf("run nightly-ci: exit %d in %.0fs", code, time.Since(t0).Seconds())
	if code != exitPass {
		// Exit 3 is a stand that could not sustain the plan (make test runs
		// packages side by side on two cores): only latency or throughput
		// bounds were left unjudged, every invariant and every other check
		// held. Exit 1 or 2 fails the test.
		s, err := scenarios.Builtin("nightly-ci")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range s.Suite {
			rep, err := reports.ReadJSON(filepath.Join(out, m, "report.json"))
			v := catalogue.Classify(rep, err)
			switch v.Outcome {
			case catalogue.Pass:
			case catalogue.Inconclusive:
				t.Logf("%s: inconclusive on this host: %s: %s", m, v.Check, v.Detail)
			default:
				t.Errorf("%s: %s: %s: %s", m, v.Outcome, v.Check, v.Detail)
			}
		}
		if code != exitInconclusive {
			t.Fatalf("run nightly-ci exited %d, want 0 (or 3: inconclusive SLOs only); stderr tail:\n%s", code, tail(stderr.String(), 20))
		}
	}
	if after := redisServers(t); after != before {
		t.Fatalf("nightly-ci left processes running: before %q after %q", before, after)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func TestCatalogueBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	aFile := filepath.Join(dir, "a-file")
	if err := os.WriteFile(aFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"catalogue", "--repeat", "0"}, "--repeat 0"},
		{[]string{"catalogue", "--repeat", "x"}, "invalid argument"},
		{[]string{"catalogue", "--only", "smoke,nope", "--out", dir}, `--only "nope": not a built-in`},
		{[]string{"catalogue", "--frobnicate"}, "unknown flag"},
		{[]string{"catalogue", "extra"}, "unknown command"},
		{[]string{"catalogue", "--only", "smoke", "--out", filepath.Join(aFile, "out")}, "--out"},
		{[]string{"catalogue", "--only", "smoke", "--out", dir, "--junit", filepath.Join(aFile, "j.xml")}, "--junit"},
	} {
		code, text := cli(t, c.args...)
		if code != exitHarnessError || !strings.Contains(text, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 naming %q", c.args, code, text, c.want)
		}
	}
}

// TestCatalogueRunsABuiltinThroughTheScenarioRunner runs a one-row
// catalogue for real: the row comes from the run's report, the exit
// code agrees with the row (smoke's p99 SLO may fail on a starved host:
// then the row says so and the exit is 1), and junit.xml has the case.
func TestCatalogueRunsABuiltinThroughTheScenarioRunner(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"catalogue", "--only", "smoke", "--out", dir, "--json"}, &stdout, &stderr)
	var sum catalogue.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("exit %d, stdout not one JSON object: %v\n%s\nstderr:\n%s", code, err, stdout.String(), tail(stderr.String(), 20))
	}
	if len(sum.Rows) != 1 || sum.Rows[0].Name != "smoke" || sum.Rows[0].Expected != catalogue.Pass || sum.Rows[0].Runs != 1 {
		t.Fatalf("rows %+v, want smoke expected pass once", sum.Rows)
	}
	r := sum.Runs[0][0]
	wantCode := exitCheckFailed
	if r.Held {
		wantCode = exitPass
	}
	if code != wantCode || sum.ExitCode != code || sum.Held != r.Held {
		t.Fatalf("exit %d (json %d, held %v) for row %+v", code, sum.ExitCode, sum.Held, r)
	}
	if _, err := reports.ReadJSON(filepath.Join(r.Dir, "report.json")); err != nil {
		t.Fatalf("the row's reports: %v", err)
	}
	if !strings.Contains(stderr.String(), "SCENARIO") {
		t.Errorf("with --json the table goes to stderr:\n%s", stderr.String())
	}
	junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil || !strings.Contains(string(junit), `name="smoke"`) {
		t.Fatalf("junit.xml: %v\n%s", err, junit)
	}
}

// TestCatalogueStressEndsItsBusyLoopsOnCancel: Ctrl-C (ctx cancelled)
// during a stress run ends the catalogue with exit 2 and leaves none of
// its busy loops (nor a redis-server) running.
func TestCatalogueStressEndsItsBusyLoopsOnCancel(t *testing.T) {
	clustertest.Need(t)
	before := redisServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var out bytes.Buffer
	code := run(ctx, []string{"catalogue", "--stress", "--only", "smoke", "--out", t.TempDir()}, &out, &out)
	if code != exitHarnessError || !strings.Contains(out.String(), "busy loops running, PIDs") || !strings.Contains(out.String(), "interrupted") {
		t.Fatalf("exit %d, want 2 naming the loops and the interruption:\n%s", code, out.String())
	}
	if left, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "-x", "sh").Output(); len(left) > 0 {
		t.Fatalf("busy loops left running: %s", left)
	}
	if after := redisServers(t); after != before {
		t.Fatalf("left redis-servers: before %q after %q", before, after)
	}
}
