package faults

import (
	"context"
	"fmt"
	"time"
)

// service-kill: the access service the run started (--service-cmd)
// crashes: SIGKILL to its process group at inject, so requests in flight
// lose their answers and whatever it held in memory is gone (a reserve
// answered by Redis but not yet sent on: spec §7.5's "process crashed
// after reserve"). At heal the same command is started again and its
// readiness awaited.

const kindServiceKill = "service-kill"

var serviceKillKind = Spec{
	Kind:  kindServiceKill,
	Help:  "SIGKILL the access service started with --service-cmd (its process group), start it again at heal and await its readiness",
	Build: func(Values) (Fault, error) { return &serviceKill{}, nil },
	Rules: serviceRules("kills the service's process group"),
}

type serviceKill struct{ serviceOutage }

var _ Fault = (*serviceKill)(nil)

func (f *serviceKill) Kind() string   { return kindServiceKill }
func (f *serviceKill) Target() string { return "service" }

func (f *serviceKill) Inject(_ context.Context, env *Env) error {
	svc, err := serviceOf(env, kindServiceKill)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mechanism = "SIGKILL to the service's process group; the same command started again at heal, readiness awaited"
	if f.active {
		return nil
	}
	f.pgid = svc.PGID()
	if err := svc.Kill(); err != nil {
		return fmt.Errorf("fault %s: %w", kindServiceKill, err)
	}
	f.active, f.downAt = true, time.Now()
	env.logf("fault %s: SIGKILL to the service's process group %d", kindServiceKill, f.pgid)
	return nil
}

func (f *serviceKill) Heal(ctx context.Context, env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || env == nil || isNil(env.Service) {
		return nil
	}
	return f.restart(ctx, env, kindServiceKill)
}

// restart starts the service again (the caller holds mu) and records it.
func (o *serviceOutage) restart(ctx context.Context, env *Env, kind string) error {
	t0 := time.Now()
	if err := env.Service.Restart(ctx); err != nil {
		o.healErr = err
		return fmt.Errorf("fault %s: starting the service again: %w", kind, err)
	}
	o.active, o.upAt = false, time.Now()
	o.newPGID, o.readyMs = env.Service.PGID(), time.Since(t0).Milliseconds()
	env.logf("fault %s: the service is up again (process group %d, ready after %d ms)", kind, o.newPGID, o.readyMs)
	return nil
}

func (f *serviceKill) Evidence() map[string]any { return f.evidence() }
