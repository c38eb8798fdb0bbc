package faults

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// compensator-crash: the compensation worker of the background pipeline
// (env.Pipeline's release stage) crashes in the middle of releases at
// inject — a worker dies right after its fence (the reservation is left
// RELEASE_PENDING) and another right after its compensate (the unit is back
// but the release was never acknowledged) — and a new one starts at heal.
// The release queue redelivers the unfinished releases to it: a fenced one
// resumes at compensate, which must answer ALREADY_RELEASED when the unit
// is already back. Each release must happen exactly once (I8, P5) and every
// rejected reservation must end RELEASED (P2 after the drain). Inject fails
// when no release was in progress within wait: the crash would not have
// landed in the middle of one.

const kindCompensatorCrash = "compensator-crash"

var compensatorWait = durationParam("wait", 3*time.Second,
	"how long inject waits for releases in progress to crash in; none within it: the injection fails (the load needs order rejects)")

var compensatorCrashKind = Spec{
	Kind:   kindCompensatorCrash,
	Help:   "crash the pipeline's compensation worker in the middle of releases (after a fence, after a compensate) and restart it at heal; needs the pipeline on, with order rejects",
	Params: []Param{compensatorWait.Param},
	Build:  newCompensatorCrash,
	Rules: Rules{
		Destructive:   NotDestructive(),
		NeedsPipeline: "crashes the pipeline's compensation worker",
		PipelineOutage: PipelineOutage{
			Name: "compensator crash",
			Consequence: "rejected reservations left RELEASE_PENDING by the crash would be finished by the expiry checker " +
				"before the restarted worker redelivers them, so the run would not test the redelivery",
		},
		Overlap:       Exclusive,
		OverlapTarget: func(map[string]string) Acted { return Acted{Target: "pipeline-compensator"} },
	},
}

// compensatorControl is what the pipeline offers this kind (sut/pipeline
// implements it).
type compensatorControl interface {
	CrashCompensator(wait time.Duration) int64
	RestartCompensator()
	CompensatorState() map[string]any
}

type compensatorCrash struct {
	wait time.Duration

	mu         sync.Mutex
	crashed    bool
	crashedAt  time.Time
	restarted  time.Time
	midRelease int64
	atCrash    map[string]any
	atRestart  map[string]any
	ctl        compensatorControl
}

var _ Fault = (*compensatorCrash)(nil)

func newCompensatorCrash(v Values) (Fault, error) {
	w := compensatorWait.Of(v)
	if w <= 0 {
		return nil, fmt.Errorf("wait=%s: want a positive duration like 3s", w)
	}
	return &compensatorCrash{wait: w}, nil
}

func (f *compensatorCrash) Kind() string   { return kindCompensatorCrash }
func (f *compensatorCrash) Target() string { return "pipeline compensator" }

func (f *compensatorCrash) control(env *Env) (compensatorControl, error) {
	if env == nil || env.Pipeline == nil {
		return nil, fmt.Errorf("fault %s: no pipeline in this run (Env.Pipeline is nil): turn the pipeline on to crash its compensation worker", kindCompensatorCrash)
	}
	c, ok := env.Pipeline.(compensatorControl)
	if !ok {
		return nil, fmt.Errorf("fault %s: this pipeline (%T) cannot crash its compensation worker", kindCompensatorCrash, env.Pipeline)
	}
	return c, nil
}

func (f *compensatorCrash) Inject(_ context.Context, env *Env) error {
	ctl, err := f.control(env)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return nil
	}
	f.ctl = ctl
	n := ctl.CrashCompensator(f.wait)
	f.crashed, f.crashedAt, f.midRelease = true, time.Now(), f.midRelease+n
	f.atCrash = ctl.CompensatorState()
	if n == 0 {
		ctl.RestartCompensator()
		f.crashed = false
		return fmt.Errorf("fault %s: no release was in progress within wait=%s, so the crash would not land in the middle of one: give the pipeline order rejects (pipeline.order.reject) during the fault", kindCompensatorCrash, f.wait)
	}
	env.logf("fault %s: compensation worker crashed, %d worker(s) in the middle of a release", kindCompensatorCrash, n)
	return nil
}

func (f *compensatorCrash) Heal(_ context.Context, env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.crashed || f.ctl == nil {
		return nil
	}
	f.atRestart = f.ctl.CompensatorState()
	f.ctl.RestartCompensator()
	f.crashed, f.restarted = false, time.Now()
	env.logf("fault %s: compensation worker restarted after %s, %v release(s) queued for it", kindCompensatorCrash,
		f.restarted.Sub(f.crashedAt).Round(time.Millisecond), f.atRestart["queued_releases"])
	return nil
}

func (f *compensatorCrash) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{
		"mechanism":        "release workers die at a crash point of a release (after the fence, after compensate); unfinished releases stay queued with their journal and are redelivered to the restarted workers",
		"died_mid_release": f.midRelease,
	}
	if !f.crashedAt.IsZero() {
		ev["crashed_at"] = f.crashedAt.Format(time.RFC3339Nano)
	}
	if !f.restarted.IsZero() {
		ev["restarted_at"] = f.restarted.Format(time.RFC3339Nano)
		ev["down_ms"] = f.restarted.Sub(f.crashedAt).Milliseconds()
	}
	if f.atCrash != nil {
		ev["at_crash"] = maps.Clone(f.atCrash)
	}
	if f.atRestart != nil {
		ev["at_restart"] = maps.Clone(f.atRestart)
	}
	if f.ctl != nil {
		// How the redelivered releases were answered, as of now.
		ev["now"] = f.ctl.CompensatorState()
	}
	return ev
}
