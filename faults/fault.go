// Package faults injects real faults into the cluster under load: one fault
// per file, named after its kind, each declared as a Spec with its typed
// parameters (params.go) and listed in registry.go; plan.go turns a fault's
// text into a Planned fault and timeline.go runs them.
//
// A fault follows the roachtest shape: Inject makes it really happen (a
// killed process, a migrated slot, a reset on the wire, a slowed AOF flush);
// Heal undoes it and is idempotent and safe after a failed or partial Inject;
// Evidence says what happened, with figures, for the report. The Timeline
// runs planned faults at offsets from the start of the load and heals every
// one of them on the way out, whatever the way out is.
//
// Each kind's Spec has Rules that declare what the kind is allowed
// and able to do (destructive or not, process signals, proxies, pipeline,
// overlap, topology, availability on a cluster): the safety guard
// (CheckAllowed), Available and the scenario validator read them.
package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
)

// Env is what a fault acts on. Faults only touch the processes, proxies and
// slots named here, and only ones the harness itself started or owns.
type Env struct {
	// Cluster is the cluster under test: local processes, containers or an
	// external cluster. Process-level kinds (failover mode=kill|pause,
	// slot-down) need its compose.ProcessController; see CheckAllowed for
	// the safety guard.
	Cluster compose.Cluster
	// Proxies is the toxiproxy layer in front of the nodes (embedded
	// *compose.Proxies or a remote server's *compose.RemoteProxies); nil:
	// none (network kinds refuse).
	Proxies compose.Toxics
	// Client is the load's cluster client: faults that move slots or masters
	// call ReloadState on it so it routes around promptly.
	Client *redis.ClusterClient
	// HotSlots are the slots of the activity's buckets as the system under
	// test keeps them, the hot one (bucket 0) first: what hot-master,
	// hot-replica and slot-migration's slots=hot|all aim at. Empty with
	// Traffic set: the target is observed at Inject (AimObserved).
	HotSlots []int
	// AimedBy says how HotSlots were chosen (AimReference, or the system's
	// own words: sut.SaleKeys; "": AimReference).
	AimedBy string
	// Traffic, when set, reads the system's Redis traffic per master
	// (servers.Sampler): the observed target when HotSlots is empty.
	Traffic Traffic
	// Log, when set, receives the faults' log lines: injections and heals
	// at Info, an inject or heal that failed at Warn. Logf, when Log is
	// nil, receives the same lines as text (both nil: none).
	Log  *slog.Logger
	Logf func(format string, args ...any)
	// Pipeline is the background order pipeline (dispatcher, order, release,
	// expiry stages) when the run has one; nil otherwise (dispatcher-crash refuses).
	Pipeline PipelineControl
	// SoldOutNotices is the reserve path's local sold-out flag when the run
	// has one (--local-soldout); nil otherwise (soldout-notice-lost refuses).
	SoldOutNotices SoldOutNotices
	// Service is the access service the run started as a child
	// (--service-cmd); nil otherwise (the service kinds refuse).
	Service ServiceControl
}

// ServiceControl is what the service kinds do to the access service the
// run started as a child (sut/servicechild.Child implements it): signals
// to the process group the harness created, and a start of the same
// command that awaits its readiness.
type ServiceControl interface {
	Kill() error                       // SIGKILL, reaped; down until Restart
	Pause() error                      // SIGSTOP
	Resume() error                     // SIGCONT; idempotent
	Terminate() bool                   // SIGTERM, SIGKILL after the grace; true: exited within it
	Restart(ctx context.Context) error // stop if running, start again, await readiness
	PGID() int                         // the running process group; 0: down
	Starts() int                       // starts so far
}

// PipelineControl is what faults may do to the background pipeline:
// stop its send_pending dispatcher (a crash) and start it again.
type PipelineControl interface {
	StopDispatcher()
	StartDispatcher()
}

// cluster is e.Cluster, or nil when e, the field, or the pointer in it is nil
// (a nil *compose.LocalCluster stored in the interface is not a cluster).
func (e *Env) cluster() compose.Cluster {
	if e == nil || isNil(e.Cluster) {
		return nil
	}
	return e.Cluster
}

