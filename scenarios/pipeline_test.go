package scenarios

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/reports"
	"seckill-harness/sut/pipeline"
)

// schemaAt is the schema of a SetKeys pattern ("pipeline.mq.timeout",
// "phases.<i|name|*>.rate") or of a concrete key.
func schemaAt(t *testing.T, key string) *schema {
	t.Helper()
	sch := rootSchema
	for _, seg := range strings.Split(key, ".") {
		switch sch.t {
		case tMap:
			sch = sch.field(seg)
		case tList, tDict:
			sch = sch.elem // seg is the selector / the free key
		default:
			t.Fatalf("%s: %s is under a value", key, seg)
		}
		if sch == nil {
			t.Fatalf("%s: no field %s", key, seg)
		}
	}
	return sch
}

func TestPipelineAbsentIsOff(t *testing.T) {
	s := mustParse(t, "phases: [{duration: 2s}]\n")
	if s.Pipeline != nil || s.Drain != 0 || s.HasPipeline() {
		t.Errorf("no pipeline: section, yet %+v drain %s", s.Pipeline, s.Drain)
	}
	if _, ok := s.Resolved()["pipeline"]; ok {
		t.Error("Resolved has a pipeline without a pipeline: section")
	}
}

func TestPipelineDefaults(t *testing.T) {
	for _, src := range []string{"seed: 9\npipeline: {}\n", "seed: 9\npipeline:\n"} {
		s := mustParse(t, src)
		if err := s.Validate(); err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		want := pipeline.DefaultConfig()
		want.Seed = 9 // the scenario's seed
		if s.Pipeline == nil || *s.Pipeline != want {
			t.Errorf("%q: pipeline %+v, want the defaults %+v", src, s.Pipeline, want)
		}
		if s.Drain != DefaultDrain || DefaultDrain != 10*time.Second {
			t.Errorf("%q: drain %s", src, s.Drain)
		}
	}
	// The pipeline's own seed wins over the scenario's.
	s := mustParse(t, "seed: 9\npipeline: {seed: 3}\n")
	if s.Pipeline.Seed != 3 {
		t.Errorf("seed %d", s.Pipeline.Seed)
	}
}

// The brief's example, field by field.
func TestPipelineEveryField(t *testing.T) {
	s := mustParse(t, `
phases: [{duration: 5s}]
pipeline:
  seed: 42
  mq: {ack: 0.9, error: 0, timeout: 0.1, timeout_delivered: 0.5, timeout_after: 20ms, lost: 0}
  order: {reject: 0.1, delay: 50ms, workers: 8}
  dispatcher: {every: 20ms, batch: 100, workers: 8, retry_after: 100ms}
  expiry: {every: 100ms, batch: 100, max_pages: 20}
  release: {workers: 4, retry: 50ms, attempts: 5}
  call_timeout: 2s
  drain: 10s
  defects: []
`)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	want := pipeline.Config{
		Seed:        42,
		MQ:          pipeline.MQConfig{Ack: 0.9, Timeout: 0.1, TimeoutDelivered: 0.5, TimeoutAfter: 20 * time.Millisecond},
		Order:       pipeline.OrderConfig{Reject: 0.1, Delay: 50 * time.Millisecond, Workers: 8},
		Dispatcher:  pipeline.DispatcherConfig{Every: 20 * time.Millisecond, Batch: 100, Workers: 8, RetryAfter: 100 * time.Millisecond},
		Expiry:      pipeline.ExpiryConfig{Every: 100 * time.Millisecond, Batch: 100, MaxPages: 20},
		Release:     pipeline.ReleaseConfig{Workers: 4, Retry: 50 * time.Millisecond, Attempts: 5},
		CallTimeout: 2 * time.Second,
	}
	if *s.Pipeline != want || s.Drain != 10*time.Second {
		t.Errorf("got %+v drain %s\nwant %+v", *s.Pipeline, s.Drain, want)
	}
	o := mustParse(t, `
pipeline:
  mq: {timeout: 0.3, error: 0.1, lost: 0.02}
  order: {workers: 2}
  dispatcher: {batch: 7, workers: 3, retry_after: 1s, every: 5ms}
  expiry: {every: 1s, batch: 9, max_pages: 2}
  release: {workers: 1, retry: 1ms, attempts: 9}
  call_timeout: 500ms
  drain: 3s
  defects: [order-no-dedupe, expiry-no-check]
activity: {reservation_ttl: 1s}
`)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	c := o.Pipeline
	if c.MQ.Ack < 0.6-1e-12 || c.MQ.Ack > 0.6+1e-12 || c.MQ.Error != 0.1 || c.MQ.Timeout != 0.3 || c.MQ.Lost != 0.02 ||
		c.Order.Workers != 2 || c.Dispatcher != (pipeline.DispatcherConfig{Every: 5 * time.Millisecond, Batch: 7, Workers: 3, RetryAfter: time.Second}) ||
		c.Expiry != (pipeline.ExpiryConfig{Every: time.Second, Batch: 9, MaxPages: 2}) ||
		c.Release != (pipeline.ReleaseConfig{Workers: 1, Retry: time.Millisecond, Attempts: 9}) ||
		c.CallTimeout != 500*time.Millisecond || o.Drain != 3*time.Second ||
		c.Defects != (pipeline.Defects{OrderNoDedupe: true, ExpiryNoCheck: true}) {
		t.Errorf("%+v drain %s", *c, o.Drain)
	}
}

