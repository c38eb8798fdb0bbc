package faults

// script-flush: SCRIPT FLUSH on the target masters mid-load. Script caches
// are per node and not replicated, so every EVALSHA after the flush answers
// NOSCRIPT until the client sends the source again (EVAL, which caches it).
// The contract of the path under test is that it reloads and goes on: no
// operation ends as sold out or failed because a script was missing.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var scriptFlushKind = Spec{
	Kind: "script-flush",
	Help: "SCRIPT FLUSH on the target masters (all-masters by default): every cached script is gone and the next EVALSHA " +
		"answers NOSCRIPT; the path must send the source again (EVAL) and go on. Evidence: scripts cached before, " +
		"NOSCRIPT answers and EVAL calls the nodes counted after the flush (the reloads)",
	Params: []Param{targetParam(TargetAllMasters), scriptFlushEvery.Param},

	Build: newScriptFlush,
	Rules: Rules{
		Destructive: DestructiveBecause("it empties the nodes' script caches (SCRIPT FLUSH)"),
		Overlap:     Stacks,
	},
}

var scriptFlushEvery = durationParam("every", 0, "flush again at this interval until healed (0: once)")

func newScriptFlush(v Values) (Fault, error) {
	f := &ScriptFlush{target: v.Target(), every: scriptFlushEvery.Of(v)}
	if f.every != 0 && f.every < 50*time.Millisecond {
		raw, _ := v.Given(scriptFlushEvery.Param)
		return nil, fmt.Errorf("every=%q: want 0 (once) or at least 50ms", raw)
	}
	return f, nil
}

// ScriptFlush is the "script-flush" fault. Build it with Plan/Parse.
type ScriptFlush struct {
	target Target
	every  time.Duration

	mu         sync.Mutex
	nodes      []*flushNode
	flushes    int
	injectedAt time.Time
	healedAt   time.Time
	healed     bool
	stop       chan struct{}
	done       chan struct{}
}

// flushNode is what script-flush saw on one node.
type flushNode struct {
	addr          string
	ref           map[string]any
	before, after scriptStats
	afterRead     bool
	notes         []string
}

// scriptStats are the node's script counters (INFO commandstats / errorstats).
type scriptStats struct {
	evalCalls, evalshaCalls, noscript int64
	cached                            int64 // INFO memory number_of_cached_scripts
}

var _ Fault = (*ScriptFlush)(nil)

// Kind implements Fault.
func (f *ScriptFlush) Kind() string { return "script-flush" }

// Target implements Fault.
func (f *ScriptFlush) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.nodes) == 0 {
		return f.target.String()
	}
	var addrs []string
	for _, n := range f.nodes {
		addrs = append(addrs, n.addr)
	}
	return strings.Join(addrs, ",")
}

// Inject implements Fault: read the counters, SCRIPT FLUSH every target,
// and with every= keep flushing until Heal.
func (f *ScriptFlush) Inject(ctx context.Context, env *Env) error {
	targets, err := f.target.Resolve(ctx, env)
	if err != nil {
		return fmt.Errorf("script-flush: %w", err)
	}
	f.mu.Lock()
	f.injectedAt = time.Now()
	for _, n := range targets {
		f.nodes = append(f.nodes, &flushNode{addr: n.Addr, ref: tpNodeRef(n)})
	}
	nodes := append([]*flushNode(nil), f.nodes...)
	f.mu.Unlock()
	var errs []error
	for _, fn := range nodes {
		adm, err := env.cluster().Admin(fn.addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st, err := readScriptStats(ctx, adm)
		if err != nil {
			errs = append(errs, fmt.Errorf("script-flush on %s: %w", fn.addr, err))
			continue
		}
		f.mu.Lock()
		fn.before = st
		f.mu.Unlock()
	}
	if err := f.flushAll(ctx, env, nodes); err != nil {
		errs = append(errs, err)
	}
	if f.every > 0 && len(errs) == 0 {
		f.mu.Lock()
		f.stop, f.done = make(chan struct{}), make(chan struct{})
		stop, done := f.stop, f.done
		f.mu.Unlock()
		go func() {
			defer close(done)
			tk := time.NewTicker(f.every)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				case <-tk.C:
					if err := f.flushAll(ctx, env, nodes); err != nil {
						env.logf("script-flush: %v", err)
					}
				}
			}
		}()
	}
	return errors.Join(errs...)
}

