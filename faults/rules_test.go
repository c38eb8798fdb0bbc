package faults

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
)

// registerForTest registers a throwaway kind for the length of t (the
// registry is process-wide: other tests iterate Kinds()).
func registerForTest(t *testing.T, s Spec) {
	t.Helper()
	Register(s)
	t.Cleanup(func() {
		regMu.Lock()
		delete(registry, s.Kind)
		regMu.Unlock()
	})
}

// throwaway is a fault that does nothing, for kinds registered by tests.
type throwaway struct{ kind string }

func (f throwaway) Kind() string                       { return f.kind }
func (f throwaway) Target() string                     { return "nothing" }
func (f throwaway) Inject(context.Context, *Env) error { return nil }
func (f throwaway) Heal(context.Context, *Env) error   { return nil }
func (f throwaway) Evidence() map[string]any           { return map[string]any{} }
func newThrowaway(kind string) func(Values) (Fault, error) {
	return func(Values) (Fault, error) { return throwaway{kind}, nil }
}

// throwawayParams are the parameters a throwaway kind takes.
var throwawayParams = []Param{TargetParam, textParam("mode", "", "test mode", nil).Param}

// Every registered kind declares the rules the guard and the validator
// read: none falls back on a default nobody chose.
func TestEveryKindDeclaresItsRules(t *testing.T) {
	if len(Kinds()) == 0 {
		t.Fatal("no kinds registered")
	}
	for _, s := range Kinds() {
		if err := checkRules(s); err != nil {
			t.Error(err)
		}
		if s.Rules.Destructive.why(nil) != "" && !s.Rules.Destructive.may {
			t.Errorf("%s: destructive with its defaults but not listed as destructive", s.Kind)
		}
		if s.Rules.Topology.Masters > 0 && s.Rules.Topology.MastersWhy == "" || s.Rules.Topology.Replicas > 0 && s.Rules.Topology.ReplicasWhy == "" {
			t.Errorf("%s: a topology minimum without its why: %+v", s.Kind, s.Rules.Topology)
		}
		if o := s.Rules.PipelineOutage; o.Name != "" && (o.Consequence == "" || s.Rules.NeedsPipeline == "") {
			t.Errorf("%s: a pipeline outage must say its consequence and need the pipeline: %+v", s.Kind, o)
		}
	}
	// What the kinds of today declare, as the guard, the validator and the
	// --allow-destructive help saw them before the declarations existed
	// (kinds added later are not listed here: they declare their own).
	for kind, want := range map[string][2]bool{ // {destructive, exclusive}
		"failover": {true, true}, "slot-migration": {true, true}, "slow-aof": {true, true},
		"partition": {false, true}, "dispatcher-crash": {false, true},
		"latency": {false, false}, "bandwidth": {false, false}, "slicer": {false, false}, "disconnect-before-reply": {false, false},
	} {
		if got := [2]bool{slices.Contains(DestructiveKinds(), kind), slices.Contains(ExclusiveKinds(), kind)}; got != want {
			t.Errorf("%s: {in DestructiveKinds, in ExclusiveKinds} = %v, want %v", kind, got, want)
		}
	}
	if !slices.IsSorted(DestructiveKinds()) || !slices.IsSorted(ExclusiveKinds()) {
		t.Errorf("not sorted: %v %v", DestructiveKinds(), ExclusiveKinds())
	}
	for _, k := range []string{"latency", "bandwidth", "slicer", "disconnect-before-reply", "partition"} {
		if r, _ := rulesOf(k); r.NeedsProxies == "" {
			t.Errorf("%s does not declare that it needs the proxies", k)
		}
	}
	if r, _ := rulesOf("dispatcher-crash"); r.NeedsPipeline == "" || r.PipelineOutage.Name == "" {
		t.Errorf("dispatcher-crash does not declare its pipeline needs: %+v", r)
	}
	if r, _ := rulesOf("failover"); r.Topology.Replicas != 1 {
		t.Errorf("failover topology: %+v", r.Topology)
	}
	if r, _ := rulesOf("slot-migration"); r.Topology.Masters != 2 {
		t.Errorf("slot-migration topology: %+v", r.Topology)
	}
	if !CompletesOnInject("slot-migration", nil) || !CompletesOnInject("slot-migration", map[string]string{"slots": "bogus"}) || CompletesOnInject("failover", nil) {
		t.Error("CompletesOnInject does not follow the kinds' Completing ability")
	}
}

