package faults

import (
	"context"
	"strings"
	"testing"
)

// The kinds that act on the topology refuse an Env without a cluster
// through the one refusal Target.Resolve (and Env.nodes) give, not a check
// of their own; Heal after that refusal is a no-op.
func TestInjectWithoutAClusterIsRefusedByResolve(t *testing.T) {
	for spec, fromResolve := range map[string]bool{
		"failover":                 true,
		"failover:mode=kill":       true,
		"slot-down":                true,
		"slot-migration":           false, // it reads the topology itself (Env.nodes)
		"slot-migration:slots=all": false,
	} {
		p, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		env := &Env{HotSlots: []int{0}}
		err = p.Fault.Inject(context.Background(), env)
		if err == nil || !strings.Contains(err.Error(), errNoCluster.Error()) {
			t.Errorf("%s without a cluster: %v, want %q", spec, err, errNoCluster)
		}
		if fromResolve && (err == nil || !strings.Contains(err.Error(), "target hot-master: ")) {
			t.Errorf("%s without a cluster: %v, want the refusal from Target.Resolve", spec, err)
		}
		if err := p.Fault.Heal(context.Background(), env); err != nil {
			t.Errorf("%s: heal after the refusal: %v", spec, err)
		}
	}
	if _, err := (Target{Role: TargetNode, Node: "127.0.0.1:1"}).Resolve(context.Background(), &Env{}); err == nil ||
		!strings.Contains(err.Error(), errNoCluster.Error()) {
		t.Errorf("Resolve without a cluster: %v", err)
	}
}