// processControl returns the cluster's process control. Without it (a
// cluster the harness did not start) the error reads "<does>, but this is
// a <provider> cluster" and wraps compose.ErrNoProcessControl; without a
// cluster it is errNoCluster.
func (e *Env) processControl(does string) (compose.ProcessController, error) {
	c := e.cluster()
	if c == nil {
		return nil, fmt.Errorf("%s: %w", does, errNoCluster)
	}
	pc, ok := compose.ProcessControl(c)
	if !ok {
		return nil, fmt.Errorf("%s, but this is a %s cluster: %w", does, c.Provider(), compose.ErrNoProcessControl)
	}
	return pc, nil
}

// errNoCluster is the refusal of a fault that needs the cluster's
// topology in an Env without a cluster.
var errNoCluster = errors.New("no cluster in the environment")

// nodes is the cluster's live topology (compose.Cluster.Nodes); without a
// cluster, errNoCluster. Target.Resolve and the kinds that read the
// topology themselves go through it, so each refuses a missing cluster.
func (e *Env) nodes(ctx context.Context) ([]compose.Node, error) {
	if e.cluster() == nil {
		return nil, errNoCluster
	}
	return e.cluster().Nodes(ctx)
}

// proxies is e.Proxies, or nil when e, the field, or the pointer in it is nil.
func (e *Env) proxies() compose.Toxics {
	if e == nil || isNil(e.Proxies) {
		return nil
	}
	return e.Proxies
}

// isNil reports whether v is nil or an interface holding a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func (e *Env) logf(format string, args ...any) { e.logAt(slog.LevelInfo, format, args...) }

// warnf logs what went wrong with a fault (an inject or heal that failed).
func (e *Env) warnf(format string, args ...any) { e.logAt(slog.LevelWarn, format, args...) }

func (e *Env) logAt(level slog.Level, format string, args ...any) {
	switch {
	case e.Log != nil:
		e.Log.Log(context.Background(), level, fmt.Sprintf(format, args...))
	case e.Logf != nil:
		e.Logf(format, args...)
	}
}

// Fault is one injectable fault.
type Fault interface {
	// Kind is the registered kind, e.g. "failover".
	Kind() string
	// Target describes what the fault acts on, resolved at Inject (e.g. a node address).
	Target() string
	// Inject makes the fault happen. An error means it did not (fully) happen;
	// Heal must still be called.
	Inject(ctx context.Context, env *Env) error
	// Heal undoes the fault. Idempotent; safe before, after or without Inject.
	Heal(ctx context.Context, env *Env) error
	// Evidence is what the fault observed, for report.json's faults[].evidence.
	Evidence() map[string]any
}

// Completing is implemented by kinds whose effect ends when Inject returns
// (a slot migration is over once the slot has moved). With no for=, their
// window in the report ends there rather than at the end of the load.
type Completing interface {
	CompletesOnInject() bool
}

// ExpiryDrifter is implemented by kinds that may move keys' absolute
// expiries later than they were written (a slot migration: MIGRATE carries
// each key's remaining TTL and the destination adds its own clock at
// RESTORE). The key-hygiene check (K1) grants the keys of each slot named
// this much beyond the retention time, and no more.
type ExpiryDrifter interface {
	// ExpiryDrifts returns, per slot whose keys the fault moved, the most
	// by which it may have moved any of their expiries later, as measured
	// during the run (nil: it moved none).
	ExpiryDrifts() []ExpiryDrift
}

// ExpiryDrift is how much later a fault may have moved the absolute
// expiries of one slot's keys, and why (for the report).
type ExpiryDrift struct {
	Slot   int
	Drift  time.Duration
	Reason string
}

// Masterless is the ability of a fault to say which slots it left without
// a master from the return of Inject to the heal (slot-down): a service
// under test must fail closed for them (the check fail_closed).
type Masterless interface {
	MasterlessSlots() [][2]int
}