// Register refuses a kind that leaves a required rule undeclared, naming
// the field and the ways to declare it.
func TestRegisterRefusesUndeclaredRules(t *testing.T) {
	for _, tc := range []struct {
		rules Rules
		want  []string
	}{
		{Rules{Overlap: Stacks}, []string{"Rules.Destructive", "NotDestructive()"}},
		{Rules{Destructive: NotDestructive()}, []string{"Rules.Overlap", "Stacks or Exclusive"}},
		{Rules{}, []string{"Rules.Destructive", "Rules.Overlap"}},
	} {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				for _, w := range tc.want {
					if !strings.Contains(msg, w) || !strings.Contains(msg, `"test-undeclared"`) {
						t.Errorf("Register(%+v) panicked with %q, want it to name %s", tc.rules, msg, w)
					}
				}
			}()
			registerForTest(t, Spec{Kind: "test-undeclared", Params: throwawayParams, Build: newThrowaway("test-undeclared"), Rules: tc.rules})
		}()
	}
	if _, ok := Lookup("test-undeclared"); ok {
		t.Error("an undeclared kind was registered")
	}
}

// The guard reads the declarations: a throwaway kind declared destructive
// for one mode and process-signalling for another is refused and allowed
// exactly as declared, with its own why in the refusal.
func TestGuardReadsDeclarations(t *testing.T) {
	registerForTest(t, Spec{Kind: "test-rules", Params: throwawayParams, Build: newThrowaway("test-rules"), Rules: Rules{
		Destructive: DestructiveWhen(func(p map[string]string) string {
			if p["mode"] == "rewire" {
				return "it rewires the test cluster"
			}
			return ""
		}),
		SignalsProcess: func(p map[string]string) (string, string) {
			if p["mode"] == "zap" {
				return "mode=zap zaps a process", "mode=gentle"
			}
			return "", ""
		},
		Overlap: Stacks,
	}})
	registerForTest(t, Spec{Kind: "test-harmless", Params: throwawayParams, Build: newThrowaway("test-harmless"), Rules: Rules{Destructive: NotDestructive(), Overlap: Exclusive}})

	if !slices.Contains(DestructiveKinds(), "test-rules") || slices.Contains(DestructiveKinds(), "test-harmless") {
		t.Errorf("DestructiveKinds() = %v", DestructiveKinds())
	}
	if !slices.Contains(ExclusiveKinds(), "test-harmless") || slices.Contains(ExclusiveKinds(), "test-rules") {
		t.Errorf("ExclusiveKinds() = %v", ExclusiveKinds())
	}
	if !Destructive("test-rules", map[string]string{"mode": "rewire"}) || Destructive("test-rules", map[string]string{"mode": "gentle"}) || Destructive("test-harmless", nil) {
		t.Error("Destructive does not follow the declarations")
	}
	if !NeedsProcessControl("test-rules", map[string]string{"mode": "zap"}) || NeedsProcessControl("test-rules", nil) {
		t.Error("NeedsProcessControl does not follow the declaration")
	}

	planned := mustParse(t, "test-rules:mode=rewire", "test-rules:mode=zap", "test-rules:mode=gentle", "test-harmless")
	external := fakeCluster{provider: "external"}
	err := CheckAllowed(planned, external, false)
	if err == nil {
		t.Fatal("declared destructive and process-signalling faults allowed on an external cluster")
	}
	msg := err.Error()
	if line := lineWith(msg, `"test-rules:mode=rewire"`); !strings.Contains(line, "refused: it rewires the test cluster, and this external cluster was not created by the harness") || !strings.Contains(line, "--allow-destructive") {
		t.Errorf("destructive refusal: %q", line)
	}
	if line := lineWith(msg, `"test-rules:mode=zap"`); !strings.Contains(line, "refused: mode=zap zaps a process, and the harness did not start") || !strings.HasSuffix(line, "(--cluster local, or docker), or mode=gentle") {
		t.Errorf("process refusal: %q", line)
	}
	if strings.Contains(msg, "mode=gentle\"") || strings.Contains(msg, `"test-harmless"`) {
		t.Errorf("harmless faults refused: %s", msg)
	}
	if err := CheckAllowed(planned, external, true); err == nil || strings.Count(err.Error(), "refused") != 1 || !errors.Is(err, compose.ErrNoProcessControl) {
		t.Errorf("with allowDestructive only zap stays refused: %v", err)
	}
	if err := CheckAllowed(planned, fakeControlled{fakeCluster: fakeCluster{provider: "local", owned: true}}, false); err != nil {
		t.Errorf("local cluster: %v", err)
	}
}

