// Package faults injects real faults into the cluster under load: one fault
// per file, named after its kind, each registered with its parameters.
//
// A fault follows the roachtest shape: Inject makes it really happen (a
// killed process, a migrated slot, a reset on the wire, a slowed AOF flush);
// Heal undoes it and is idempotent and safe after a failed or partial Inject;
// Evidence says what happened, with figures, for the report. The Timeline
// runs planned faults at offsets from the start of the load and heals every
// one of them on the way out, whatever the way out is.
//
// Each kind registers a Spec whose Rules declare what the kind is allowed
// and able to do (destructive or not, process signals, proxies, pipeline,
// overlap, topology, availability on a cluster): the safety guard
// (CheckAllowed), Available and the scenario validator read them.
package faults

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/ctxsleep"
)

// Env is what a fault acts on. Faults only touch the processes, proxies and
// slots named here, and only ones the harness itself started or owns.
type Env struct {
	// Cluster is the cluster under test: local processes, containers or an
	// external cluster. Process-level kinds (failover mode=kill|pause) need
	// Cluster.HasProcessControl(); see CheckAllowed for the safety guard.
	Cluster compose.Cluster
	// Proxies is the toxiproxy layer in front of the nodes (embedded
	// *compose.Proxies or a remote server's *compose.RemoteProxies); nil:
	// none (network kinds refuse).
	Proxies compose.Toxics
	// Client is the load's cluster client: faults that move slots or masters
	// call ReloadState on it so it routes around promptly.
	Client *redis.ClusterClient
	// HotSlots are the slots of the activity's buckets, the hot one (bucket 0) first.
	HotSlots []int
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

// Param documents one parameter of a kind.
type Param struct {
	Name    string
	Default string
	Help    string
	// Values, when set, are every value the parameter accepts (a closed
	// enum: New refuses any other); faults --json and shell completion
	// offer them.
	Values []string
}

// Spec registers a kind: its name, its documentation, how to build a fault
// of it, and the rules it declares about itself (see Rules: whether it is
// destructive, signals processes, needs the proxies or the pipeline, may
// overlap others, what topology it needs, whether it can run on a given
// cluster). The guard, the scenario validator and the CLI read those rules;
// no other file keeps a list of kinds.
type Spec struct {
	Kind   string
	Help   string
	Params []Param
	// New builds a fault from its parameters (without at/for). It must reject
	// unknown parameters and bad values with an error naming the parameter.
	New func(params map[string]string) (Fault, error)
	// Rules are the kind's declarations; Rules.Destructive and
	// Rules.Overlap are required.
	Rules Rules
}

var (
	regMu    sync.RWMutex
	registry = map[string]Spec{}
)

// Register adds a kind; called from init in each kind's file. It panics on
// a kind registered twice, without New, or without the required Rules
// (Destructive and Overlap), naming what is missing.
func Register(s Spec) {
	if s.Kind == "" || s.New == nil {
		panic(fmt.Sprintf("faults: kind %q registered without a name or a New", s.Kind))
	}
	if err := checkRules(s); err != nil {
		panic(err.Error())
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[s.Kind]; dup {
		panic("faults: kind registered twice: " + s.Kind)
	}
	registry[s.Kind] = s
}

// Kinds lists the registered kinds, sorted by name.
func Kinds() []Spec {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Lookup finds a kind.
func Lookup(kind string) (Spec, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := registry[kind]
	return s, ok
}

func kindNames() string {
	var names []string
	for _, s := range Kinds() {
		names = append(names, s.Kind)
	}
	return strings.Join(names, ", ")
}

// Planned is a fault on the timeline: inject At after the load starts, heal
// For later (For 0: heal at the end of the load).
type Planned struct {
	Spec   string // the text it was parsed from
	Kind   string
	At     time.Duration
	For    time.Duration
	Params map[string]string
	Fault  Fault

	mu         sync.Mutex
	injectedAt time.Duration
	injectDone time.Duration
	healedAt   time.Duration
	injected   bool
	healed     bool
	injectErr  error
	healErr    error
}

// Parse reads "kind:key=value,key=value" (at= and for= are the offset and
// duration). Errors name the kind or parameter at fault and list the valid ones.
func Parse(text string) (*Planned, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(text), ":")
	if _, ok := Lookup(kind); !ok {
		return nil, fmt.Errorf("fault %q: unknown kind %q; valid kinds: %s", text, kind, kindNames())
	}
	params := map[string]string{}
	if strings.TrimSpace(rest) != "" {
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("fault %q: %q is not key=value", text, kv)
			}
			if _, dup := params[k]; dup {
				return nil, fmt.Errorf("fault %q: parameter %s given twice", text, k)
			}
			params[k] = strings.TrimSpace(v)
		}
	}
	return Plan(kind, params, text)
}

