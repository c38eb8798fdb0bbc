package faults

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// dispatcher-crash: the send_pending dispatcher of the background pipeline
// (env.Pipeline) dies at inject — sends caught between the MQ and their Redis
// transition are abandoned, so a message may sit in the MQ while its
// reservation is still RESERVED (spec §7.5, §15.4 "预占后杀死 Go 进程 →
// 扫描器最终补发") — and a new one starts at heal. It finds its work in
// send_pending and re-sends with the same message_id: send_pending must
// drain afterwards and duplicates must not make second orders.

const kindDispatcherCrash = "dispatcher-crash"

var dispatcherCrashKind = Spec{
	Kind:  kindDispatcherCrash,
	Help:  "stop the pipeline's send_pending dispatcher (a crash between MQ send and status transition) and restart it at heal; needs the pipeline on",
	Build: newDispatcherCrash,
	Rules: Rules{
		// The harness's own pipeline, not the cluster.
		Destructive:   NotDestructive(),
		NeedsPipeline: "stops the pipeline's send_pending dispatcher",
		PipelineOutage: PipelineOutage{
			Name: "dispatcher crash",
			Consequence: "reservations accepted as it stops would expire before the restarted dispatcher sends them, " +
				"and expiry (correctly) releases never-sent reservations, so the run would not test the re-send",
		},
		Overlap:       Exclusive,
		OverlapTarget: func(map[string]string) Acted { return Acted{Target: "pipeline-dispatcher"} },
	},
}

// pipelineReporter is implemented by pipelines that can describe their
// dispatcher for the evidence (sut/pipeline does).
type pipelineReporter interface {
	DispatcherState() map[string]any
}

type dispatcherCrash struct {
	mu        sync.Mutex
	stopped   bool
	stoppedAt time.Time
	startedAt time.Time
	atStop    map[string]any
	atStart   map[string]any
	crashes   int
}

var _ Fault = (*dispatcherCrash)(nil)

func newDispatcherCrash(Values) (Fault, error) { return &dispatcherCrash{}, nil }

func (f *dispatcherCrash) Kind() string   { return kindDispatcherCrash }
func (f *dispatcherCrash) Target() string { return "pipeline dispatcher" }

func (f *dispatcherCrash) Inject(_ context.Context, env *Env) error {
	if env == nil || env.Pipeline == nil {
		return fmt.Errorf("fault %s: no pipeline in this run (Env.Pipeline is nil): turn the pipeline on to crash its dispatcher", kindDispatcherCrash)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return nil
	}
	env.Pipeline.StopDispatcher()
	f.stopped = true
	f.crashes++
	f.stoppedAt = time.Now()
	if r, ok := env.Pipeline.(pipelineReporter); ok {
		f.atStop = r.DispatcherState()
	}
	env.logf("fault %s: dispatcher stopped", kindDispatcherCrash)
	return nil
}

func (f *dispatcherCrash) Heal(_ context.Context, env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped || env == nil || env.Pipeline == nil {
		return nil
	}
	if r, ok := env.Pipeline.(pipelineReporter); ok {
		f.atStart = r.DispatcherState()
	}
	env.Pipeline.StartDispatcher()
	f.stopped = false
	f.startedAt = time.Now()
	env.logf("fault %s: dispatcher restarted after %s", kindDispatcherCrash, f.startedAt.Sub(f.stoppedAt).Round(time.Millisecond))
	return nil
}

func (f *dispatcherCrash) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{
		"mechanism": "pipeline dispatcher goroutines cancelled (in-flight sends abandoned between the MQ send and the Redis transition), a new dispatcher started at heal",
		"crashes":   f.crashes,
	}
	if !f.stoppedAt.IsZero() {
		ev["stopped_at"] = f.stoppedAt.Format(time.RFC3339Nano)
	}
	if !f.startedAt.IsZero() {
		ev["restarted_at"] = f.startedAt.Format(time.RFC3339Nano)
		ev["down_ms"] = f.startedAt.Sub(f.stoppedAt).Milliseconds()
	}
	if f.atStop != nil {
		ev["at_stop"] = maps.Clone(f.atStop)
	}
	if f.atStart != nil {
		// send_pending here is the backlog the crash left for the new dispatcher.
		ev["at_restart"] = maps.Clone(f.atStart)
	}
	return ev
}
