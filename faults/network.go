package faults

// Shared machinery of the network fault kinds (disconnect-before-reply,
// latency, bandwidth, slicer): one toxiproxy toxic, with a name unique to
// the fault, on the proxy of every node the target resolves to. Heal
// removes exactly that toxic (never ResetToxics: other faults may have
// toxics on the same proxy).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"seckill-harness/compose"
)

// toxicSeq makes toxic names unique within the process.
var toxicSeq atomic.Int64

// requireProxies is the refusal every network kind gives without proxies.
func requireProxies(env *Env, kind string) error {
	if env.proxies() == nil {
		return fmt.Errorf("fault %s needs the proxies: run on the local cluster with proxies", kind)
	}
	return nil
}

// toxicRules are the rules every toxic kind declares: it acts on the
// harness's own proxies only (the nodes, the cluster bus and replication are
// untouched), so it is not destructive, needs the proxies, and stacks with
// other faults on the same proxy.
func toxicRules() Rules {
	return Rules{
		Destructive:  NotDestructive(),
		NeedsProxies: "it puts a toxic on the target node's proxy",
		Overlap:      Stacks,
	}
}

var (
	toxicityParam = Typed[float32]{Param{Name: "toxicity", Default: "1", def: float32(1),
		Help: "probability in (0,1] that a connection is affected; drawn per connection (and again whenever a toxic is added to or removed from the proxy), not per request",
		parse: func(v string) (any, error) {
			f, err := strconv.ParseFloat(v, 32)
			if err != nil || f <= 0 || f > 1 {
				return nil, errors.New("want a probability in (0, 1] (drawn per connection, not per request)")
			}
			return float32(f), nil
		}}}
	streamParam = choiceParam("stream", "downstream", "downstream (Redis → client: the request runs, the reply is affected) or upstream (client → Redis: the request itself is affected)",
		"want downstream (Redis → client) or upstream (client → Redis)", "downstream", "upstream")
)

// streamToxicParams are the parameters of a stream toxic kind (latency,
// bandwidth, slicer) around its own: the target first, stream and
// toxicity last.
func streamToxicParams(own ...Param) []Param {
	return append(append([]Param{TargetParam}, own...), streamParam.Param, toxicityParam.Param)
}

// armRecord is one arming of the toxic on one node.
type armRecord struct {
	Node      string    `json:"node"`
	ArmedAt   time.Time `json:"armed_at"`
	RemovedAt time.Time `json:"removed_at,omitzero"`
	// WarmConns is the harness's open connections through the proxy when
	// the toxic was armed (each carries at most one cut reply per arming).
	WarmConns int `json:"warm_connections"`
}

// toxicFault puts one toxic on the target's proxies; with every > 0 it
// pulses: armed for pulse at the start of every period of length every.
type toxicFault struct {
	kind   string
	target Target
	toxic  compose.Toxic // Name set at Inject
	params map[string]any
	every  time.Duration // 0: armed from Inject to Heal
	pulse  time.Duration
	notes  []string

	mu       sync.Mutex
	name     string
	nodes    []compose.Node
	armed    map[string]bool // node addr → toxic currently on its proxy
	records  []armRecord
	arms     int
	injected time.Time
	healed   time.Time
	stop     chan struct{}
	wg       sync.WaitGroup
	errs     []string
}

func newToxicFault(kind string, target Target, t compose.Toxic, params map[string]any) *toxicFault {
	return &toxicFault{kind: kind, target: target, toxic: t, params: params, armed: map[string]bool{}}
}

func (f *toxicFault) Kind() string { return f.kind }

func (f *toxicFault) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.nodes) > 0 {
		return f.target.String() + " (" + strings.Join(nodeAddrs(f.nodes), ",") + ")"
	}
	return f.target.String()
}

// Inject resolves the target and arms the toxic on every node's proxy. An
// error leaves whatever was armed for Heal to remove.
func (f *toxicFault) Inject(ctx context.Context, env *Env) error {
	if err := requireProxies(env, f.kind); err != nil {
		return err
	}
	nodes, err := f.target.Resolve(ctx, env)
	if err != nil {
		return fmt.Errorf("fault %s: %w", f.kind, err)
	}
	f.mu.Lock()
	if f.name != "" {
		f.mu.Unlock()
		return fmt.Errorf("fault %s: already injected", f.kind)
	}
	f.name = fmt.Sprintf("seckill-%s-%d", f.kind, toxicSeq.Add(1))
	f.nodes = nodes
	f.injected = time.Now()
	stop := make(chan struct{})
	f.stop = stop
	f.mu.Unlock()
	if err := f.arm(env); err != nil {
		return err
	}
	for _, n := range nodes {
		env.logf("fault %s: %s %s toxic %s armed on the proxy of %s (%s)", f.kind, f.toxic.Type, f.toxic.Stream, f.name, n.Addr, shortID(n.ID))
	}
	if f.every > 0 {
		f.wg.Add(1)
		go f.pulseLoop(ctx, env, stop)
	}
	return nil
}

