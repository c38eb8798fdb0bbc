package adapter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

const shapes = "testdata/shapes/"

// systemPreflight runs the system's own pre-flight (the one a run calls)
// for a fresh activity of one bucket.
func systemPreflight(t *testing.T, path string) []Finding {
	t.Helper()
	f := mustLoad(t, path)
	st := lua.NewStore(testRDB, lua.Embedded(), []byte("adapter-shapes-test"))
	a := lua.NewActivity(fmt.Sprintf("shape%d", activitySeq.Add(1)), "sku1", 1000, 1, time.Hour)
	got, err := NewSystem(f, st).Preflight(context.Background(), a)
	if err != nil {
		t.Fatalf("preflight: %v", err)
	}
	out := make([]Finding, 0, len(got))
	for _, x := range got {
		t.Logf("finding: %s (keys %q, refuses %v)", x, x.Keys, x.Refuses)
		out = append(out, Finding{Kind: x.Kind, Where: x.Where, Keys: x.Keys, Detail: x.Detail, Refuses: x.Refuses})
	}
	return out
}

// A per-user count compared as a string with a number breaks only on a
// user's second request while stock remains: the run's pre-flight sends
// one (two units per bucket) and refuses the script with the script
// error at its line. With one unit per bucket the second request found
// the bucket sold out and the script passed.
func TestPreflightRunsTheSecondRequestWhileStockRemains(t *testing.T) {
	clustertest.Need(t)
	got := systemPreflight(t, shapes+"per-user-count.yaml")
	var hit bool
	for _, x := range got {
		if x.Kind == KindScriptError && strings.HasSuffix(x.Where, "per-user-count.lua:11") &&
			strings.Contains(x.Detail, "attempt to compare") && x.Refuses {
			hit = true
		}
	}
	if !hit {
		t.Fatalf("findings %+v, want a script-error at per-user-count.lua:11 that refuses the load", got)
	}
}

// The tag-only KEYS shape: Redis runs every call (the built keys share
// the declared key's slot), so the pre-flight names every built key at
// its line and refuses nothing; preflight: strict refuses every finding.
func TestPreflightRunsWhatRedisRuns(t *testing.T) {
	clustertest.Need(t)
	lines := map[string]string{"stock": "27", "bought": "24", "req": "12", "hold": "35"}
	got := systemPreflight(t, shapes+"tag-only-keys.yaml")
	if len(got) == 0 {
		t.Fatal("no finding for a script that builds its keys from KEYS[1]")
	}
	seen := map[string]bool{}
	for _, x := range got {
		if x.Kind != KindUndeclared || x.Refuses {
			t.Errorf("finding %s (refuses %v): want %s that does not refuse the load", x, x.Refuses, KindUndeclared)
		}
		if !strings.Contains(x.Detail, "shares the call's slot") || !strings.Contains(x.Detail, "lists it in reserve.built_keys") {
			t.Errorf("finding does not say the key shares the call's slot and is listed in built_keys: %s", x.Detail)
		}
		for _, k := range x.Keys {
			for name, line := range lines {
				if strings.Contains(k, "}:"+name) && strings.HasSuffix(x.Where, "tag-only-keys.lua:"+line) {
					seen[name] = true
				}
			}
		}
	}
	for name, line := range lines {
		if !seen[name] {
			t.Errorf("no finding names the %s key at tag-only-keys.lua:%s", name, line)
		}
	}
	strict := systemPreflight(t, shapes+"tag-only-keys-strict.yaml")
	if len(strict) != len(got) {
		t.Fatalf("strict: %d findings, want %d", len(strict), len(got))
	}
	for _, x := range strict {
		if !x.Refuses {
			t.Errorf("strict: finding %s does not refuse the load", x)
		}
	}
}

// What Redis refuses on a sample call refuses the load; what it runs does
// not: KEYS in different slots (CROSSSLOT) refuse, a correct script has
// no finding at all.
func TestPreflightRefusesWhatRedisRefuses(t *testing.T) {
	clustertest.Need(t)
	got := systemPreflight(t, shapes+"hash-field-untagged.yaml")
	if len(got) != 1 || got[0].Kind != KindSlots || !got[0].Refuses || !strings.HasSuffix(got[0].Where, "hash-field-untagged.yaml:7") {
		t.Fatalf("findings %+v, want one CROSSSLOT at hash-field-untagged.yaml:7 that refuses the load", got)
	}
	for _, name := range []string{"correct", "hash-field-tagged", "no-ttl-counters", "no-request-id"} {
		if got := systemPreflight(t, shapes+name+".yaml"); len(got) != 0 {
			t.Errorf("%s: %d findings, want none", name, len(got))
		}
	}
}

// The keys a script builds, listed in built_keys (and nowhere else), are
// the teardown's and K1's: the expiry read finds every one the calls
// created, with its TTL, and the teardown removes exactly those.
func TestBuiltKeysJoinTeardownAndExpiry(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	s, a, st := newSystem(t, shapes+"tag-only-keys.yaml", 4, 1)
	accepted := 0
	for i := 0; i < 3; i++ {
		c, err := st.NewReserveCall(a, fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Reserve(ctx, c)
		if err != nil || res.Code != lua.Accepted {
			t.Fatalf("reserve %d: %+v, %v", i, res, err)
		}
		accepted++
	}
	kf, err := s.ReadKeys(ctx, a, sut.KeyQuery{})
	// stock, bought, and a request result and a hold per accepted call
	if want := int64(2 + 2*accepted); err != nil || kf.Space.KeysChecked != want || kf.Space.KeysWithoutTTL != 0 {
		t.Fatalf("keys: %+v, %v; want %d built keys read, each with a TTL", kf, err, want)
	}
	n, err := s.Teardown(ctx, a)
	if err != nil || n != kf.Space.KeysChecked {
		t.Fatalf("teardown removed %d keys (%v), the expiry read found %d", n, err, kf.Space.KeysChecked)
	}
	if kf2, err := s.ReadKeys(ctx, a, sut.KeyQuery{}); err != nil || kf2.Space.KeysChecked != 0 {
		t.Fatalf("after teardown: %d keys left (%v)", kf2.Space.KeysChecked, err)
	}
}
