package scenarios

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill-harness/faults"
	"seckill-harness/reports"
	"seckill-harness/runner"
)

func mustBuiltin(t *testing.T, name string) *Scenario {
	t.Helper()
	s, err := Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustParse(t *testing.T, src string) *Scenario {
	t.Helper()
	s, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return s
}

func TestEveryBuiltinValidates(t *testing.T) {
	infos := Builtins()
	want := []string{"smoke", "stock-one", "replay-storm", "same-user", "release-storm", "failover-graceful",
		"failover-kill", "master-pause", "slot-migration", "disconnect-before-reply", "slow-aof", "latency-spike",
		"partition-master", "flash-sale", "nightly", "nightly-ci", "sold-out-90", "duplicates-50", "read-only-replays",
		"full-path", "mq-flaky", "dispatcher-crash", "full-path-failover", "full-path-disconnect", "pool-exhaustion", "compensator-crash",
		"oom", "aof-rewrite", "script-flush", "slot-down"}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("built-in %s missing (have %v)", w, names)
		}
	}
	for _, in := range infos {
		t.Run(in.Name, func(t *testing.T) {
			s := mustBuiltin(t, in.Name)
			if err := s.Validate(); err != nil {
				t.Fatalf("invalid:\n%v", err)
			}
			if s.Name != in.Name || s.Source != "builtin:"+in.Name {
				t.Errorf("name %q source %q, want %q", s.Name, s.Source, in.Name)
			}
			if in.Proves == "" || strings.Contains(in.Proves, "\n") || len(in.Proves) > 260 {
				t.Errorf("proves must be one non-empty line: %q", in.Proves)
			}
			if in.Suite {
				ms, err := s.Members()
				if err != nil || len(ms) != len(s.Suite) {
					t.Fatalf("members: %v", err)
				}
				if s.Evaluate(&reports.Report{}) != nil {
					t.Error("a suite evaluates nothing")
				}
				return
			}
			if in.Duration <= 0 || in.Duration > 2*time.Minute {
				t.Errorf("duration %s", in.Duration)
			}
			planned, err := s.Plan()
			if err != nil || len(planned) != len(s.Faults) {
				t.Fatalf("plan: %v", err)
			}
			for i, p := range s.Phases {
				c := p.Config
				if err := c.Validate(); err != nil {
					t.Errorf("phase %d: the engine refuses it: %v", i, err)
				}
				if c.Seed != s.Seed || c.Users != s.Activity.Users || c.TTL != s.Activity.ReservationTTL {
					t.Errorf("phase %d: seed/users/ttl not copied: %+v", i, c)
				}
				// Runnable on a 2-core machine: open-loop peaks up to ~3,000 ops/s.
				if c.Mode == runner.ModeOpen && max(c.Shape.Rate, c.Shape.Peak) > 3000 {
					t.Errorf("phase %s: %g ops/s is more than a 2-core machine drives", p.Name, max(c.Shape.Rate, c.Shape.Peak))
				}
			}
			if _, err := json.Marshal(s.Resolved()); err != nil {
				t.Errorf("resolved: %v", err)
			}
		})
	}
}

func TestNightlySizes(t *testing.T) {
	n := mustBuiltin(t, "nightly")
	ms, err := n.Members()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	pipelined := map[string]bool{}
	for _, m := range ms {
		if m.Duration() > 20*time.Second {
			t.Errorf("nightly member %s lasts %s (keep each at most ~20 s)", m.Name, m.Duration())
		}
		// A pipeline member's fault may be its flaky MQ or its rejects.
		if len(m.Faults) == 0 && m.Pipeline == nil {
			t.Errorf("nightly member %s injects no fault", m.Name)
		}
		if m.Pipeline != nil {
			pipelined[m.Name] = true
			if m.Drain <= 0 || m.Drain > 15*time.Second {
				t.Errorf("nightly member %s drains for %s", m.Name, m.Drain)
			}
		}
		for _, f := range m.Faults {
			kinds[f.Kind+":"+f.Params["mode"]] = true
		}
	}
	for _, k := range []string{"failover:graceful", "failover:kill", "failover:pause", "slot-migration:", "disconnect-before-reply:", "slow-aof:", "aof-rewrite:", "oom:", "script-flush:", "latency:", "partition:", "dispatcher-crash:"} {
		if !kinds[k] {
			t.Errorf("nightly does not cover %s", k)
		}
	}
	for _, p := range []string{"full-path", "mq-flaky", "dispatcher-crash", "full-path-failover", "full-path-disconnect"} {
		if !pipelined[p] {
			t.Errorf("nightly lacks the pipeline member %s", p)
		}
	}
	// 4 m 20 s since soldout-notice-lost and service-crash joined.
	if d := n.Duration(); d > 4*time.Minute+30*time.Second {
		t.Errorf("nightly: %s of load", d)
	}
	ci := mustBuiltin(t, "nightly-ci")
	if d := ci.Duration(); d > 80*time.Second {
		t.Errorf("nightly-ci: %s of load does not fit a 2-minute budget with start-up", d)
	}
	ciPipeline := false
	for _, m := range ci.Suite {
		if !slices.Contains(n.Suite, m) {
			t.Errorf("nightly-ci member %s is not in nightly", m)
		}
		ciPipeline = ciPipeline || pipelined[m]
	}
	if !ciPipeline {
		t.Error("nightly-ci runs no pipeline member")
	}
	for _, in := range Builtins() {
		if in.Name == "nightly-ci" && (!in.Pipeline || in.Drain != 10*time.Second) {
			t.Errorf("nightly-ci info: %+v", in)
		}
	}
}

