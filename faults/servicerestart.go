package faults

import (
	"context"
	"fmt"
	"time"
)

// service-restart: the access service the run started (--service-cmd) is
// restarted the way a deploy does it: SIGTERM to its process group
// (SIGKILL after the grace), the same command started again, readiness
// awaited — all at inject, so the fault is over when Inject returns
// (Completing). Heal starts it again only if it is still down.

const kindServiceRestart = "service-restart"

var serviceRestartKind = Spec{
	Kind:  kindServiceRestart,
	Help:  "restart the access service started with --service-cmd: SIGTERM (SIGKILL after the grace), start again, await readiness",
	Build: func(Values) (Fault, error) { return &serviceRestart{}, nil },
	Rules: serviceRules("restarts the service's process group"),
}

type serviceRestart struct {
	serviceOutage
	graceful bool
}

var (
	_ Fault      = (*serviceRestart)(nil)
	_ Completing = (*serviceRestart)(nil)
)

func (f *serviceRestart) Kind() string            { return kindServiceRestart }
func (f *serviceRestart) Target() string          { return "service" }
func (f *serviceRestart) CompletesOnInject() bool { return true }

func (f *serviceRestart) Inject(ctx context.Context, env *Env) error {
	svc, err := serviceOf(env, kindServiceRestart)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mechanism = "SIGTERM to the service's process group (SIGKILL after the grace), the same command started again, readiness awaited"
	f.pgid = svc.PGID()
	f.graceful = svc.Terminate()
	f.active, f.downAt = true, time.Now()
	env.logf("fault %s: SIGTERM to the service's process group %d (exited within the grace: %v)", kindServiceRestart, f.pgid, f.graceful)
	if err := f.restart(ctx, env, kindServiceRestart); err != nil {
		return err
	}
	return nil
}

func (f *serviceRestart) Heal(ctx context.Context, env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || env == nil || isNil(env.Service) {
		return nil
	}
	if err := f.restart(ctx, env, kindServiceRestart); err != nil {
		return fmt.Errorf("heal: %w", err)
	}
	return nil
}

func (f *serviceRestart) Evidence() map[string]any {
	ev := f.evidence()
	f.mu.Lock()
	ev["exited_within_grace"] = f.graceful
	f.mu.Unlock()
	return ev
}
