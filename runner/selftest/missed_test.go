package selftest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"seckill-harness/faults"
)

// slowFault is a fault whose Inject returns after delay and touches
// nothing: the timeline records when it took effect.
type slowFault struct{ delay time.Duration }

func (f slowFault) Kind() string   { return "slow" }
func (f slowFault) Target() string { return "nothing" }
func (f slowFault) Inject(context.Context, *faults.Env) error {
	time.Sleep(f.delay)
	return nil
}
func (f slowFault) Heal(context.Context, *faults.Env) error { return nil }
func (f slowFault) Evidence() map[string]any                { return nil }

// A fault that took effect after the load's last send is named as the
// stand's miss (made again by runOne); one that took effect inside the
// load, or was never injected (reported apart), is not.
func TestFaultAfterLoadIsTheStandsMiss(t *testing.T) {
	run := func(delay time.Duration, at time.Duration, load time.Duration) error {
		p := &faults.Planned{Spec: "slow:at=" + at.String(), Kind: "slow", At: at, Fault: slowFault{delay}}
		tl := &faults.Timeline{Env: &faults.Env{Logf: t.Logf}, Items: []*faults.Planned{p}}
		tl.Start(context.Background(), time.Now())
		time.Sleep(load)
		tl.Stop()
		if err := tl.HealAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		return faultAfterLoad([]*faults.Planned{p}, load)
	}
	if err := run(300*time.Millisecond, 0, 100*time.Millisecond); !errors.Is(err, errMissedLoad) || !strings.Contains(err.Error(), "slow:at=0s took effect at 0.") {
		t.Errorf("a fault in force 300 ms into a 100 ms load: %v, want errMissedLoad naming it", err)
	}
	if err := run(0, 0, 200*time.Millisecond); err != nil {
		t.Errorf("a fault in force at once in a 200 ms load: %v, want nil", err)
	}
	if err := run(0, time.Hour, 50*time.Millisecond); err != nil {
		t.Errorf("a fault never injected: %v, want nil (reported as not injected)", err)
	}
}