// Each file under testdata/bad starts with "# want-line: N", "# want-field:
// F" and "# want-text: T"; loading and validating it must fail with an error
// naming file:N, the field and the text.
func TestBadScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 12 {
		t.Fatalf("%d bad scenarios, want at least 12", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := header(t, f)
			var got error
			s, err := Load(f)
			if err != nil {
				got = err
			} else if got = s.Validate(); got == nil {
				t.Fatal("no error")
			}
			msg := got.Error()
			var hit string
			for _, line := range strings.Split(msg, "\n") {
				if strings.Contains(line, fmt.Sprintf("%s:%s:", f, want["line"])) && strings.Contains(line, want["field"]) {
					hit = line
					break
				}
			}
			if hit == "" {
				t.Fatalf("no error line names %s:%s and %q:\n%s", f, want["line"], want["field"], msg)
			}
			if !strings.Contains(hit, want["text"]) {
				t.Errorf("error %q does not say %q", hit, want["text"])
			}
		})
	}
}

func header(t *testing.T, path string) map[string]string {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# want-"), ": ")
		if !strings.HasPrefix(sc.Text(), "# want-") || !ok {
			break
		}
		out[k] = v
	}
	for _, k := range []string{"line", "field", "text"} {
		if out[k] == "" {
			t.Fatalf("%s: no # want-%s header", path, k)
		}
	}
	if _, err := strconv.Atoi(out["line"]); err != nil {
		t.Fatalf("%s: want-line %q", path, out["line"])
	}
	return out
}

