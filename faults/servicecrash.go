package faults

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// service-crash: the access service crashes between a successful reserve
// and its send. With the pipeline's access-service send on
// (pipeline.dispatcher.scan_after > 0: the service sends each reservation's
// message right after ACCEPTED, the send_pending dispatcher only scans for
// what is left unsent), every reserve answered ACCEPTED from inject to heal
// has its send lost: the reservation is in Redis and in send_pending, and
// no message was sent. Expected: the send_pending scanner sends each of them
// later (evidence: sends_lost_at_crash, recovered_by_scanner), and every
// reservation ends as an order, a rejection or a release (E5, P2).

const kindServiceCrash = "service-crash"

var serviceCrashKind = Spec{
	Kind:  kindServiceCrash,
	Help:  "the access service crashes between a successful reserve and its send until heal: the reservations stay in send_pending for the scanner; needs the pipeline with pipeline.dispatcher.scan_after > 0",
	Build: newServiceCrash,
	Rules: Rules{
		// The harness's own pipeline, not the cluster.
		Destructive:   NotDestructive(),
		NeedsPipeline: "crashes the access service between its reserves and their sends",
		Overlap:       Exclusive,
		OverlapTarget: func(map[string]string) Acted { return Acted{Target: "access-service"} },
	},
}

// serviceControl is what the pipeline offers this kind (sut/pipeline
// implements it).
type serviceControl interface {
	CrashService() bool
	RestartService()
	ServiceState() map[string]any
}

type serviceCrash struct {
	mu        sync.Mutex
	ctl       serviceControl
	crashed   bool
	crashedAt time.Time
	restarted time.Time
	atCrash   map[string]any
	atRestart map[string]any
}

var _ Fault = (*serviceCrash)(nil)

func newServiceCrash(Values) (Fault, error) { return &serviceCrash{}, nil }

func (f *serviceCrash) Kind() string   { return kindServiceCrash }
func (f *serviceCrash) Target() string { return "access service" }

func (f *serviceCrash) Inject(_ context.Context, env *Env) error {
	if env == nil || env.Pipeline == nil {
		return fmt.Errorf("fault %s: no pipeline in this run (Env.Pipeline is nil): turn the pipeline on, with pipeline.dispatcher.scan_after > 0", kindServiceCrash)
	}
	ctl, ok := env.Pipeline.(serviceControl)
	if !ok {
		return fmt.Errorf("fault %s: this pipeline (%T) has no access service to crash", kindServiceCrash, env.Pipeline)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return nil
	}
	if !ctl.CrashService() {
		return fmt.Errorf("fault %s: the access service does not send in this run (pipeline.dispatcher.scan_after is 0: the dispatcher sends everything): set pipeline.dispatcher.scan_after, e.g. 500ms", kindServiceCrash)
	}
	f.ctl, f.crashed, f.crashedAt = ctl, true, time.Now()
	f.atCrash = ctl.ServiceState()
	env.logf("fault %s: the access service crashed: reserves answer, their sends are lost", kindServiceCrash)
	return nil
}

func (f *serviceCrash) Heal(_ context.Context, env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.crashed || f.ctl == nil {
		return nil
	}
	f.ctl.RestartService()
	f.atRestart = f.ctl.ServiceState()
	f.crashed, f.restarted = false, time.Now()
	env.logf("fault %s: access service restarted after %s; %v send(s) lost, left to the send_pending scanner", kindServiceCrash,
		f.restarted.Sub(f.crashedAt).Round(time.Millisecond), f.atRestart["sends_lost_at_crash"])
	return nil
}

func (f *serviceCrash) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{
		"mechanism": "every reserve answered ACCEPTED while the service is down skips the service's own MQ send; the reservation waits in send_pending for the scanner (the dispatcher, scanning members unsent for scan_after)",
	}
	if !f.crashedAt.IsZero() {
		ev["crashed_at"] = f.crashedAt.Format(time.RFC3339Nano)
		ev["at_crash"] = maps.Clone(f.atCrash)
	}
	if !f.restarted.IsZero() {
		ev["restarted_at"] = f.restarted.Format(time.RFC3339Nano)
		ev["down_ms"] = f.restarted.Sub(f.crashedAt).Milliseconds()
		ev["at_restart"] = maps.Clone(f.atRestart)
	}
	if f.ctl != nil {
		// The scanner's recoveries, as of now (after the drain in a report).
		ev["now"] = f.ctl.ServiceState()
	}
	return ev
}
