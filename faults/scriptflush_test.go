package faults

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

func TestScriptFlushParams(t *testing.T) {
	for _, bad := range []string{"script-flush:every=x", "script-flush:every=10ms", "script-flush:x=1", "script-flush:target=nowhere"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	f := tpPlan(t, "script-flush").Fault.(*ScriptFlush)
	if f.target.Role != TargetAllMasters || f.every != 0 {
		t.Fatalf("defaults: %+v", f)
	}
	if err := f.Heal(context.Background(), &Env{}); err != nil {
		t.Fatalf("heal before inject: %v", err)
	}
	if !Destructive("script-flush", nil) {
		t.Fatal("script-flush must be declared destructive: it empties the nodes' script caches")
	}
}

// TestScriptFlushUnderLoad: while the masters' script caches are flushed
// every 300ms under load, the reference path (EVALSHA, EVAL on NOSCRIPT)
// reloads and goes on: fallbacks in the history, EVAL calls counted by the
// nodes, and no operation ended in ERROR. A path without the fallback
// (plain EVALSHA, the broken path) answers NOSCRIPT after the flush.
func TestScriptFlushUnderLoad(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	client := proxiedClient(t, func(o *redis.ClusterOptions) { o.PoolSize = 24; o.ContextTimeoutEnabled = true })
	a := newActivity(t, 300, 2)
	p := tpPlan(t, "script-flush:every=300ms,at=1s,for=1500ms")
	res := loadedRun(t, p, newEnv(t, a, client), a, testStore, "I1", "I2", "I3", "I4", "I5", "I8")
	fallbacks, errs := 0, 0
	for i := range res.History.Ops {
		op := &res.History.Ops[i]
		if op.Flags&history.FlagEvalFallback != 0 {
			fallbacks++
		}
		if op.Outcome == history.OutcomeError {
			errs++
			t.Errorf("op %d ended in ERROR (%s) under script-flush", op.ID, op.ErrClass)
		}
	}
	ev := p.Fault.Evidence()
	reloads, _ := ev["script_reloads"].(int64)
	if fallbacks == 0 || reloads == 0 {
		t.Fatalf("no script reload seen: %d fallbacks in the history, evidence %v", fallbacks, ev)
	}
	if fl, _ := ev["flushes"].(int); fl < 2 {
		t.Fatalf("every=300ms for 1.5s flushed %d times: %v", fl, ev)
	}
	t.Logf("script-flush: %d flushes, %d ops fell back to EVAL, nodes counted %d EVAL and %v NOSCRIPT, %d errors",
		ev["flushes"], fallbacks, reloads, ev["noscript_errors"], errs)

	// The broken path: EVALSHA only. After a flush it fails with NOSCRIPT,
	// which the classifier reports as an ERROR of class NOSCRIPT.
	ctx := ctxT(t, 10*time.Second)
	broken := tpPlan(t, "script-flush")
	env := newEnv(t, a, testDirect)
	if err := broken.Fault.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	defer broken.Fault.Heal(context.Background(), env)
	sha := lua.Embedded().Reserve.SHA1
	err := testDirect.EvalSha(ctx, sha, []string{a.Scope(0).StockKey()}, "x").Err()
	if !redis.HasErrorPrefix(err, "NOSCRIPT") {
		t.Fatalf("EVALSHA after the flush: %v, want NOSCRIPT", err)
	}
	if out, class := history.Classify(err); out != history.OutcomeError || class != history.ErrNoScript {
		t.Fatalf("NOSCRIPT classified %v/%v", out, class)
	}
}