func TestValidateReportsEveryProblem(t *testing.T) {
	s := mustParse(t, `
name: many
activity: {stock: 2, buckets: 3, users: -1}
phases:
  - {name: a, duration: 0s, rate: -1}
  - {name: a, concurrency: 0}
`)
	err := s.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"test.yaml:3: activity.buckets", "test.yaml:3: activity.users", "test.yaml:5: phases[0].duration",
		"test.yaml:5: phases[0].rate", "test.yaml:6: phases[1].name", "test.yaml:6: phases[1].concurrency"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

func TestDefaultsAndMixMerge(t *testing.T) {
	s := mustParse(t, `
seed: 7
activity: {users: 300, reservation_ttl: 1m}
defaults:
  rate: 100
  concurrency: 8
  mix: {replay: 0.2, release: 0.1}
phases:
  - {name: one, duration: 2s}
  - {name: two, duration: 3s, rate: 200, mix: {replay: 0.5}}
  - {name: three, duration: 1s, mode: closed, concurrency: 4, max_ops: 10}
`)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Name != "test" {
		t.Errorf("default name %q", s.Name)
	}
	p := s.Phases
	if p[0].Config.Shape.Rate != 100 || p[1].Config.Shape.Rate != 200 || p[0].Config.Concurrency != 8 || p[2].Config.Concurrency != 4 {
		t.Errorf("rates/concurrency: %+v", p)
	}
	if p[0].Config.Mix != (runner.Mix{Replay: 0.2, Release: 0.1}) || p[1].Config.Mix != (runner.Mix{Replay: 0.5, Release: 0.1}) {
		t.Errorf("mix: %+v %+v", p[0].Config.Mix, p[1].Config.Mix)
	}
	if p[2].Config.Mode != runner.ModeClosed || p[2].Config.MaxOps != 10 {
		t.Errorf("closed phase: %+v", p[2].Config)
	}
	for _, ph := range p {
		if ph.Config.Seed != 7 || ph.Config.Users != 300 || ph.Config.TTL != time.Minute {
			t.Errorf("%s: %+v", ph.Name, ph.Config)
		}
	}
	if s.Duration() != 6*time.Second {
		t.Errorf("duration %s", s.Duration())
	}
	spans := s.PhaseSpans()
	if len(spans) != 3 || spans[1].Start != 2*time.Second || spans[1].End != 5*time.Second || spans[2].Name != "three" {
		t.Errorf("spans %+v", spans)
	}
	if s.Activity.Window != 6*time.Second+time.Hour {
		t.Errorf("window %s", s.Activity.Window)
	}
	// No phases: one phase "load" from defaults and the engine's defaults.
	d := mustParse(t, "name: d\n")
	if len(d.Phases) != 1 || d.Phases[0].Name != "load" || d.Phases[0].Config.Shape.Rate != 2000 || d.Phases[0].Config.Mix != (runner.Mix{}) {
		t.Errorf("implicit phase: %+v", d.Phases)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
}

func TestSet(t *testing.T) {
	s := mustBuiltin(t, "failover-kill")
	for _, kv := range []string{
		"activity.stock=10", "seed=7", "phases.0.rate=500", "phases.load.duration=12s", "topology.masters=4",
		"faults.0.at=2s", "faults.failover.params.mode=pause", "assertions.max_unknown_ratio=0.05",
		"phases.*.mix.replay=0.3", "assertions.outcomes.ACCEPTED.max=10", "assertions.invariants=I1,I3",
	} {
		if err := s.Set(kv); err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
	}
	c := s.Phases[0].Config
	if s.Activity.Stock != 10 || s.Seed != 7 || c.Seed != 7 || c.Shape.Rate != 500 || c.Duration != 12*time.Second ||
		s.Topology.Masters != 4 || s.Faults[0].At != 2*time.Second || s.Faults[0].Params["mode"] != "pause" ||
		*s.Assertions.MaxUnknownRatio != 0.05 || c.Mix.Replay != 0.3 || c.Mix.SameUser != 0.02 ||
		len(s.Assertions.Outcomes) != 1 || *s.Assertions.Outcomes[0].Max != 10 || !slices.Equal(s.Assertions.Invariants, []string{"I1", "I3"}) {
		t.Errorf("not applied: %+v %+v %+v", s, c, s.Faults)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	// A bad value is reported by Validate at the --set.
	if err := s.Set("phases.0.rate=-3"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--set phases.0.rate=-3: phases[0].rate: -3") {
		t.Errorf("want the --set named: %v", err)
	}
	// key= removes the setting: back to the default.
	if err := s.Set("phases.0.rate="); err != nil || s.Phases[0].Config.Shape.Rate != 2000 {
		t.Errorf("reset: %v %g", err, s.Phases[0].Config.Shape.Rate)
	}
	// Adding a fault at index len.
	if err := s.Set("faults.1.kind=latency"); err != nil || len(s.Faults) != 2 || s.Faults[1].Kind != "latency" {
		t.Errorf("append: %v %+v", err, s.Faults)
	}
}

func TestSetRejects(t *testing.T) {
	for kv, want := range map[string][]string{
		"activity.stok=1":       {`unknown key "activity.stok"`, "did you mean activity.stock", "valid there: stock, buckets, users"},
		"bogus=1":               {`unknown key "bogus"`, "all keys:", "phases.<i|name|*>"},
		"phases.nope.rate=1":    {`no entry named "nope"`, "names: load"},
		"phases.5.rate=1":       {"phases has 1 entries"},
		"activity=1":            {"is a section", "activity.stock"},
		"seed":                  {"want key=value"},
		"activity.users=lots":   {"activity.users", "want an integer"},
		"seed.x=1":              {"seed is a value"},
		"assertions.slo.x.p99=": {"selected by index"},
	} {
		s := mustBuiltin(t, "smoke")
		if kv == "phases.nope.rate=1" || kv == "phases.5.rate=1" {
			s = mustBuiltin(t, "partition-master")
		}
		before := s.Resolved()
		err := s.Set(kv)
		if err == nil {
			t.Errorf("%s: accepted", kv)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not say %q: %v", kv, w, err)
			}
		}
		if !strings.Contains(err.Error(), kv) && kv != "seed" {
			t.Errorf("%s: error does not name the --set: %v", kv, err)
		}
		after, _ := json.Marshal(s.Resolved())
		b, _ := json.Marshal(before)
		if string(after) != string(b) {
			t.Errorf("%s: a failed Set changed the scenario", kv)
		}
	}
}

func TestSetOnSuiteForwards(t *testing.T) {
	n := mustBuiltin(t, "nightly-ci")
	if err := n.Set("rate_scale=0.5"); err != nil {
		t.Fatal(err)
	}
	if err := n.Set("phases.warmup.rate=1"); err == nil {
		t.Error("a key that no member has was accepted")
	}
	ms, err := n.Members()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.RateScale != 0.5 || m.Phases[0].Config.Shape.Rate != 500 {
			t.Errorf("%s: rate_scale not forwarded: %g %g", m.Name, m.RateScale, m.Phases[0].Config.Shape.Rate)
		}
	}
	if err := n.Validate(); err != nil {
		t.Error(err)
	}
}

func TestRateScale(t *testing.T) {
	s := mustBuiltin(t, "flash-sale")
	c := s.Phases[0].Config
	if s.RateScale != 0.015 || c.Shape.Rate != 600 || c.Shape.Peak != 2850 || s.Activity.Users != 15000 || c.Users != 15000 {
		t.Errorf("flash-sale at 0.015: rate %g peak %g users %d", c.Shape.Rate, c.Shape.Peak, s.Activity.Users)
	}
	// Operations = users: one operation per user at any scale.
	ops := c.Shape.Rate*c.Duration.Seconds() + (c.Shape.Peak-c.Shape.Rate)*(c.Shape.Hold+c.Shape.RampUp/2+c.Shape.RampDown/2).Seconds()
	if int(ops+0.5) != s.Activity.Users {
		t.Errorf("flash-sale: %g operations for %d users", ops, s.Activity.Users)
	}
	if err := s.Set("rate_scale=1"); err != nil {
		t.Fatal(err)
	}
	c = s.Phases[0].Config
	if c.Shape.Rate != 40000 || c.Shape.Peak != 190000 || s.Activity.Users != 1000000 {
		t.Errorf("full size: %g %g %d", c.Shape.Rate, c.Shape.Peak, s.Activity.Users)
	}
	// Without scale_users the users stay; every rate field scales.
	x := mustParse(t, `
rate_scale: 0.1
activity: {users: 5000}
phases:
  - {name: a, shape: linear, rate: 1000, slope: 100}
  - {name: b, shape: sine, rate: 1000, amplitude: 500, period: 2s}
  - {name: c, mode: closed, concurrency: 4}
`)
	if err := x.Validate(); err != nil {
		t.Fatal(err)
	}
	a, b := x.Phases[0].Config.Shape, x.Phases[1].Config.Shape
	if a.Rate != 100 || a.Slope != 10 || b.Rate != 100 || b.Amplitude != 50 || b.Period != 2*time.Second || x.Activity.Users != 5000 {
		t.Errorf("scaled: %+v %+v users %d", a, b, x.Activity.Users)
	}
	if x.Resolved()["rate_scale"] != 0.1 {
		t.Error("rate_scale not recorded in Resolved")
	}
	if err := x.Set("rate_scale=-1"); err != nil {
		t.Fatal(err)
	}
	if err := x.Validate(); err == nil || !strings.Contains(err.Error(), "rate_scale") {
		t.Errorf("negative rate_scale: %v", err)
	}
}

func TestResolve(t *testing.T) {
	s, err := Resolve("smoke")
	if err != nil || s.Name != "smoke" {
		t.Fatalf("%v %v", s, err)
	}
	_, err = Resolve("no-such-thing")
	if err == nil {
		t.Fatal("resolved an unknown name")
	}
	for _, n := range builtinNames() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error does not list %s: %v", n, err)
		}
	}
	_, err = Builtin("nope")
	if err == nil || !strings.Contains(err.Error(), "stock-one") {
		t.Errorf("Builtin(nope): %v", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(p, []byte("phases: [{duration: 3s, rate: 100}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Resolve(p)
	if err != nil || f.Name != "mine" || f.Source != p || f.Duration() != 3*time.Second {
		t.Fatalf("file: %+v %v", f, err)
	}
	// A suite file may name files relative to itself.
	suite := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(suite, []byte("suite: [smoke, mine.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	if ms, err := st.Members(); err != nil || len(ms) != 2 || ms[1].Name != "mine" {
		t.Fatalf("members: %v", err)
	}
}

func TestSuiteRules(t *testing.T) {
	s := mustParse(t, "name: s\nsuite: [nightly, s]\nphases: [{duration: 1s}]\n")
	err := s.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{"test.yaml:3: phases: a suite", "suite[0]: \"nightly\" is a suite itself", "suite[1]: \"s\": a suite cannot contain itself"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in %v", w, err)
		}
	}
}

func TestPlan(t *testing.T) {
	s := mustParse(t, `
phases: [{name: load, duration: 20s}]
faults:
  - {kind: latency, at: 2s, for: 3s, target: hot-replica, params: {latency: 20}}
  - {kind: latency, at: 4s, for: 3s}
  - {kind: failover, name: kill, at: 10s, params: {mode: kill}}
`)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Faults[0].Name != "latency" || s.Faults[1].Name != "latency#2" || s.Faults[2].Name != "kill" {
		t.Errorf("names: %+v", s.Faults)
	}
	ps, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 || ps[0].At != 2*time.Second || ps[0].For != 3*time.Second || ps[2].For != 0 || ps[0].Kind != "latency" {
		t.Fatalf("planned: %+v", ps)
	}
	if ps[0].Spec != "latency:at=2s,for=3s,target=hot-replica,latency=20" {
		t.Errorf("spec %q", ps[0].Spec)
	}
	// The same text parses back to the same fault through --fault's parser.
	if q, err := faults.Parse(ps[0].Spec); err != nil || q.At != ps[0].At || q.Params["latency"] != "20" {
		t.Errorf("reparse: %v", err)
	}
	want := []string{"load", "baseline", "during latency", "after latency", "during latency#2", "after latency#2", "during kill", "after kill"}
	if got := s.sloPhases(); !slices.Equal(got, want) {
		t.Errorf("slo phases %v", got)
	}
	// Toxics may stack on one target; an exclusive fault may follow another.
	ok := mustParse(t, `
phases: [{duration: 30s}]
faults:
  - {kind: partition, at: 2s, for: 3s}
  - {kind: failover, at: 5s, for: 5s}
  - {kind: slow-aof, at: 6s, for: 2s, target: hot-replica}
`)
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	bad := mustParse(t, `
phases: [{duration: 30s}]
faults:
  - {kind: slot-migration, at: 2s, params: {slots: all}}
  - {kind: slow-aof, at: 20s, for: 2s, target: hot-replica}
`)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "overlaps faults[0]") {
		t.Errorf("all-masters overlap: %v", err)
	}
}

func report() *reports.Report {
	return &reports.Report{
		Totals:            reports.Totals{Ops: 1000, Outcomes: map[string]int64{"ACCEPTED": 1, "SOLD_OUT": 999}},
		ThroughputOpsPerS: 990,
		LatencyMs:         reports.Percentiles{P50: 0.5, P95: 1, P99: 3, P999: 9, Max: 40},
		ServiceTimeMs:     reports.Percentiles{P50: 0.4, P95: 0.9, P99: 2, P999: 8, Max: 39},
		Phases: []reports.Phase{
			{Name: "load", Ops: 1000, LatencyMs: reports.Percentiles{P99: 3}, ThroughputOpsPerS: 990},
			{Name: "baseline", Ops: 300, LatencyMs: reports.Percentiles{P99: 2}, ServiceTimeMs: reports.Percentiles{P99: 1}, ThroughputOpsPerS: 1000},
			{Name: "during latency", Ops: 300, LatencyMs: reports.Percentiles{P99: 25}, ThroughputOpsPerS: 950},
			{Name: "after latency", Ops: 0},
		},
		Unknown:  reports.Unknown{Total: 5},
		LostAcks: 0,
		Invariants: []reports.Invariant{
			{ID: "I1", Name: "stock_conservation", Status: reports.StatusPass},
			{ID: "I6", Name: "no_lost_acks", Status: reports.StatusFail, Detail: "2 lost"},
			{ID: "I9", Name: "liveness", Status: reports.StatusSkip},
		},
	}
}

func TestEvaluate(t *testing.T) {
	s := mustParse(t, `
phases: [{name: load, duration: 10s}]
faults: [{kind: latency, at: 3s, for: 3s}]
assertions:
  invariants: [I1, I9]
  slo:
    - {phase: baseline, p99: 5ms, of: service_time}
    - {phase: during latency, p99: 20ms, min_throughput: 900}
    - {phase: after latency, p99: 20ms}
    - {p999: 10ms, max: 30ms}
  max_lost_acks: 0
  max_unknown_ratio: 0.001
  min_throughput: 900
  outcomes:
    ACCEPTED: {exactly: 1}
    SOLD_OUT: {min: 1000}
    UNKNOWN: {max: 0}
`)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	got := map[string]reports.Assertion{}
	var order []string
	for _, a := range s.Evaluate(report()) {
		if !a.Status.Valid() {
			t.Errorf("%s: status %q", a.Name, a.Status)
		}
		got[a.Name] = a
		order = append(order, a.Name)
	}
	want := map[string]reports.Status{
		"invariants pass: I1, I9":                reports.StatusPass, // I6 failed but is waived; I9 skipped
		"service_time p99 <= 5ms in baseline":    reports.StatusPass,
		"p99 <= 20ms during latency":             reports.StatusFail,
		"throughput >= 900 ops/s during latency": reports.StatusPass,
		"p99 <= 20ms after latency":              reports.StatusFail, // no operations
		"p999 <= 10ms":                           reports.StatusPass,
		"max <= 30ms":                            reports.StatusFail,
		"lost_acks <= 0":                         reports.StatusPass,
		"unknown ratio <= 0.001":                 reports.StatusFail,
		"throughput >= 900 ops/s":                reports.StatusPass,
		"outcomes.ACCEPTED == 1":                 reports.StatusPass,
		"outcomes.SOLD_OUT >= 1000":              reports.StatusFail,
		"outcomes.UNKNOWN <= 0":                  reports.StatusPass,
	}
	for name, st := range want {
		a, ok := got[name]
		if !ok {
			t.Errorf("no assertion %q (have %v)", name, order)
			continue
		}
		if a.Status != st {
			t.Errorf("%s: %s, want %s (observed %g, %s)", name, a.Status, st, a.Observed, a.Detail)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d assertions, want %d: %v", len(got), len(want), order)
	}
	if a := got["p99 <= 20ms during latency"]; a.Observed != 25 || *a.Threshold != 20 || a.Unit != "ms" {
		t.Errorf("observed/threshold: %+v", a)
	}
	if a := got["p99 <= 20ms after latency"]; !strings.Contains(a.Detail, "no operations") {
		t.Errorf("detail %q", a.Detail)
	}
	if a := got["unknown ratio <= 0.001"]; a.Observed != 0.005 || !strings.Contains(a.Detail, "5 UNKNOWN of 1000") {
		t.Errorf("unknown ratio %+v", a)
	}
	if a := got["invariants pass: I1, I9"]; !strings.Contains(a.Detail, "I6") || !strings.Contains(a.Detail, "I9") {
		t.Errorf("invariant detail %q", a.Detail)
	}
	if !s.Waived("I6") || s.Waived("I1") {
		t.Error("Waived")
	}

	// Default invariants: every one that ran must pass; I6 failed.
	d := mustParse(t, "phases: [{name: load}]\nassertions: {slo: [{phase: load, p99: 5ms}]}\n")
	as := d.Evaluate(report())
	if len(as) != 2 || as[0].Name != "invariants pass (all that ran)" || as[0].Status != reports.StatusFail || !strings.Contains(as[0].Detail, "I6 no_lost_acks failed: 2 lost") {
		t.Errorf("default invariants: %+v", as)
	}
	if as[1].Status != reports.StatusPass || d.Waived("I6") {
		t.Errorf("%+v", as[1])
	}
	// The only load phase, which a report does not list, is the whole run.
	rep := report()
	rep.Phases = rep.Phases[1:]
	as = d.Evaluate(rep)
	if as[1].Name != "p99 <= 5ms in load" || as[1].Status != reports.StatusPass || as[1].Observed != 3 || !strings.Contains(as[1].Detail, "load is the only load phase: judged on the whole run") {
		t.Errorf("only phase: %+v", as[1])
	}
	// A phase the report does not have fails and says so.
	two := mustParse(t, "phases: [{name: load}, {name: more}]\nassertions: {slo: [{phase: load, p99: 5ms}]}\n")
	as = two.Evaluate(rep)
	if as[1].Status != reports.StatusFail || !strings.Contains(as[1].Detail, `phase "load" is not in the report`) {
		t.Errorf("missing phase: %+v", as[1])
	}
	// An explicitly required invariant missing from the report fails.
	m := mustParse(t, "assertions: {invariants: [I4]}\n")
	if as := m.Evaluate(report()); as[0].Status != reports.StatusFail || !strings.Contains(as[0].Detail, "I4 is not in the report") {
		t.Errorf("missing invariant: %+v", as[0])
	}
}

func TestKnownPaths(t *testing.T) {
	s := mustParse(t, "path: get-then-decr\n")
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), `"get-then-decr": unknown reserve path; valid paths: reference`) {
		t.Errorf("%v", err)
	}
	if err := s.ValidateFor([]string{"reference", "get-then-decr"}); err != nil {
		t.Error(err)
	}
}

func TestYAMLFeatures(t *testing.T) {
	s := mustParse(t, `
name: anchors
defaults: &d
  rate: 300
  concurrency: 7
phases:
  - <<: *d
    name: a
    duration: 1000ms
  - {name: b, duration: 1s, rate: 1e3}
description: |
  two
  lines
`)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Phases[0].Config.Shape.Rate != 300 || s.Phases[0].Config.Concurrency != 7 || s.Phases[1].Config.Shape.Rate != 1000 {
		t.Errorf("%+v", s.Phases)
	}
	if s.Description != "two\nlines" {
		t.Errorf("description %q", s.Description)
	}
	for src, want := range map[string]string{
		"":                  "empty scenario",
		"a: 1\n---\nb: 2\n": "x.yaml:3: one scenario per file",
		"- a\n":             "x.yaml:1: not a YAML mapping: give a scenario file",
		"phases: 3\n":       "x.yaml:1: phases: want a list",
		"topology: [1]\n":   "x.yaml:1: topology: want a mapping",
		"name: [a]\n":       "x.yaml:1: name: want a string",
		"seed:\n":           "x.yaml:1: seed: no value",
		"phases: [*nope]\n": "alias",
	} {
		_, err := Parse("x.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

func TestSetKeysCoverSchema(t *testing.T) {
	keys := SetKeys()
	for _, k := range []string{"rate_scale", "activity.stock", "phases.<i|name|*>.mix.replay", "faults.<i|name|*>.params.<parameter>",
		"assertions.slo.<i>.p99", "assertions.outcomes.<outcome>.exactly", "topology.node_timeout"} {
		if !slices.Contains(keys, k) {
			t.Errorf("SetKeys lacks %s", k)
		}
	}
	for _, k := range []string{"pipeline.mq.timeout", "pipeline.drain", "pipeline.dispatcher.retry_after", "pipeline.defects", "pipeline.seed"} {
		if !slices.Contains(keys, k) {
			t.Errorf("SetKeys lacks %s", k)
		}
	}
	// Every documented key can be set on a built-in (index 0, name "x").
	for _, k := range keys {
		if strings.Contains(k, "suite") || strings.HasPrefix(k, "name") {
			continue
		}
		s := mustBuiltin(t, "latency-spike")
		key := strings.NewReplacer("<i|name|*>", "0", "<i>", "0", "<parameter>", "latency", "<outcome>", "ACCEPTED").Replace(k)
		val := "1"
		switch {
		case strings.HasPrefix(key, "pipeline."):
			switch schemaAt(t, key).t {
			case tDuration:
				val = "1s"
			case tStrings:
				val = "order-no-dedupe"
			case tFloat:
				val = "0.5"
			}
		case strings.HasSuffix(key, "shape"):
			val = "constant"
		case strings.HasSuffix(key, "mode"):
			val = "open"
		case strings.HasSuffix(key, "kind"):
			val = "latency"
		case strings.HasSuffix(key, ".of"):
			val = "latency"
		case strings.HasSuffix(key, "path"):
			val = "reference"
		case strings.HasSuffix(key, "invariants"):
			val = "I1"
		case strings.HasSuffix(key, "phase"):
			val = "load"
		case strings.HasSuffix(key, "appendfsync"):
			val = "everysec"
		case strings.HasSuffix(key, "local_soldout"):
			val = "1s"
		case strings.HasSuffix(key, "max_lag"):
			val = "1s"
		case strings.HasSuffix(key, "appendonly") || strings.HasSuffix(key, "scale_users"):
			val = "true"
		case strings.Contains(key, "timeout") || strings.HasSuffix(key, "duration") || strings.HasSuffix(key, "at") ||
			strings.HasSuffix(key, "for") || strings.HasSuffix(key, "ttl") || strings.HasSuffix(key, "window") ||
			strings.HasSuffix(key, "backoff") || strings.HasSuffix(key, "period") || strings.HasSuffix(key, "hold") ||
			strings.HasSuffix(key, "ramp_up") || strings.HasSuffix(key, "ramp_down") || strings.Contains(key, ".p5") || strings.Contains(key, ".p9") ||
			strings.HasSuffix(key, ".max") && strings.Contains(key, "slo"):
			val = "1s"
		}
		if err := s.Set(key + "=" + val); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

func TestErrorsNameSetOrigin(t *testing.T) {
	s := mustBuiltin(t, "smoke")
	if err := s.Set("activity.buckets=5000"); err != nil {
		t.Fatal(err)
	}
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), "--set activity.buckets=5000: activity.buckets: 5000 buckets for stock 1000") {
		t.Errorf("%v", err)
	}
	// An error on a field inherited from defaults points at defaults:.
	d := mustParse(t, "defaults:\n  concurrency: 0\nphases:\n  - name: a\n")
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "test.yaml:2: defaults.concurrency: 0: must be positive") {
		t.Errorf("%v", err)
	}
}

// pool_size and pool_timeout reach the topology; a negative one is refused
// naming the field.
func TestPoolSizeInTopology(t *testing.T) {
	s := mustBuiltin(t, "pool-exhaustion")
	if s.Topology.PoolSize <= 0 || s.Topology.PoolTimeout <= 0 {
		t.Fatalf("pool-exhaustion topology %+v: want a pool size and timeout", s.Topology)
	}
	bad, err := Parse("bad.yaml", []byte("name: bad\ntopology: {pool_size: -1}\nphases:\n  - {duration: 1s, rate: 10}\n"))
	if err == nil {
		err = bad.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "topology.pool_size") {
		t.Fatalf("pool_size -1: want an error naming topology.pool_size, got %v", err)
	}
}

// expect_fail: only checks that count their failures, a minimum of at
// least 1, never an id also required to pass.
func TestExpectFailValidation(t *testing.T) {
	base := "name: x\nphases: [{name: load, duration: 1s}]\nassertions:\n"
	for body, want := range map[string]string{
		"  expect_fail: {I7: {min: 1}}\n":                     "only a check that counts its failures",
		"  expect_fail: {I6: {min: 0}}\n":                     "want at least 1",
		"  invariants: [I6]\n  expect_fail: {I6: {min: 1}}\n": "also required to pass",
		"  expect_fail: {I6: {minimum: 1}}\n":                 "minimum",
	} {
		s, err := Parse("x.yaml", []byte(base+body))
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
	s, err := Parse("x.yaml", []byte(base+"  expect_fail: {i6: {}, I3: {min: 2}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Assertions.ExpectFail["I6"] != 1 || s.Assertions.ExpectFail["I3"] != 2 {
		t.Errorf("ExpectFail = %v", s.Assertions.ExpectFail)
	}
}

// lost_acks that the run could not count (a system under test without
// records) makes max_lost_acks a skip with the reason, never a pass on 0.
func TestLostAcksNotJudgedSkipsItsBound(t *testing.T) {
	s := mustParse(t, "phases: [{name: load, duration: 10s}]\nassertions:\n  max_lost_acks: 0\n")
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	rep := report()
	rep.LostAcks, rep.LostAcksNotJudged = 0, "this system under test does not expose its reservation records"
	var found bool
	for _, a := range s.Evaluate(rep) {
		if a.Name == "lost_acks <= 0" {
			found = true
			if a.Status != reports.StatusSkip || !strings.Contains(a.Detail, "does not expose") {
				t.Errorf("%s: %s %q, want skip with the reason", a.Name, a.Status, a.Detail)
			}
		}
	}
	if !found {
		t.Fatal("no lost_acks assertion")
	}
}

// A required invariant the run waived as a consequence of a waived one is
// listed as waived by the invariants assertion, not as a failure.
func TestRequiredConsequenceIsWaived(t *testing.T) {
	s := mustParse(t, "phases: [{name: load, duration: 10s}]\nassertions:\n  invariants: [I3]\n")
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	rep := report()
	rep.Invariants = []reports.Invariant{
		{ID: "I3", Name: "no_oversell", Status: reports.StatusFail, Waived: true, ConsequenceOf: "I6"},
		{ID: "I6", Name: "no_lost_acks", Status: reports.StatusFail, Waived: true},
	}
	a := s.Evaluate(rep)[0]
	if a.Status != reports.StatusPass || !strings.Contains(a.Detail, "I3 (a consequence of I6)") {
		t.Errorf("%s: %s %q", a.Name, a.Status, a.Detail)
	}
	rep.Invariants[0].Waived = false // required and not a waived consequence: a failure
	if a := s.Evaluate(rep)[0]; a.Status != reports.StatusFail {
		t.Errorf("%s: %s %q", a.Name, a.Status, a.Detail)
	}
}