func TestPipelineMQShares(t *testing.T) {
	for src, want := range map[string]string{
		// ack not written: the rest.
		"mq: {timeout: 0.1}":               "",
		"mq: {error: 0.25, timeout: 0.25}": "",
		"mq: {}":                           "",
		// ack written: the three add up to 1.
		"mq: {ack: 0.9, timeout: 0.1}":                        "",
		"mq: {ack: 0.7, error: 0.1, timeout: 0.2}":            "",
		"mq: {ack: 0.9, timeout: 0.2}":                        "test.yaml:3: pipeline.mq: ack 0.9 + error 0 + timeout 0.2 = 1.1",
		"mq: {ack: 0.5}":                                      "ack 0.5 + error 0 + timeout 0 = 0.5: the outcomes of a send must add up to 1",
		"mq: {ack: 0}":                                        "= 0: the outcomes of a send must add up to 1",
		"mq: {error: 0.6, timeout: 0.6}":                      "test.yaml:3: pipeline.mq: error 0.6 + timeout 0.6 = 1.2: more than 1",
		"mq: {timeout: -0.1}":                                 "test.yaml:3: pipeline.mq.timeout: -0.1: a share is between 0 and 1",
		"mq: {ack: 1.5}":                                      "pipeline.mq.ack: 1.5: a share is between 0 and 1",
		"mq: {timeout_delivered: 2}":                          "pipeline.mq.timeout_delivered: 2: a share",
		"mq: {timeout: 0.1, timeout_after: 0s}":               "pipeline.mq.timeout_after: 0s: must be positive (omit it for the default 20ms)",
		"order: {delay: -1ms}":                                "pipeline.order.delay: -1ms: must not be negative",
		"order: {delay: 0s, workers: 0}":                      "pipeline.order.workers: 0: want at least 1 (omit it for the default 8)",
		"dispatcher: {batch: -1}":                             "pipeline.dispatcher.batch: -1: want at least 1",
		"call_timeout: 0s":                                    "pipeline.call_timeout: 0s: must be positive",
		"defects: [order-ignores-fence, order-ignores-fence]": `pipeline.defects[1]: "order-ignores-fence" is listed twice`,
	} {
		s := mustParse(t, "phases: [{duration: 5s}]\npipeline:\n  "+src+"\n")
		err := s.Validate()
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", src, err, want)
		}
		if want == "" {
			if c := s.Pipeline; c.MQ.Ack+c.MQ.Error+c.MQ.Timeout < 1-1e-9 || c.MQ.Ack+c.MQ.Error+c.MQ.Timeout > 1+1e-9 {
				t.Errorf("%s: shares %+v", src, c.MQ)
			}
			// What the pipeline itself would accept at Start.
			if err := s.Pipeline.Validate(); err != nil {
				t.Errorf("%s: the pipeline refuses it: %v", src, err)
			}
		}
	}
}

