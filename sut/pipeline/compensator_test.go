package pipeline_test

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut/pipeline"
)

// compensatorCrashSpec: half the orders are rejected, so releases run all
// through the load; the compensation worker crashes at 600 ms in the
// middle of releases and restarts 400 ms later. The reservation TTL is
// long: only the redelivery can finish what the crash left.
func compensatorCrashSpec(scripts *lua.Scripts) spec {
	load := loadConfig(300, 2*time.Second)
	pc := pipeline.DefaultConfig()
	pc.Order.Reject = 0.5
	pc.Release.Workers = 2
	return spec{stock: 200, buckets: 1, load: load, pipe: pc, scripts: scripts,
		faults: []string{"compensator-crash:at=600ms,for=400ms"}, drain: 8 * time.Second}
}

// The reference: the crash lands in the middle of releases, the restarted
// worker finishes them from the redelivered queue, compensate answers
// ALREADY_RELEASED to the one that was already done, and each release
// happened exactly once (I8, P5); everything drains (P2).
func TestCompensatorCrashReleasesExactlyOnce(t *testing.T) {
	clustertest.Need(t)
	t.Parallel()
	o := run(t, compensatorCrashSpec(nil))
	if o.drainErr != nil {
		o.log(t)
		t.Fatalf("drain: %v", o.drainErr)
	}
	o.expectPass(t, "P1", "P2", "P3", "P4", "P5", "I1", "I2", "I3", "I8", "I9")
	ev := o.planned[0].Fault.Evidence()
	if n := ev["died_mid_release"].(int64); n < 1 {
		t.Fatalf("no worker died in the middle of a release: %v", ev)
	}
	now := ev["now"].(map[string]any)
	if now["restarts"].(int64) != 1 {
		t.Fatalf("compensator not restarted: %v", now)
	}
	// The worker that died after its compensate had its release
	// redelivered: compensate must have answered ALREADY_RELEASED.
	if ev["died_mid_release"].(int64) >= 2 && now["redelivered_already_released"].(int64) < 1 {
		t.Fatalf("no redelivered release was answered ALREADY_RELEASED: %v", now)
	}
	t.Logf("compensator evidence: %v", ev)
}

// A compensate.lua without its status check releases a RELEASED
// reservation again: the release the crashed worker had finished but not
// acknowledged is redelivered and gives its unit back twice. I8 catches it.
func TestI8CatchesDoubleReleaseAfterCompensatorCrash(t *testing.T) {
	clustertest.Need(t)
	t.Parallel()
	sc := variant(t, lua.CompensateFile, `if status == "RELEASED" then`, `if false then`)
	sc.Compensate = editScript(t, sc.Compensate, `if status ~= "REJECTED" and status ~= "RELEASE_PENDING" then`, `if false then`)
	o := run(t, compensatorCrashSpec(sc))
	o.expectFail(t, "I8")
}

// editScript returns s with old (occurring once) replaced by new.
func editScript(t *testing.T, s *lua.Script, old, new string) *lua.Script {
	t.Helper()
	if n := strings.Count(s.Source, old); n != 1 {
		t.Fatalf("%s: %q occurs %d times, want 1", s.Name, old, n)
	}
	body := strings.Replace(s.Source, old, new, 1)
	sum := sha1.Sum([]byte(body))
	return &lua.Script{Name: s.Name, Source: body, SHA1: hex.EncodeToString(sum[:])}
}
