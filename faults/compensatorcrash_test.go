package faults

import (
	"context"
	"strings"
	"testing"
)

// compensator-crash refuses, naming the problem, a run without a pipeline
// and a pipeline that cannot crash its compensation worker; its parameters
// are checked. Its runs under load (the reference, and a compensate that
// releases twice after the crash) are in sut/pipeline.
func TestCompensatorCrashRefusals(t *testing.T) {
	p, err := Parse("compensator-crash:wait=1s")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Fault.Inject(context.Background(), &Env{}); err == nil || !strings.Contains(err.Error(), "Env.Pipeline is nil") {
		t.Fatalf("inject without a pipeline: %v", err)
	}
	// fakePipeline stops and starts a dispatcher only.
	if err := p.Fault.Inject(context.Background(), &Env{Pipeline: &fakePipeline{}}); err == nil || !strings.Contains(err.Error(), "cannot crash its compensation worker") {
		t.Fatalf("inject into a pipeline without a compensator: %v", err)
	}
	if err := p.Fault.Heal(context.Background(), &Env{}); err != nil {
		t.Fatalf("heal of a fault never injected must be a no-op: %v", err)
	}
	for _, bad := range []string{"compensator-crash:wait=-1s", "compensator-crash:wait=0s", "compensator-crash:target=hot-master"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if r, _ := rulesOf(kindCompensatorCrash); r.NeedsPipeline == "" || r.PipelineOutage.Name == "" || r.Destructive.may {
		t.Errorf("compensator-crash rules: %+v", r)
	}
}
