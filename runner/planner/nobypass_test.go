package planner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

// bypassScenario is a short sale with the pipeline on, one bucket, and
// the hot master out of the service's reach (its proxy disabled) for
// 1.5 s in the middle: enough for a service that writes around Redis to
// write orders.
const bypassScenario = `name: bypass
seed: 7
topology: {masters: 3, replicas: 0, node_timeout: 2s}
activity: {stock: 400, buckets: 1, users: 5000, reservation_ttl: 30s}
phases:
  - {name: load, duration: 4s, rate: 150, concurrency: 16, timeout: 1s, retries: 2}
pipeline:
  drain: 5s
faults:
  - {kind: partition, at: 1s, for: 1500ms}
assertions:
  invariants: all
`

// S5 no_bypass against a real service child with the pipeline on: the
// reference service ('seckill-harness serve', state: reference) fails
// closed while the hot master is out of reach and every order comes
// through the order stage (S5 judged and passed); the bypass-to-db defect
// writes orders straight into the run's orders table while Redis cannot
// be reached, and S5 fails naming them.
func TestNoBypassCatchesBypassToDB(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two runs with a service child and PostgreSQL")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server")
	}
	bin := filepath.Join(t.TempDir(), "seckill-harness")
	if out, err := exec.Command("go", "build", "-o", bin, "../..").CombinedOutput(); err != nil {
		t.Fatalf("building seckill-harness: %v\n%s", err, out)
	}
	file := filepath.Join(t.TempDir(), "bypass.yaml")
	if err := os.WriteFile(file, []byte(bypassScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(cmd string) reports.Invariant {
		t.Helper()
		p, err := Load(context.Background(), file, nil, nil, Inputs{Cluster: lifecycle.ClusterSpec{Spec: "local"},
			Overrides: Overrides{ServiceCmd: cmd, ServiceMapping: "../../docs/services/serve.yaml"}})
		if err != nil {
			t.Fatal(err)
		}
		oc, err := lifecycle.Execute(context.Background(), p, lifecycle.Output{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		for _, inv := range oc.Report.Invariants {
			if inv.ID == "S5" {
				t.Logf("%s: S5 %s: %s", cmd, inv.Status, inv.Detail)
				return inv
			}
		}
		t.Fatalf("%s: no S5 in the report", cmd)
		return reports.Invariant{}
	}
	if inv := run("exec " + bin + " serve"); inv.Status != reports.StatusPass {
		t.Errorf("the reference service: S5 %s (%s), want pass with orders judged", inv.Status, inv.Detail)
	}
	if inv := run("exec " + bin + " serve --defect bypass-to-db"); inv.Status != reports.StatusFail {
		t.Errorf("bypass-to-db: S5 %s (%s), want fail", inv.Status, inv.Detail)
	}
}