// arm adds the toxic to every target node's proxy that lacks it.
func (f *toxicFault) arm(env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arms++
	var errs []error
	for _, n := range f.nodes {
		if f.armed[n.Addr] {
			continue
		}
		warm, _ := env.proxies().Stats(n.Addr)
		t := f.toxic
		t.Name = f.name
		if err := env.proxies().AddToxic(n.Addr, t); err != nil {
			errs = append(errs, err)
			f.errs = append(f.errs, err.Error())
			continue
		}
		f.armed[n.Addr] = true
		f.records = append(f.records, armRecord{Node: n.Addr, ArmedAt: time.Now(), WarmConns: warm})
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fault %s: %w", f.kind, err)
	}
	return nil
}

// disarm removes the toxic from every proxy that has it.
func (f *toxicFault) disarm(env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, n := range f.nodes {
		if !f.armed[n.Addr] {
			continue
		}
		if err := env.proxies().RemoveToxic(n.Addr, f.name); err != nil {
			errs = append(errs, err)
			f.errs = append(f.errs, err.Error())
			continue
		}
		f.armed[n.Addr] = false
		now := time.Now()
		for i := len(f.records) - 1; i >= 0; i-- {
			if f.records[i].Node == n.Addr && f.records[i].RemovedAt.IsZero() {
				f.records[i].RemovedAt = now
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (f *toxicFault) pulseLoop(ctx context.Context, env *Env, stop <-chan struct{}) {
	defer f.wg.Done()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-stop:
		case <-ctx.Done():
		}
		return false
	}
	start := f.injected
	for k := 1; ; k++ {
		if !wait(time.Until(start.Add(time.Duration(k-1)*f.every + f.pulse))) {
			return
		}
		if err := f.disarm(env); err != nil {
			env.logf("fault %s: pulse disarm: %v", f.kind, err)
		}
		if !wait(time.Until(start.Add(time.Duration(k) * f.every))) {
			return
		}
		if err := f.arm(env); err != nil {
			env.logf("fault %s: pulse re-arm: %v", f.kind, err)
		}
	}
}

// Heal stops pulsing and removes exactly the toxic this fault added.
// Idempotent; nil when nothing was injected.
func (f *toxicFault) Heal(ctx context.Context, env *Env) error {
	f.mu.Lock()
	stop := f.stop
	f.stop = nil
	f.mu.Unlock()
	if stop != nil {
		close(stop)
	}
	f.wg.Wait()
	if env.proxies() == nil {
		return nil
	}
	if err := f.disarm(env); err != nil {
		return fmt.Errorf("fault %s: heal: %w", f.kind, err)
	}
	f.mu.Lock()
	if f.healed.IsZero() && f.name != "" {
		f.healed = time.Now()
		env.logf("fault %s: toxic %s removed", f.kind, f.name)
	}
	f.mu.Unlock()
	return nil
}

// Evidence: what was armed where and when.
func (f *toxicFault) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	attrs := map[string]any{}
	maps.Copy(attrs, f.toxic.Attributes)
	ev := map[string]any{
		"mechanism":  "toxiproxy",
		"toxic_type": f.toxic.Type,
		"toxic_name": f.name,
		"stream":     f.toxic.Stream,
		"toxicity":   f.toxic.Toxicity,
		"attributes": attrs,
		"target":     f.target.String(),
		"nodes":      nodeAddrs(f.nodes),
		"arms":       f.arms,
	}
	ids := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		ids[i] = n.ID
	}
	ev["node_ids"] = ids
	for k, v := range f.params {
		ev[k] = v
	}
	if f.every > 0 {
		ev["every_ms"] = f.every.Milliseconds()
		ev["pulse_ms"] = f.pulse.Milliseconds()
	}
	if !f.injected.IsZero() {
		ev["armed_at"] = f.injected.Format(time.RFC3339Nano)
	}
	if !f.healed.IsZero() {
		ev["removed_at"] = f.healed.Format(time.RFC3339Nano)
		ev["armed_for_ms"] = f.healed.Sub(f.injected).Milliseconds()
	}
	const maxRecords = 200
	recs := f.records
	if len(recs) > maxRecords {
		ev["armings_truncated"] = len(recs) - maxRecords
		recs = recs[:maxRecords]
	}
	ev["armings"] = append([]armRecord(nil), recs...)
	if len(f.records) > 0 {
		ev["warm_connections_at_first_arm"] = f.records[0].WarmConns
	}
	if len(f.notes) > 0 {
		ev["notes"] = f.notes
	}
	if len(f.errs) > 0 {
		ev["errors"] = append([]string(nil), f.errs...)
	}
	return ev
}

// streamToxicFault makes the toxic fault of kind from v (its
// streamToxicParams) with the kind's attributes and evidence.
func streamToxicFault(v Values, kind, toxicType string, attrs, evidence map[string]any) Fault {
	return newToxicFault(kind, v.Target(), compose.Toxic{Type: toxicType, Stream: streamParam.Of(v), Toxicity: toxicityParam.Of(v), Attributes: attrs}, evidence)
}