// Available judges a planned fault against a setting by its kind's
// declarations, each refusal naming the fix; a kind's own Available runs
// after them.
func TestAvailable(t *testing.T) {
	full := Setting{Provider: "local", Owned: true, ProcessControl: true, Masters: 3, Replicas: 1, Proxies: true, Pipeline: true}
	for _, spec := range []string{"failover:mode=kill", "slot-migration", "slow-aof", "dispatcher-crash", "latency", "partition:target=hot-replica"} {
		if err := Available(mustParse(t, spec)[0], full); err != nil {
			t.Errorf("%s in a full setting: %v", spec, err)
		}
	}
	bare := Setting{Provider: "external", Masters: 1, Replicas: 0}
	for spec, want := range map[string]string{
		"failover:mode=graceful": "not created by the harness",
		"failover:mode=kill":     "did not start the processes",
		"latency":                "latency needs the proxies (it puts a toxic on the target node's proxy), and this run has none",
		"dispatcher-crash":       "dispatcher-crash stops the pipeline's send_pending dispatcher, but this run has no pipeline",
		"partition":              "partition needs the proxies (it disables the target node's proxy)",
	} {
		if err := Available(mustParse(t, spec)[0], bare); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"`+spec+`"`) {
			t.Errorf("%s on a bare external cluster: %v (want %q)", spec, err, want)
		}
	}
	small := Setting{Provider: "local", Owned: true, ProcessControl: true, Masters: 1, Replicas: 0, Proxies: true, Pipeline: true}
	for spec, want := range map[string]string{
		"failover":                   "failover needs a replica per master, but a master of this local cluster has 0 replica(s): use --replicas 1",
		"slot-migration":             "slot-migration needs another master to move the slot to, but this local cluster has 1 master(s) owning slots: use --masters 2 or more",
		"latency:target=hot-replica": "target=hot-replica needs a replica",
	} {
		if err := Available(mustParse(t, spec)[0], small); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s on one master without replicas: %v (want %q)", spec, err, want)
		}
	}

	// A kind's own Available: consulted only after the declared rules pass.
	var asked []Setting
	registerForTest(t, Spec{Kind: "test-available", Params: throwawayParams, Build: newThrowaway("test-available"), Rules: Rules{
		Destructive: NotDestructive(), Overlap: Stacks, NeedsProxies: "it needs them",
		Available: func(s Setting, p map[string]string) error {
			asked = append(asked, s)
			if _, timed := p["at"]; timed {
				return errors.New("saw at=")
			}
			if s.Masters < 5 {
				return errors.New("needs 5 masters: use --masters 5")
			}
			return nil
		},
	}})
	p := mustParse(t, "test-available:at=1s")[0]
	if err := Available(p, bare); err == nil || !strings.Contains(err.Error(), "needs the proxies") || len(asked) != 0 {
		t.Errorf("own Available before the declared rules: %v, asked %d", err, len(asked))
	}
	if err := Available(p, full); err == nil || err.Error() != `fault "test-available:at=1s": needs 5 masters: use --masters 5` {
		t.Errorf("own Available: %v", err)
	}
	full.Masters = 5
	if err := Available(p, full); err != nil || len(asked) != 2 {
		t.Errorf("own Available with 5 masters: %v (asked %d)", err, len(asked))
	}
}

// SettingOf reads the topology of a real cluster.
func TestSettingOf(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	s, err := SettingOf(ctxT(t, 30*time.Second), testCluster, false, true, false)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := testCluster.Nodes(ctxT(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	masters, replicas := 0, 0
	for _, n := range nodes {
		if n.Role == "master" && len(n.Slots) > 0 {
			masters++
		} else if n.Role == "replica" {
			replicas++
		}
	}
	want := Setting{Provider: compose.ProviderLocal, Owned: true, ProcessControl: true, Masters: masters, Replicas: replicas / masters, Proxies: true}
	if s != want || masters < 1 {
		t.Errorf("SettingOf = %+v, want %+v", s, want)
	}
	if _, err := SettingOf(context.Background(), nil, false, false, false); err == nil {
		t.Error("nil cluster accepted")
	}
}
