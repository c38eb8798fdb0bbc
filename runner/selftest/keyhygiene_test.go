package selftest

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/sut/badpaths"
)

// K1 on real keys: the reserve script without its PEXPIREAT on the
// reservation record leaves every record without a TTL, and K1 fails
// naming them; the reference script under the same load passes K1 with
// the path's own keys seen, and reports the size figures.
func TestK1CatchesAReserveWithoutTTL(t *testing.T) {
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, _ := badpaths.GetLoad(badpaths.LoadContention, true)
	bad, ok := badpaths.Get(badpaths.LuaNoTTL)
	if !ok || bad.System == nil {
		t.Fatal("lua-no-ttl not runnable")
	}
	for _, c := range []struct {
		name string
		path badpaths.Info
		fail bool
	}{{badpaths.LuaNoTTL, bad, true}, {ReferenceName, reference, false}} {
		res, err := runOne(ctx, testEnv(t), c.path, l, 11, 1)
		if err != nil {
			t.Fatal(err)
		}
		k1 := res.Details["K1"]
		if got := contains(res.Failed, "K1"); got != c.fail {
			t.Fatalf("%s: K1 failed=%v, want %v (failed %v: %s)", c.name, got, c.fail, res.Failed, k1)
		}
		if c.fail {
			ev := res.Evidence["K1"].(map[string]any)
			keys, _ := ev["without_ttl"].([]string)
			if len(keys) == 0 || !strings.Contains(keys[0], ":resv:") || ev["keys_without_ttl"].(int64) < int64(res.Outcomes["fresh:ACCEPTED"]) {
				t.Fatalf("%s: K1 evidence does not name the reservation records: %v (outcomes %v)", c.name, ev, res.Outcomes)
			}
			t.Logf("%s: K1 %s", c.name, k1)
			continue
		}
		if len(res.Failed) != 0 {
			t.Fatalf("reference failed %v: %v", res.Failed, res.Details)
		}
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
