package faults

// What the service kinds (service-kill, service-pause, service-restart)
// share: their rules, the service they act on, and the evidence of one
// outage of it.

import (
	"fmt"
	"sync"
	"time"
)

// serviceRules are the rules of the service kinds: they act on the access
// service the harness started (its own child, not the cluster), one at a
// time.
func serviceRules(why string) Rules {
	return Rules{
		Destructive:   NotDestructive(),
		NeedsService:  why,
		Overlap:       Exclusive,
		OverlapTarget: func(map[string]string) Acted { return Acted{Target: "service"} },
	}
}

// serviceOf is env's service child, or the refusal of kind without one.
func serviceOf(env *Env, kind string) (ServiceControl, error) {
	if env == nil || isNil(env.Service) {
		return nil, fmt.Errorf("fault %s: this run started no service (Env.Service is nil): give --service-cmd 'CMD'", kind)
	}
	return env.Service, nil
}

// serviceOutage records one outage of the service for the evidence.
type serviceOutage struct {
	mu        sync.Mutex
	mechanism string
	pgid      int // the process group acted on
	newPGID   int // the process group after the heal (a new start)
	downAt    time.Time
	upAt      time.Time
	readyMs   int64 // how long the restart took to be ready
	healErr   error
	active    bool
}

func (o *serviceOutage) evidence() map[string]any {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev := map[string]any{"mechanism": o.mechanism}
	if o.pgid != 0 {
		ev["process_group"] = o.pgid
	}
	if !o.downAt.IsZero() {
		ev["down_at"] = o.downAt.Format(time.RFC3339Nano)
	}
	if !o.upAt.IsZero() {
		ev["up_at"] = o.upAt.Format(time.RFC3339Nano)
		ev["down_ms"] = o.upAt.Sub(o.downAt).Milliseconds()
	}
	if o.newPGID != 0 {
		ev["process_group_after"] = o.newPGID
		ev["ready_after_restart_ms"] = o.readyMs
	}
	if o.healErr != nil {
		ev["heal_error"] = o.healErr.Error()
	}
	return ev
}
