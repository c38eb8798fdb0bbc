package serve

import (
	"os"
	"path/filepath"
	"testing"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// brokenScripts are the reference scripts with a reserve.lua that touches
// a key outside its bucket's slot (declared flags: Redis refuses it).
func brokenScripts(t *testing.T) *lua.Scripts {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"transition.lua", "compensate.lua"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "lua", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := "#!lua\nredis.call('GET', 'serve-crossslot-probe')\nreturn {0, '', 0, '', 0}\n"
	if err := os.WriteFile(filepath.Join(dir, "reserve.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := lua.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A call that spans slots is a configuration error: SYSTEM_BUSY, and the
// SKU's circuit opens (its next request does not reach Redis); another
// activity's requests still do.
func TestCrossSlotOpensTheSKUsCircuit(t *testing.T) {
	clustertest.Need(t)
	a, b := newActivity(t, 10, 1), newActivity(t, 10, 1)
	cfg := faultCfg()
	cfg.Scripts = brokenScripts(t)
	s := startService(t, cfg)
	const kind = `redis_call_errors_total{kind="crossslot"}`
	r := s.reserve(t, a, "u1", "r1")
	if r.Code != CodeSystemBusy || !r.Retryable || s.metric(t, kind) != 1 {
		t.Fatalf("a script touching another slot: %s, %s = %v; want SYSTEM_BUSY after one cross-slot answer", r.Raw, kind, s.metric(t, kind))
	}
	if r := s.reserve(t, a, "u2", "r2"); r.Code != CodeSystemBusy || s.metric(t, kind) != 1 {
		t.Fatalf("the SKU's next request: %s, %s = %v; want SYSTEM_BUSY from the open circuit, Redis not asked", r.Raw, kind, s.metric(t, kind))
	}
	if r := s.reserve(t, b, "u1", "r1"); r.Code != CodeSystemBusy || s.metric(t, kind) != 2 {
		t.Fatalf("another activity: %s, %s = %v; want its own call to reach Redis (the circuit is per SKU)", r.Raw, kind, s.metric(t, kind))
	}
}