func TestPipelineSet(t *testing.T) {
	s := mustBuiltin(t, "mq-flaky")
	for _, kv := range []string{"pipeline.mq.timeout=0.2", "pipeline.drain=5s", "pipeline.order.reject=0.3",
		"pipeline.dispatcher.workers=2", "pipeline.defects=order-no-dedupe,expiry-no-check", "pipeline.expiry.max_pages=3"} {
		if err := s.Set(kv); err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	c := s.Pipeline
	if c.MQ.Timeout != 0.2 || c.MQ.Ack != 0.8 || s.Drain != 5*time.Second || c.Order.Reject != 0.3 || c.Dispatcher.Workers != 2 ||
		c.Expiry.MaxPages != 3 || !c.Defects.OrderNoDedupe || !c.Defects.ExpiryNoCheck || c.Defects.OrderIgnoresFence {
		t.Errorf("not applied: %+v drain %s", *c, s.Drain)
	}
	// The pipeline's seed follows the scenario's unless written.
	if err := s.Set("seed=7"); err != nil || s.Pipeline.Seed != 7 {
		t.Errorf("seed: %v %d", err, s.Pipeline.Seed)
	}
	if err := s.Set("pipeline.seed=11"); err != nil || s.Pipeline.Seed != 11 || s.Seed != 7 {
		t.Errorf("pipeline.seed: %v %d", err, s.Pipeline.Seed)
	}
	// key= goes back to the default.
	if err := s.Set("pipeline.drain="); err != nil || s.Drain != DefaultDrain {
		t.Errorf("reset drain: %v %s", err, s.Drain)
	}
	// A bad value is reported by Validate at the --set.
	if err := s.Set("pipeline.mq.lost=2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--set pipeline.mq.lost=2: pipeline.mq.lost: 2: a share is between 0 and 1") {
		t.Errorf("want the --set named: %v", err)
	}
	// pipeline= turns it off.
	if err := s.Set("pipeline="); err != nil || s.Pipeline != nil || s.Drain != 0 {
		t.Errorf("pipeline=: %v %+v", err, s.Pipeline)
	}

	// On a scenario without one, a pipeline key turns it on (defaults for the rest) ...
	off := mustBuiltin(t, "smoke")
	if err := off.Set("pipeline.drain="); err != nil || off.Pipeline != nil {
		t.Errorf("removing a setting of an absent pipeline turned it on: %v", err)
	}
	if err := off.Set("pipeline.mq.timeout=0.1"); err != nil || off.Pipeline == nil || off.Pipeline.MQ.Ack != 0.9 || off.Drain != DefaultDrain {
		t.Fatalf("turn on: %v %+v", err, off.Pipeline)
	}
	if err := off.Validate(); err != nil {
		t.Error(err)
	}
	// ... and the P ids become valid assertions.
	if err := off.Set("assertions.invariants=I1,P2"); err != nil {
		t.Fatal(err)
	}
	if err := off.Validate(); err != nil {
		t.Error(err)
	}

	for kv, want := range map[string][]string{
		"pipeline.mq.tiemout=0.1": {`unknown key "pipeline.mq.tiemout"`, "did you mean pipeline.mq.timeout", "valid there: ack, error, timeout, timeout_delivered, timeout_after, lost"},
		"pipeline.bogus=1":        {"valid there: seed, mq, order, dispatcher, expiry, release, call_timeout, drain, defects"},
		"pipeline.mq=1":           {"is a section", "pipeline.mq.timeout_after"},
		"pipeline.drain=soon":     {"pipeline.drain", "want a Go duration"},
		"pipeline.mq.ack=most":    {"pipeline.mq.ack", "want a number"},
	} {
		s := mustBuiltin(t, "full-path")
		before, _ := json.Marshal(s.Resolved())
		err := s.Set(kv)
		if err == nil {
			t.Errorf("%s: accepted", kv)
			continue
		}
		for _, w := range append(want, kv) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not say %q: %v", kv, w, err)
			}
		}
		if after, _ := json.Marshal(s.Resolved()); string(after) != string(before) {
			t.Errorf("%s: a failed Set changed the scenario", kv)
		}
	}
}

func TestPipelineResolved(t *testing.T) {
	s := mustBuiltin(t, "full-path")
	m := s.Resolved()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	p, ok := back["pipeline"].(map[string]any)
	if !ok {
		t.Fatalf("no pipeline in %s", raw)
	}
	mq, _ := p["mq"].(map[string]any)
	order, _ := p["order"].(map[string]any)
	disp, _ := p["dispatcher"].(map[string]any)
	if p["drain"] != "10s" || p["seed"] != float64(42) || p["call_timeout"] != "2s" || mq["ack"] != float64(1) || mq["lost"] != 0.01 ||
		mq["timeout_after"] != "20ms" || order["reject"] != 0.1 || order["delay"] != "50ms" || disp["every"] != "20ms" || disp["batch"] != float64(100) {
		t.Errorf("resolved pipeline: %v", p)
	}
	for _, k := range []string{"seed", "mq", "order", "dispatcher", "expiry", "release", "call_timeout", "drain", "defects"} {
		if _, ok := p[k]; !ok {
			t.Errorf("resolved pipeline lacks %s: %v", k, p)
		}
	}
	if d, _ := p["defects"].([]any); d == nil || len(d) != 0 {
		t.Errorf("defects %v", p["defects"])
	}
	if err := s.Set("pipeline.defects=order-ignores-fence"); err != nil {
		t.Fatal(err)
	}
	if d := s.Resolved()["pipeline"].(map[string]any)["defects"].([]string); !slices.Equal(d, []string{"order-ignores-fence"}) {
		t.Errorf("defects %v", d)
	}
}