// Plan builds a Planned fault from a kind and its parameters (at= and for=
// included). text is kept for messages.
func Plan(kind string, params map[string]string, text string) (*Planned, error) {
	spec, ok := Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("fault %q: unknown kind %q; valid kinds: %s", text, kind, kindNames())
	}
	p := &Planned{Spec: text, Kind: kind, Params: map[string]string{}}
	rest := map[string]string{}
	for k, v := range params {
		p.Params[k] = v
		switch k {
		case "at", "for":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("fault %q: %s=%q: want a non-negative duration like 3s", text, k, v)
			}
			if k == "at" {
				p.At = d
			} else {
				p.For = d
			}
		default:
			rest[k] = v
		}
	}
	f, err := spec.New(rest)
	if err != nil {
		var names []string
		for _, prm := range spec.Params {
			names = append(names, prm.Name)
		}
		return nil, fmt.Errorf("fault %q: %w (parameters of %s: at, for, %s)", text, err, kind, strings.Join(names, ", "))
	}
	p.Fault = f
	return p, nil
}

// CheckParams rejects parameters a kind does not have. Kinds call it from New.
func CheckParams(params map[string]string, known ...string) error {
	for k := range params {
		ok := false
		for _, n := range known {
			if k == n {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("unknown parameter %q", k)
		}
	}
	return nil
}

// Window is when a planned fault was in force, as offsets from the load's start.
type Window struct {
	InjectedAt, HealedAt time.Duration
	InjectDone           time.Duration // when Inject returned
	Injected, Healed     bool
	InjectErr, HealErr   error
}

// Window returns the recorded inject and heal times.
func (p *Planned) Window() Window {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Window{InjectedAt: p.injectedAt, HealedAt: p.healedAt, InjectDone: p.injectDone,
		Injected: p.injected, Healed: p.healed, InjectErr: p.injectErr, HealErr: p.healErr}
}

// EffectEnd is when the fault stopped acting: the heal, or for a Completing
// kind without for= the return of Inject. ok is false while it still acts.
func (p *Planned) EffectEnd() (time.Duration, bool) {
	w := p.Window()
	if c, is := p.Fault.(Completing); is && c.CompletesOnInject() && p.For == 0 && w.InjectDone > 0 {
		return w.InjectDone, true
	}
	return w.HealedAt, w.Healed
}

// Timeline runs planned faults against env at offsets from began.
type Timeline struct {
	Env   *Env
	Items []*Planned

	began time.Time
	wg    sync.WaitGroup
}

// Start schedules every item relative to began (the load's offset 0) and
// returns at once. Each item is injected at At and healed at At+For (For 0:
// left for HealAll). Cancelling ctx stops pending injections.
func (t *Timeline) Start(ctx context.Context, began time.Time) {
	t.began = began
	for _, p := range t.Items {
		t.wg.Add(1)
		go func(p *Planned) {
			defer t.wg.Done()
			if !ctxsleep.Until(ctx, began.Add(p.At)) {
				return
			}
			t.inject(ctx, p)
			if p.For > 0 && ctxsleep.Until(ctx, began.Add(p.At+p.For)) {
				t.heal(context.WithoutCancel(ctx), p)
			}
		}(p)
	}
}

func (t *Timeline) inject(ctx context.Context, p *Planned) {
	p.mu.Lock()
	p.injected, p.injectedAt = true, time.Since(t.began)
	p.mu.Unlock()
	t.Env.logf("fault %s: inject at %.2fs", p.Spec, time.Since(t.began).Seconds())
	err := p.Fault.Inject(ctx, t.Env)
	if err != nil {
		t.Env.warnf("fault %s: inject failed: %v", p.Spec, err)
	}
	p.mu.Lock()
	p.injectErr = err
	p.injectDone = time.Since(t.began)
	p.mu.Unlock()
}

func (t *Timeline) heal(ctx context.Context, p *Planned) {
	p.mu.Lock()
	if p.healed {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	err := p.Fault.Heal(ctx, t.Env)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.healErr = err
	if err == nil {
		p.healed, p.healedAt = true, time.Since(t.began)
		t.Env.logf("fault %s: healed at %.2fs", p.Spec, p.healedAt.Seconds())
	} else {
		t.Env.warnf("fault %s: heal failed: %v", p.Spec, err)
	}
}

// HealAll waits for the scheduled goroutines (cancel their ctx first to cut
// pending injections short) and heals every item that is not healed yet, in
// reverse order. Safe to call more than once; returns the heal errors.
func (t *Timeline) HealAll(ctx context.Context) error {
	t.wg.Wait()
	var errs []string
	for i := len(t.Items) - 1; i >= 0; i-- {
		p := t.Items[i]
		t.heal(ctx, p)
		if w := p.Window(); w.HealErr != nil && !w.Healed {
			errs = append(errs, fmt.Sprintf("%s: %v", p.Spec, w.HealErr))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("faults not healed: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Active lists the faults in force now (injected, effect not ended), by their spec text.
func (t *Timeline) Active() []string {
	var out []string
	for _, p := range t.Items {
		w := p.Window()
		if !w.Injected {
			continue
		}
		if _, ended := p.EffectEnd(); !ended {
			out = append(out, p.Kind)
		}
	}
	return out
}

// ExpiryDrifts collects the expiry drifts of every item whose fault is an
// ExpiryDrifter, in item order (a slot moved twice appears twice: its keys
// may have drifted twice).
func (t *Timeline) ExpiryDrifts() []ExpiryDrift {
	var out []ExpiryDrift
	for _, p := range t.Items {
		if d, ok := p.Fault.(ExpiryDrifter); ok {
			out = append(out, d.ExpiryDrifts()...)
		}
	}
	return out
}
