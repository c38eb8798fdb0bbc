package faults

import (
	"context"
	"fmt"
	"time"
)

// service-pause: the access service the run started (--service-cmd)
// hangs: SIGSTOP to its process group at inject — its sockets stay open,
// it answers nothing (a stop-the-world pause, a debugger, a starved
// container) — and SIGCONT at heal. Requests in flight wait or time out
// on the client's side: UNKNOWN, never failed.

const kindServicePause = "service-pause"

var servicePauseKind = Spec{
	Kind:  kindServicePause,
	Help:  "SIGSTOP the access service started with --service-cmd (its process group) until heal (SIGCONT)",
	Build: func(Values) (Fault, error) { return &servicePause{}, nil },
	Rules: serviceRules("freezes the service's process group"),
}

type servicePause struct{ serviceOutage }

var _ Fault = (*servicePause)(nil)

func (f *servicePause) Kind() string   { return kindServicePause }
func (f *servicePause) Target() string { return "service" }

func (f *servicePause) Inject(_ context.Context, env *Env) error {
	svc, err := serviceOf(env, kindServicePause)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mechanism = "SIGSTOP to the service's process group, SIGCONT at heal"
	if f.active {
		return nil
	}
	f.pgid = svc.PGID()
	if err := svc.Pause(); err != nil {
		return fmt.Errorf("fault %s: %w", kindServicePause, err)
	}
	f.active, f.downAt = true, time.Now()
	env.logf("fault %s: SIGSTOP to the service's process group %d", kindServicePause, f.pgid)
	return nil
}

func (f *servicePause) Heal(_ context.Context, env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || env == nil || isNil(env.Service) {
		return nil
	}
	if err := env.Service.Resume(); err != nil {
		f.healErr = err
		return fmt.Errorf("fault %s: %w", kindServicePause, err)
	}
	f.active, f.upAt = false, time.Now()
	env.logf("fault %s: SIGCONT to the service's process group %d after %s", kindServicePause, f.pgid, f.upAt.Sub(f.downAt).Round(time.Millisecond))
	return nil
}

func (f *servicePause) Evidence() map[string]any { return f.evidence() }