func TestPipelineBuiltins(t *testing.T) {
	for _, name := range []string{"full-path", "mq-flaky", "dispatcher-crash", "full-path-failover", "full-path-disconnect"} {
		s := mustBuiltin(t, name)
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.Pipeline == nil || s.Drain <= 0 {
			t.Fatalf("%s: no pipeline", name)
		}
		if s.Duration() > 20*time.Second || s.Pipeline.Defects.Names() != nil || s.Assertions.Invariants != nil {
			t.Errorf("%s: %s of load, defects %v, invariants %v", name, s.Duration(), s.Pipeline.Defects.Names(), s.Assertions.Invariants)
		}
		for _, ph := range s.Phases {
			if r := ph.Config.Shape.Rate; r > 1000 {
				t.Errorf("%s: %g ops/s", name, r)
			}
		}
		if err := s.Pipeline.Validate(); err != nil {
			t.Errorf("%s: the pipeline refuses it: %v", name, err)
		}
	}
	fp := mustBuiltin(t, "full-path").Pipeline
	if fp.Order.Reject != 0.1 || fp.MQ.Lost == 0 || fp.MQ.Ack != 1 || len(mustBuiltin(t, "full-path").Faults) != 0 {
		t.Errorf("full-path: %+v", fp)
	}
	mq := mustBuiltin(t, "mq-flaky").Pipeline.MQ
	if mq.Timeout != 0.1 || mq.TimeoutDelivered != 0.5 || mq.Ack != 0.9 {
		t.Errorf("mq-flaky: %+v", mq)
	}
	dc := mustBuiltin(t, "dispatcher-crash")
	if len(dc.Faults) != 1 || dc.Faults[0].Kind != "dispatcher-crash" || dc.Activity.ReservationTTL < 3*dc.Faults[0].For {
		t.Errorf("dispatcher-crash: %+v ttl %s", dc.Faults, dc.Activity.ReservationTTL)
	}
	if f := mustBuiltin(t, "full-path-failover"); f.Drain != 15*time.Second || f.Faults[0].Kind != "failover" || f.Faults[0].Params["mode"] != "graceful" {
		t.Errorf("full-path-failover: %s %+v", f.Drain, f.Faults)
	}
	if f := mustBuiltin(t, "full-path-disconnect"); f.Faults[0].Kind != "disconnect-before-reply" {
		t.Errorf("full-path-disconnect: %+v", f.Faults)
	}
}

func TestDispatcherCrashRules(t *testing.T) {
	// for 0: the crash lasts until the end of the load (10s - 4s = 6s).
	s := mustParse(t, `
activity: {reservation_ttl: 6s}
phases: [{duration: 10s}]
pipeline: {}
faults: [{kind: dispatcher-crash, at: 4s}]
`)
	err := s.Validate()
	if err == nil || !regexp.MustCompile(`test.yaml:2: activity.reservation_ttl: 6s does not exceed the 6s dispatcher crash of faults\[0\] \(test.yaml:5, at 4s until the end of the load at 10s\).*e\.g\. reservation_ttl: 18s`).MatchString(err.Error()) {
		t.Errorf("for 0: %v", err)
	}
	if err := s.Set("activity.reservation_ttl=6001ms"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("ttl above the crash: %v", err)
	}
	// The default TTL (15m) is far above any crash of a short run.
	ok := mustParse(t, "phases: [{duration: 10s}]\npipeline: {}\nfaults: [{kind: dispatcher-crash, at: 2s, for: 3s}]\n")
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	// Two crashes must not overlap; a crash does not collide with node faults, even on all masters.
	two := mustParse(t, `
phases: [{duration: 30s}]
pipeline: {}
faults:
  - {kind: dispatcher-crash, at: 2s, for: 5s}
  - {kind: dispatcher-crash, at: 6s, for: 2s}
`)
	if err := two.Validate(); err == nil || !strings.Contains(err.Error(), "overlaps faults[0] (dispatcher-crash on pipeline-dispatcher") {
		t.Errorf("overlapping crashes: %v", err)
	}
	mixed := mustParse(t, `
phases: [{duration: 30s}]
pipeline: {}
faults:
  - {kind: partition, at: 2s, for: 8s, target: all-masters}
  - {kind: dispatcher-crash, at: 4s, for: 2s}
  - {kind: failover, at: 12s, for: 5s}
`)
	if err := mixed.Validate(); err != nil {
		t.Errorf("a dispatcher crash beside node faults: %v", err)
	}
	// A target is not a dispatcher-crash parameter.
	tgt := mustParse(t, "phases: [{duration: 10s}]\npipeline: {}\nfaults: [{kind: dispatcher-crash, at: 2s, for: 3s, target: hot-master}]\n")
	if err := tgt.Validate(); err == nil || !strings.Contains(err.Error(), "faults[0].target") {
		t.Errorf("target: %v", err)
	}
}

