package planner

import (
	"context"
	"strings"
	"testing"

	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

const shapesDir = "../../sut/adapter/testdata/shapes/"

func runShape(t *testing.T, scenario string, sets []string, ov Overrides) *reports.Report {
	t.Helper()
	p, err := Load(context.Background(), scenario, sets, nil, Inputs{Cluster: lifecycle.ClusterSpec{Spec: "local"}, Overrides: ov})
	if err != nil {
		t.Fatal(err)
	}
	oc, err := lifecycle.Execute(context.Background(), p, lifecycle.Output{})
	if err != nil {
		t.Fatalf("%s (adapter %q): %v", scenario, ov.Adapter, err)
	}
	for _, inv := range oc.Report.Invariants {
		t.Logf("%s %s: %.300s", inv.ID, inv.Status, inv.Detail)
	}
	return oc.Report
}

// A script whose only KEYS entry is the hash tag and which builds its
// keys in that slot runs on Redis Cluster: the run does not refuse it.
// Under slot-migration the load runs with A1 failed (naming the built
// keys) and the other checks judge it; with --strict-preflight the same
// file is refused before the load.
func TestTagOnlyKeysRunUnderSlotMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two loads on local clusters")
	}
	sets := []string{"phases.0.mix.release=0", "phases.0.duration=6s", "phases.0.rate=600", "faults.0.at=1s"}
	rep := runShape(t, "slot-migration", sets, Overrides{Adapter: shapesDir + "tag-only-keys.yaml"})
	a1 := invariant(rep, "A1")
	if a1.Status != reports.StatusFail || !strings.Contains(a1.Detail, "the load ran") || !strings.Contains(a1.Detail, "tag-only-keys.lua:27") {
		t.Errorf("A1 %s: %s; want failed, the load ran, the stock key at tag-only-keys.lua:27", a1.Status, a1.Detail)
	}
	if rep.Totals.Ops == 0 {
		t.Fatal("no operation sent: the pre-flight refused a script Redis runs")
	}
	judged := 0
	for _, id := range []string{"I1", "I2", "I3", "I4", "I5", "I6"} {
		if inv := invariant(rep, id); inv.Status == reports.StatusPass || inv.Status == reports.StatusFail {
			judged++
		}
	}
	if judged < 5 {
		t.Errorf("only %d of I1-I6 judged: the other verdicts are not reported", judged)
	}
	if k1 := invariant(rep, "K1"); k1.Status != reports.StatusPass && k1.Status != reports.StatusFail {
		t.Errorf("K1 %s (%s): the keys the file lists in built_keys were not read", k1.Status, k1.Detail)
	}
	for _, f := range rep.Faults {
		t.Logf("fault %s: healed %v %s; ASK/MOVED %v, TRYAGAIN %v, keys moved %v, inject error %v", f.Name, f.Healed, f.HealError,
			f.Evidence["history.moved_ask_answers"], f.Evidence["history.tryagain_answers"], f.Evidence["keys_moved"], f.Evidence["inject_error"])
	}
	strict := runShape(t, "slot-migration", sets, Overrides{Adapter: shapesDir + "tag-only-keys.yaml", StrictPreflight: true})
	if a1 := invariant(strict, "A1"); a1.Status != reports.StatusFail || !strings.Contains(a1.Detail, "refused before the load") || strict.Totals.Ops != 0 {
		t.Errorf("--strict-preflight: A1 %s (%s), %d ops; want refused before the load, no operation", a1.Status, a1.Detail, strict.Totals.Ops)
	}
}

// A per-user count compared as a string with a number fails only on a
// user's second request while stock remains: the pre-flight's sample
// reaches it and refuses the load with the script error at its line.
func TestPerUserScriptErrorRefusedBeforeTheLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	rep := runShape(t, "smoke", []string{"phases.0.duration=1s", "phases.1.duration=2s"}, Overrides{Adapter: shapesDir + "per-user-count.yaml"})
	a1 := invariant(rep, "A1")
	if a1.Status != reports.StatusFail || !strings.Contains(a1.Detail, "per-user-count.lua:11: script fails (script-error)") ||
		!strings.Contains(a1.Detail, "refused before the load") || rep.Totals.Ops != 0 || rep.Passed {
		t.Fatalf("A1 %s (%s), %d ops, passed %v; want refused before the load with the script error at per-user-count.lua:11", a1.Status, a1.Detail, rep.Totals.Ops, rep.Passed)
	}
}
