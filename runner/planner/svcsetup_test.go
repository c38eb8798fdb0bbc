package planner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/runner/lifecycle"
)

// salesScenario sells 8,000 units: the figure the service must be given.
const salesScenario = `name: sales
seed: 7
topology: {masters: 3, replicas: 0, node_timeout: 2s}
activity: {stock: 8000, buckets: 2, users: 5000, reservation_ttl: 30s}
phases:
  - {name: load, duration: %s, rate: 100, concurrency: 8, timeout: 1s, retries: 2}
`

// salesMapping creates the sale through testdata/salesservice's admin API
// and removes it after the run.
const salesMapping = `name: sales
query: ~
release: ~
setup:
  - {path: /admin/sales, body: {sale: "${activity}", units: stock}}
teardown:
  - {method: DELETE, path: "/admin/sales/${activity}"}
`

// salesFiles builds testdata/salesservice and writes the scenario (its
// load lasting dur) and the mapping.
func salesFiles(t *testing.T, dur string) (bin, scenario, mapping string) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server")
	}
	dir := t.TempDir()
	bin = filepath.Join(dir, "salesservice")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/salesservice").CombinedOutput(); err != nil {
		t.Fatalf("building salesservice: %v\n%s", err, out)
	}
	scenario, mapping = filepath.Join(dir, "sales.yaml"), filepath.Join(dir, "sales-mapping.yaml")
	if err := os.WriteFile(scenario, []byte(fmt.Sprintf(salesScenario, dur)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mapping, []byte(salesMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, scenario, mapping
}

// adminCalls are the service's admin lines in its stderr log.
func adminCalls(t *testing.T, dir, what string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "service-stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`salesservice: `+what+`\S*`).FindAllString(string(b), -1)
}

// A service set up and torn down through its own API (the mapping's
// setup: and teardown:): the child is started and ready before the setup
// call, which gives it the run's activity and the scenario's stock (8,000,
// not another figure); the load then sells from that sale (ACCEPTED
// answers, no INVALID: a reserve before the setup would be INVALID); the
// teardown call runs once after the run, removing the service's keys, also
// when the run is interrupted in the middle of its load.
func TestServiceSetUpThroughItsAPI(t *testing.T) {
	clustertest.Need(t)
	bin, scenario, mapping := salesFiles(t, "1500ms")
	p, err := Load(context.Background(), scenario, nil, nil, Inputs{Cluster: lifecycle.ClusterSpec{Spec: "local"},
		Overrides: Overrides{ServiceCmd: "exec " + bin, ServiceMapping: mapping}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Stock != 8000 {
		t.Fatalf("the plan's stock %d: want the scenario's 8000", p.Stock)
	}
	dir := t.TempDir()
	oc, err := lifecycle.Execute(context.Background(), p, lifecycle.Output{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	id := oc.Activity.ID
	setups, teardowns := adminCalls(t, dir, "setup sale=\\S+ units="), adminCalls(t, dir, "teardown sale=\\S+ removed=")
	t.Logf("service's admin calls: %q %q; answers %v", setups, teardowns, oc.Report.Service.Answers)
	if want := fmt.Sprintf("salesservice: setup sale=%s units=%d", id, p.Stock); len(setups) != 1 || setups[0] != want {
		t.Fatalf("setup calls the service received: %q, want exactly [%q]", setups, want)
	}
	if want := "salesservice: teardown sale=" + id + " removed=2"; len(teardowns) != 1 || teardowns[0] != want {
		t.Fatalf("teardown calls the service received: %q, want exactly [%q] (its two keys removed)", teardowns, want)
	}
	if notes := strings.Join(oc.Report.SystemUnderTest.Notes, "\n"); !strings.Contains(notes, "1 setup call(s)") || !strings.Contains(notes, "1 teardown call(s)") {
		t.Fatalf("system_under_test.notes %q: want the setup and teardown calls stated", notes)
	}
	if a := oc.Report.Service.Answers; a["ACCEPTED"] == 0 || a["INVALID"] != 0 {
		t.Fatalf("the load's answers %v: want ACCEPTED from the sale set up before it, no INVALID", a)
	}

	// Interrupted in the middle of a long load: the teardown still runs, once.
	bin, scenario, mapping = salesFiles(t, "60s")
	p, err = Load(context.Background(), scenario, nil, nil, Inputs{Cluster: lifecycle.ClusterSpec{Spec: "local"},
		Overrides: Overrides{ServiceCmd: "exec " + bin, ServiceMapping: mapping}})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		for i := 0; i < 1200; i++ {
			if b, _ := os.ReadFile(filepath.Join(dir, "service-stderr.log")); strings.Contains(string(b), "setup sale=") {
				time.Sleep(2 * time.Second)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	oc, err = lifecycle.Execute(ctx, p, lifecycle.Output{Dir: dir})
	cancel()
	if oc == nil || oc.RunErr == nil {
		t.Fatalf("the load was not interrupted (Execute: %v)", err)
	}
	setups, teardowns = adminCalls(t, dir, "setup sale=\\S+"), adminCalls(t, dir, "teardown sale=\\S+")
	if want := "salesservice: teardown sale=" + oc.Activity.ID; len(setups) != 1 || len(teardowns) != 1 || teardowns[0] != want {
		t.Fatalf("interrupted run: setup calls %q, teardown calls %q: want one of each, the teardown of %s", setups, teardowns, oc.Activity.ID)
	}
}

// A setup call the service answers 500 (with a 100 KiB body) ends the run
// before the load with exit 2, naming the call, its status and the fix,
// quoting no more than a few dozen bytes of the body; no report is written
// and the service child's process group is gone.
func TestServiceSetupFailureExits2(t *testing.T) {
	clustertest.Need(t)
	sales, scenario, mapping := salesFiles(t, "2s")
	dir := t.TempDir()
	harness := filepath.Join(dir, "seckill-harness")
	if out, err := exec.Command("go", "build", "-o", harness, "../..").CombinedOutput(); err != nil {
		t.Fatalf("building seckill-harness: %v\n%s", err, out)
	}
	pidFile, out := filepath.Join(dir, "pid"), filepath.Join(dir, "out")
	cmd := exec.Command(harness, "run", scenario, "--service-cmd", "echo $$ > "+pidFile+"; exec "+sales+" -fail-setup",
		"--service-mapping", mapping, "--out", out, "--progress", "off")
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("run: %v, want exit 2\n%s", err, b)
	}
	text := string(b)
	t.Logf("exit %d: %s", ee.ExitCode(), lastLine(text))
	for _, w := range []string{"setup[1] POST /admin/sales answered HTTP 500", "want a 2xx status", "fix: make the service answer it", "setup[1] at " + mapping + ":5"} {
		if !strings.Contains(text, w) {
			t.Errorf("the output lacks %q:\n%s", w, lastLine(text))
		}
	}
	n := 0
	for _, run := range regexp.MustCompile(`Z{8,}`).FindAllString(text, -1) {
		n += len(run)
	}
	if n > 48 {
		t.Errorf("the output quotes %d bytes of the 100 KiB answer, want at most 48", n)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
		t.Error("a report.json was written for a run whose setup failed")
	}
	raw, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if pid == 0 {
		t.Fatal("the service child never started")
	}
	if syscall.Kill(-pid, 0) == nil {
		t.Fatalf("process group %d of the service still runs after the failed setup", pid)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