func TestPipelineInSuite(t *testing.T) {
	for _, src := range []string{"name: s\nsuite: [smoke]\npipeline: {drain: 5s}\n", "name: s\nsuite: [smoke]\npipeline:\n"} {
		s := mustParse(t, src)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "test.yaml:3: pipeline: a suite (suite: is set) has no pipeline of its own") {
			t.Errorf("%q: %v", src, err)
		}
		if s.Pipeline != nil || s.Drain != 0 {
			t.Errorf("%q: a suite's own pipeline %+v", src, s.Pipeline)
		}
	}
	// --set on a suite is forwarded: every member runs the pipeline.
	n := mustBuiltin(t, "nightly-ci")
	if err := n.Set("pipeline.drain=12s"); err != nil {
		t.Fatal(err)
	}
	ms, err := n.Members()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Pipeline == nil || m.Drain != 12*time.Second {
			t.Errorf("%s: %+v %s", m.Name, m.Pipeline, m.Drain)
		}
	}
	if err := n.Validate(); err != nil {
		t.Error(err)
	}
}

func pipelineReport(statuses map[string]reports.Status) *reports.Report {
	rep := report()
	rep.Invariants = []reports.Invariant{{ID: "I1", Name: "stock_conservation", Status: reports.StatusPass}}
	for _, id := range PipelineInvariantIDs {
		if st, ok := statuses[id]; ok {
			rep.Invariants = append(rep.Invariants, reports.Invariant{ID: id, Name: "p", Status: st, Detail: "d"})
		}
	}
	return rep
}

func TestEvaluatePipelineInvariants(t *testing.T) {
	if !slices.Contains(InvariantIDs, "P5") || !slices.Contains(InvariantIDs, "I9") {
		t.Fatalf("InvariantIDs %v", InvariantIDs)
	}
	all := map[string]reports.Status{"P1": reports.StatusPass, "P2": reports.StatusPass, "P3": reports.StatusPass, "P4": reports.StatusPass, "P5": reports.StatusPass,
		"E1": reports.StatusPass, "E2": reports.StatusPass, "E3": reports.StatusPass, "E4": reports.StatusPass, "E5": reports.StatusPass}
	s := mustBuiltin(t, "full-path")
	if a := s.Evaluate(pipelineReport(all))[0]; a.Name != "invariants pass (all that ran)" || a.Status != reports.StatusPass {
		t.Errorf("all pass: %+v", a)
	}
	failP4 := map[string]reports.Status{"P1": reports.StatusPass, "P2": reports.StatusSkip, "P3": reports.StatusPass, "P4": reports.StatusFail, "P5": reports.StatusPass,
		"E1": reports.StatusPass, "E2": reports.StatusPass, "E3": reports.StatusPass, "E4": reports.StatusPass, "E5": reports.StatusPass}
	if a := s.Evaluate(pipelineReport(failP4))[0]; a.Status != reports.StatusFail || !strings.Contains(a.Detail, "P4 p failed") || !strings.Contains(a.Detail, "skipped (nothing to judge): P2") {
		t.Errorf("P4 failed: %+v", a)
	}
	// The pipeline ran, so its checks must be in the report.
	if a := s.Evaluate(pipelineReport(nil))[0]; a.Status != reports.StatusFail || !strings.Contains(a.Detail, "P1 is not in the report (the scenario runs the pipeline") {
		t.Errorf("missing P checks: %+v", a)
	}
	// Without a pipeline, "all" does not ask for them.
	if a := mustBuiltin(t, "smoke").Evaluate(pipelineReport(nil))[0]; a.Status != reports.StatusPass {
		t.Errorf("no pipeline: %+v", a)
	}
	// An explicit list may name P ids (lower case too); the others are waived.
	if err := s.Set("assertions.invariants=I1,p2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if a := s.Evaluate(pipelineReport(failP4))[0]; a.Name != "invariants pass: I1, P2" || a.Status != reports.StatusPass || !strings.Contains(a.Detail, "failed but not required by this scenario: P4") {
		t.Errorf("explicit: %+v", a)
	}
	if !s.Waived("P4") || s.Waived("P2") {
		t.Error("Waived")
	}
}
