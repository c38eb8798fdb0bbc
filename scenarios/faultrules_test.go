package scenarios

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"seckill-harness/faults"
)

// Two throwaway fault kinds, registered for this test binary only, with
// rules no real kind has: the validator must follow their declarations
// (it keeps no list of kinds of its own).
func init() {
	faults.Register(faults.Spec{Kind: "zz-test-node", Help: "test kind", Params: []faults.Param{faults.TargetParam},
		Build: newRulesTestFault,
		Rules: faults.Rules{
			Destructive: faults.NotDestructive(),
			Overlap:     faults.Exclusive,
			Topology:    faults.Topology{Masters: 4, MastersWhy: "four masters to test on", Replicas: 2, ReplicasWhy: "two replicas per master"},
		}})
	faults.Register(faults.Spec{Kind: "zz-test-stall", Help: "test kind",
		Build: newRulesTestFault,
		Rules: faults.Rules{
			Destructive:    faults.NotDestructive(),
			NeedsPipeline:  "stalls the test stage of the pipeline",
			PipelineOutage: faults.PipelineOutage{Name: "test stall", Consequence: "the test stage would never catch up"},
			Overlap:        faults.Exclusive,
			OverlapTarget:  func(map[string]string) faults.Acted { return faults.Acted{Target: "test-stage"} },
		}})
}

type rulesTestFault struct{}

func newRulesTestFault(faults.Values) (faults.Fault, error)      { return rulesTestFault{}, nil }
func (rulesTestFault) Kind() string                              { return "zz-test" }
func (rulesTestFault) Target() string                            { return "nothing" }
func (rulesTestFault) Inject(context.Context, *faults.Env) error { return nil }
func (rulesTestFault) Heal(context.Context, *faults.Env) error   { return nil }
func (rulesTestFault) Evidence() map[string]any                  { return nil }

// The validator's fault checks come from the kinds' declarations: the
// topology minimum, the pipeline, the pipeline outage against the
// reservation TTL, the overlap rule (exclusive kinds, what they act on) and
// the after phase of kinds that complete on inject.
func TestValidatorReadsFaultRules(t *testing.T) {
	errOf := func(src string) string {
		t.Helper()
		err := mustParse(t, src).Validate()
		if err == nil {
			return ""
		}
		return err.Error()
	}

	// Topology: declared minimums, with the kind's why and the fix.
	msg := errOf("topology: {masters: 3, replicas: 1}\nphases: [{duration: 10s}]\nfaults: [{kind: zz-test-node, at: 1s}]\n")
	for _, want := range []string{
		"faults[0].kind: zz-test-node needs two replicas per master, but topology.replicas is 1: set topology.replicas: 2",
		"faults[0].kind: zz-test-node needs four masters to test on, but topology.masters is 3: set topology.masters: 4 or more",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("topology: want %q in\n%s", want, msg)
		}
	}
	if msg := errOf("topology: {masters: 4, replicas: 2}\nphases: [{duration: 10s}]\nfaults: [{kind: zz-test-node, at: 1s}]\n"); msg != "" {
		t.Errorf("enough topology: %s", msg)
	}
	// The real kinds' declarations, as the validator printed them before.
	msg = errOf("topology: {masters: 1, replicas: 0}\nphases: [{duration: 30s}]\nfaults:\n  - {kind: failover, at: 1s, for: 2s}\n  - {kind: slot-migration, at: 10s}\n")
	for _, want := range []string{
		"faults[0].kind: failover needs a replica per master, but topology.replicas is 0: set topology.replicas: 1",
		"faults[1].kind: slot-migration needs another master to move the slot to, but topology.masters is 1: set topology.masters: 2 or more",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("real kinds' topology: want %q in\n%s", want, msg)
		}
	}

	// The pipeline: needed, and its outage against the reservation TTL.
	msg = errOf("activity: {reservation_ttl: 5s}\nphases: [{duration: 10s}]\nfaults: [{kind: zz-test-stall, at: 2s, for: 6s}]\n")
	for _, want := range []string{
		"faults[0].kind: zz-test-stall stalls the test stage of the pipeline, but this scenario has no pipeline (no pipeline: section)",
		"activity.reservation_ttl: 5s does not exceed the 6s test stall of faults[0] (test.yaml:3, at 2s for 6s): the test stage would never catch up; keep the TTL well above the test stall (e.g. reservation_ttl: 18s)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("pipeline: want %q in\n%s", want, msg)
		}
	}
	if msg := errOf("phases: [{duration: 10s}]\npipeline: {}\nfaults: [{kind: zz-test-stall, at: 2s, for: 6s}]\n"); msg != "" {
		t.Errorf("stall with a pipeline and the default TTL: %s", msg)
	}

	// Overlap: the exclusive kinds are the declared ones, all-masters
	// covers a node kind but not a kind acting on something else.
	msg = errOf(`
topology: {masters: 4, replicas: 2}
phases: [{duration: 30s}]
pipeline: {}
faults:
  - {kind: zz-test-node, at: 1s, for: 5s, target: hot-master}
  - {kind: failover, at: 2s, for: 2s, target: all-masters}
  - {kind: zz-test-stall, at: 1s, for: 5s}
  - {kind: partition, at: 2s, for: 2s, target: all-masters}
`)
	overlap := regexp.MustCompile(`faults\[1\]: failover on all-masters during \[2s, 4s\) overlaps faults\[0\] \(zz-test-node on hot-master during \[1s, 6s\)\): ([a-z/-]+) faults on one target`)
	m := overlap.FindStringSubmatch(msg)
	if m == nil || m[1] != strings.Join(faults.ExclusiveKinds(), "/") || !strings.Contains(m[1], "zz-test-node") || !strings.Contains(m[1], "dispatcher-crash") {
		t.Errorf("overlap of a declared exclusive kind: %v in\n%s", m, msg)
	}
	if strings.Contains(msg, "overlaps faults[2]") || strings.Contains(msg, "(zz-test-stall") {
		t.Errorf("a kind acting on no node overlapped all-masters:\n%s", msg)
	}
	if n := strings.Count(msg, "overlaps"); n != 3 { // [1]~[0], [3]~[0], [3]~[1]
		t.Errorf("%d overlaps, want 3:\n%s", n, msg)
	}

	// After phases: a kind that completes on inject (slot-migration) has
	// one without for:, another kind does not.
	msg = errOf(`
phases: [{duration: 30s}]
faults:
  - {kind: slot-migration, at: 1s}
  - {kind: failover, at: 10s}
assertions:
  slo:
    - {phase: after slot-migration, p99: 1s}
    - {phase: after failover, p99: 1s}
`)
	if !strings.Contains(msg, `assertions.slo[1].phase: "after failover": fault failover lasts until the end of the load`) || strings.Contains(msg, "slo[0]") {
		t.Errorf("after phases:\n%s", msg)
	}
}
