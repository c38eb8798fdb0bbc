package faults

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

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
	healFrom   time.Duration // when the heal that succeeded (or the last one) began
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

// Window is when a planned fault was in force, as offsets from the load's start.
type Window struct {
	InjectedAt, HealedAt time.Duration
	InjectDone           time.Duration // when Inject returned
	// HealStarted is when the heal began (0: it never did): whatever the
	// fault undid, it undid no earlier; HealedAt is when the heal returned,
	// which for a fault that restarts nodes and waits for the cluster can
	// be seconds after they serve again.
	HealStarted        time.Duration
	Injected, Healed   bool
	InjectErr, HealErr error
}

// Window returns the recorded inject and heal times.
func (p *Planned) Window() Window {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Window{InjectedAt: p.injectedAt, HealedAt: p.healedAt, InjectDone: p.injectDone, HealStarted: p.healFrom,
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
