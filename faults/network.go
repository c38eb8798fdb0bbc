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

// copyParams returns a copy that New may consume (ParseTarget deletes from it).
func copyParams(params map[string]string) map[string]string {
	out := make(map[string]string, len(params))
	maps.Copy(out, params)
	return out
}

// intParam reads params[name] as an integer in [lo, hi]; absent or empty
// means def. unit is for the error message ("milliseconds").
func intParam(params map[string]string, name string, def, lo, hi int64, unit string) (int64, error) {
	v, ok := params[name]
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want an integer number of %s in [%d, %d]", name, v, unit, lo, hi)
	}
	return n, nil
}

// toxicityParam reads params["toxicity"] as a probability in (0, 1]; default 1.
func toxicityParam(params map[string]string) (float32, error) {
	v, ok := params["toxicity"]
	if !ok || strings.TrimSpace(v) == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 32)
	if err != nil || f <= 0 || f > 1 {
		return 0, fmt.Errorf("toxicity=%q: want a probability in (0, 1] (drawn per connection, not per request)", v)
	}
	return float32(f), nil
}

// streamParam reads params["stream"]: downstream (default) or upstream.
func streamParam(params map[string]string, def string) (string, error) {
	v, ok := params["stream"]
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return def, nil
	}
	if v != "downstream" && v != "upstream" {
		return "", fmt.Errorf("stream=%q: want downstream (Redis → client) or upstream (client → Redis)", v)
	}
	return v, nil
}

// durationParam reads params[name] as a non-negative Go duration; default def.
func durationParam(params map[string]string, name string, def time.Duration) (time.Duration, error) {
	v, ok := params[name]
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a non-negative duration like 500ms", name, v)
	}
	return d, nil
}

var (
	toxicityDoc = Param{Name: "toxicity", Default: "1", Help: "probability in (0,1] that a connection is affected; drawn per connection (and again whenever a toxic is added to or removed from the proxy), not per request"}
	streamDoc   = Param{Name: "stream", Default: "downstream", Help: "downstream (Redis → client: the request runs, the reply is affected) or upstream (client → Redis: the request itself is affected)",
		Values: []string{"downstream", "upstream"}}
)

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

// streamToxic is what the stream toxics (latency, bandwidth, slicer) read
// besides their own attributes: the target, the stream and the toxicity.
type streamToxic struct {
	target   Target
	stream   string
	toxicity float32
}

// parseStreamToxic copies params, reads target, stream (default downstream)
// and toxicity, and rejects any parameter not in own (the kind's
// attributes). It returns the copy, from which the kind reads its own.
func parseStreamToxic(params map[string]string, own ...string) (map[string]string, streamToxic, error) {
	params = copyParams(params)
	var st streamToxic
	var err error
	if st.target, err = ParseTarget(params); err != nil {
		return nil, st, err
	}
	if err := CheckParams(params, append(own, "stream", "toxicity")...); err != nil {
		return nil, st, err
	}
	if st.stream, err = streamParam(params, "downstream"); err != nil {
		return nil, st, err
	}
	if st.toxicity, err = toxicityParam(params); err != nil {
		return nil, st, err
	}
	return params, st, nil
}

// fault makes the toxic fault of kind with the kind's attributes.
func (st streamToxic) fault(kind, toxicType string, attrs, evidence map[string]any) Fault {
	return newToxicFault(kind, st.target, compose.Toxic{Type: toxicType, Stream: st.stream, Toxicity: st.toxicity, Attributes: attrs}, evidence)
}