func (f *ScriptFlush) flushAll(ctx context.Context, env *Env, nodes []*flushNode) error {
	var errs []error
	for _, fn := range nodes {
		adm, err := env.cluster().Admin(fn.addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := adm.ScriptFlush(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("SCRIPT FLUSH on %s: %w", fn.addr, err))
		}
	}
	f.mu.Lock()
	f.flushes++
	f.mu.Unlock()
	env.logf("script-flush: flushed the script caches of %d node(s)", len(nodes))
	return errors.Join(errs...)
}

// Heal implements Fault: stops a repeating flush and reads the counters
// again (nothing to restore: the path reloads the scripts itself).
func (f *ScriptFlush) Heal(ctx context.Context, env *Env) error {
	f.mu.Lock()
	stop, done := f.stop, f.done
	f.stop = nil
	nodes := append([]*flushNode(nil), f.nodes...)
	f.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	if env.cluster() == nil || len(nodes) == 0 {
		return nil
	}
	for _, fn := range nodes {
		f.mu.Lock()
		read := fn.afterRead
		f.mu.Unlock()
		if read {
			continue
		}
		adm, err := env.cluster().Admin(fn.addr)
		if err == nil {
			var st scriptStats
			if st, err = readScriptStats(ctx, adm); err == nil {
				f.mu.Lock()
				fn.after, fn.afterRead = st, true
				f.mu.Unlock()
				continue
			}
		}
		f.mu.Lock()
		fn.notes = append(fn.notes, fmt.Sprintf("counters after the fault: %v", err))
		f.mu.Unlock()
	}
	f.mu.Lock()
	if !f.healed {
		f.healed, f.healedAt = true, time.Now()
	}
	f.mu.Unlock()
	return nil
}

// Evidence implements Fault: flushes done, and per node and in total the
// NOSCRIPT answers and EVAL calls (script reloads) counted by the nodes
// between the flush and the heal.
func (f *ScriptFlush) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{"target": f.target.String(), "flushes": f.flushes}
	if f.every > 0 {
		ev["every_ms"] = tpMillis(f.every)
	}
	var per []map[string]any
	var reloads, noscript int64
	complete := len(f.nodes) > 0
	for _, fn := range f.nodes {
		e := map[string]any{"node": fn.ref, "cached_scripts_before": fn.before.cached}
		if fn.afterRead {
			e["eval_calls"] = fn.after.evalCalls - fn.before.evalCalls
			e["evalsha_calls"] = fn.after.evalshaCalls - fn.before.evalshaCalls
			e["noscript_errors"] = fn.after.noscript - fn.before.noscript
			e["cached_scripts_after"] = fn.after.cached
			reloads += fn.after.evalCalls - fn.before.evalCalls
			noscript += fn.after.noscript - fn.before.noscript
		} else {
			complete = false
		}
		if len(fn.notes) > 0 {
			e["notes"] = append([]string(nil), fn.notes...)
		}
		per = append(per, e)
	}
	if per != nil {
		ev["nodes"] = per
	}
	if complete {
		ev["script_reloads"] = reloads
		ev["noscript_errors"] = noscript
	}
	if !f.injectedAt.IsZero() {
		ev["injected_at"] = f.injectedAt.UTC().Format(time.RFC3339Nano)
	}
	if f.healed && !f.injectedAt.IsZero() {
		ev["healed"] = true
		ev["duration_ms"] = tpMillis(f.healedAt.Sub(f.injectedAt))
	}
	return ev
}

// readScriptStats reads EVAL/EVALSHA calls, NOSCRIPT errors and the cached
// script count of one node.
func readScriptStats(ctx context.Context, adm *redis.Client) (scriptStats, error) {
	var st scriptStats
	info, err := adm.Info(ctx, "commandstats", "errorstats", "memory").Result()
	if err != nil {
		return st, fmt.Errorf("INFO commandstats errorstats memory: %w", err)
	}
	st.evalCalls = infoStatField(info, "cmdstat_eval", "calls")
	st.evalshaCalls = infoStatField(info, "cmdstat_evalsha", "calls")
	st.noscript = infoStatField(info, "errorstat_NOSCRIPT", "count")
	if v := aofInfoValue(info, "number_of_cached_scripts"); v != "" {
		st.cached, _ = strconv.ParseInt(v, 10, 64)
	}
	return st, nil
}

// infoStatField reads field of an INFO line "name:f1=v1,f2=v2"; 0 when absent.
func infoStatField(info, name, field string) int64 {
	line := aofInfoValue(info, name)
	for _, kv := range strings.Split(line, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == field {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
