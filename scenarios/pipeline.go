package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"seckill-harness/checks"
	"seckill-harness/faults"
	"seckill-harness/sut/pipeline"
)

// The pipeline: section: the asynchronous rest of the reserve path
// (sut/pipeline) run beside the load, and the drain after it.

// DefaultDrain is how long the pipeline may take after the load when
// pipeline.drain is not written (the run command's --drain default).
const DefaultDrain = 10 * time.Second

// PipelineInvariantIDs are the ids of the checker's pipeline checks
// (checks.Invariant.Pipeline): in the report only when the run has a
// pipeline.
var PipelineInvariantIDs = pipelineInvariantIDs()

func pipelineInvariantIDs() []string {
	var ids []string
	for _, inv := range checks.Invariants() {
		if inv.Pipeline {
			ids = append(ids, inv.ID)
		}
	}
	return ids
}

// HasPipeline reports whether the scenario runs the pipeline.
func (s *Scenario) HasPipeline() bool { return s.Pipeline != nil }

// pipeline decodes the pipeline: section over pipeline.DefaultConfig().
func (d *dec) pipeline(root *node) {
	s := d.s
	pm := d.section(root, "pipeline", "pipeline")
	if pm == nil {
		return // no section: the pipeline is off
	}
	c := pipeline.DefaultConfig()
	c.Seed = d.int(pm, "seed", "pipeline.seed", s.Seed)

	mq := d.section(pm, "mq", "pipeline.mq")
	c.MQ.Error = d.float(mq, "error", "pipeline.mq.error", 0)
	c.MQ.Timeout = d.float(mq, "timeout", "pipeline.mq.timeout", 0)
	// ack, when not written, takes the rest: --set pipeline.mq.timeout=0.2
	// alone stays a valid split.
	c.MQ.Ack = d.float(mq, "ack", "pipeline.mq.ack", 1-c.MQ.Error-c.MQ.Timeout)
	c.MQ.TimeoutDelivered = d.float(mq, "timeout_delivered", "pipeline.mq.timeout_delivered", c.MQ.TimeoutDelivered)
	c.MQ.TimeoutAfter = d.dur(mq, "timeout_after", "pipeline.mq.timeout_after", c.MQ.TimeoutAfter)
	c.MQ.Lost = d.float(mq, "lost", "pipeline.mq.lost", c.MQ.Lost)

	o := d.section(pm, "order", "pipeline.order")
	c.Order.Reject = d.float(o, "reject", "pipeline.order.reject", c.Order.Reject)
	c.Order.Delay = d.dur(o, "delay", "pipeline.order.delay", c.Order.Delay)
	c.Order.Workers = int(d.int(o, "workers", "pipeline.order.workers", int64(c.Order.Workers)))

	ds := d.section(pm, "dispatcher", "pipeline.dispatcher")
	c.Dispatcher.Every = d.dur(ds, "every", "pipeline.dispatcher.every", c.Dispatcher.Every)
	c.Dispatcher.Batch = int(d.int(ds, "batch", "pipeline.dispatcher.batch", int64(c.Dispatcher.Batch)))
	c.Dispatcher.Workers = int(d.int(ds, "workers", "pipeline.dispatcher.workers", int64(c.Dispatcher.Workers)))
	c.Dispatcher.RetryAfter = d.dur(ds, "retry_after", "pipeline.dispatcher.retry_after", c.Dispatcher.RetryAfter)
	c.Dispatcher.ScanAfter = d.dur(ds, "scan_after", "pipeline.dispatcher.scan_after", c.Dispatcher.ScanAfter)

	e := d.section(pm, "expiry", "pipeline.expiry")
	c.Expiry.Every = d.dur(e, "every", "pipeline.expiry.every", c.Expiry.Every)
	c.Expiry.Batch = int(d.int(e, "batch", "pipeline.expiry.batch", int64(c.Expiry.Batch)))
	c.Expiry.MaxPages = int(d.int(e, "max_pages", "pipeline.expiry.max_pages", int64(c.Expiry.MaxPages)))

	r := d.section(pm, "release", "pipeline.release")
	c.Release.Workers = int(d.int(r, "workers", "pipeline.release.workers", int64(c.Release.Workers)))
	c.Release.Retry = d.dur(r, "retry", "pipeline.release.retry", c.Release.Retry)
	c.Release.Attempts = int(d.int(r, "attempts", "pipeline.release.attempts", int64(c.Release.Attempts)))

	c.CallTimeout = d.dur(pm, "call_timeout", "pipeline.call_timeout", c.CallTimeout)
	s.Drain = d.dur(pm, "drain", "pipeline.drain", DefaultDrain)

	s.parsed.defects = d.strs(pm, "defects", "pipeline.defects")
	var known []string
	for _, n := range s.parsed.defects {
		if slices.Contains(pipeline.DefectNames(), n) {
			known = append(known, n)
		}
	}
	c.Defects, _ = pipeline.ParseDefects(known) // unknown names: Validate reports them
	s.Pipeline = &c
}

// pipeline checks the pipeline: section: shares, durations and counts,
// that a lost message's reservation can expire within the drain, and the
// defect names; when none of that is wrong, that the pipeline itself
// accepts the configuration.
func (v *validator) pipeline() {
	s := v.s
	c := s.Pipeline
	if c == nil {
		return
	}
	before := len(v.errs)
	inRange := v.pipelineShares(c)
	v.pipelineSettings(c)

	// A lost message's reservation ends only when it expires: the last ones
	// of the load must expire (and be swept) within the drain, or P2 fails
	// by construction.
	if ttl := s.Activity.ReservationTTL; inRange && c.MQ.Lost > 0 && ttl > 0 && s.Drain > 0 && c.Expiry.Every > 0 &&
		ttl+c.Expiry.Every >= s.Drain {
		v.bad("pipeline.mq.lost", "%g: a lost message's reservation ends only when it expires (activity.reservation_ttl %s, then the next expiry sweep, every %s), but pipeline.drain is %s: the load's last reservations would still be ENQUEUED when the drain ends (P2); make the drain longer than the TTL plus a sweep, or shorten the TTL (e.g. reservation_ttl: 5s, drain: 10s)",
			c.MQ.Lost, ttl, c.Expiry.Every, s.Drain)
	}
	v.pipelineDefects()

	if len(v.errs) == before {
		// Backstop: whatever the pipeline would still refuse at Start.
		if err := c.Validate(); err != nil {
			v.bad("pipeline", "the pipeline refuses this configuration: %v", err)
		}
	}
}

// pipelineShares checks that every share is between 0 and 1 and, when
// they are (the result), that the send outcomes add up: to 1 with ack
// given, to at most 1 without (ack takes the rest).
func (v *validator) pipelineShares(c *pipeline.Config) bool {
	s := v.s
	inRange := true
	share := func(path string, x float64) {
		if math.IsNaN(x) || x < 0 || x > 1 {
			v.bad(path, "%g: a share is between 0 and 1", x)
			inRange = false
		}
	}
	if s.given("pipeline.mq.ack") {
		share("pipeline.mq.ack", c.MQ.Ack)
	}
	share("pipeline.mq.error", c.MQ.Error)
	share("pipeline.mq.timeout", c.MQ.Timeout)
	share("pipeline.mq.timeout_delivered", c.MQ.TimeoutDelivered)
	share("pipeline.mq.lost", c.MQ.Lost)
	share("pipeline.order.reject", c.Order.Reject)
	if inRange {
		if sum := c.MQ.Ack + c.MQ.Error + c.MQ.Timeout; s.given("pipeline.mq.ack") && math.Abs(sum-1) > 1e-9 {
			v.bad("pipeline.mq", "ack %g + error %g + timeout %g = %g: the outcomes of a send must add up to 1 (omit ack: it takes the rest, 1 - error - timeout)",
				c.MQ.Ack, c.MQ.Error, c.MQ.Timeout, sum)
		} else if rest := c.MQ.Error + c.MQ.Timeout; !s.given("pipeline.mq.ack") && rest > 1+1e-9 {
			v.bad("pipeline.mq", "error %g + timeout %g = %g: more than 1, no share left for ack (ack takes the rest)", c.MQ.Error, c.MQ.Timeout, rest)
		}
	}
	return inRange
}

// pipelineSettings checks the durations (positive; scan_after and the
// order delay may be 0) and the counts (at least 1), naming the default
// of each.
func (v *validator) pipelineSettings(c *pipeline.Config) {
	s := v.s
	def := pipeline.DefaultConfig()
	for _, x := range []struct {
		path   string
		d, def time.Duration
	}{
		{"pipeline.mq.timeout_after", c.MQ.TimeoutAfter, def.MQ.TimeoutAfter},
		{"pipeline.dispatcher.every", c.Dispatcher.Every, def.Dispatcher.Every},
		{"pipeline.dispatcher.retry_after", c.Dispatcher.RetryAfter, def.Dispatcher.RetryAfter},
		{"pipeline.expiry.every", c.Expiry.Every, def.Expiry.Every},
		{"pipeline.release.retry", c.Release.Retry, def.Release.Retry},
		{"pipeline.call_timeout", c.CallTimeout, def.CallTimeout},
		{"pipeline.drain", s.Drain, DefaultDrain},
	} {
		if x.d <= 0 {
			v.bad(x.path, "%s: must be positive (omit it for the default %s)", x.d, x.def)
		}
	}
	if c.Dispatcher.ScanAfter < 0 {
		v.bad("pipeline.dispatcher.scan_after", "%s: want 0 (the dispatcher sends everything, the access service sends nothing) or a positive wait like 500ms (the access service sends right after ACCEPTED, the dispatcher scans for what it left unsent)", c.Dispatcher.ScanAfter)
	}
	if c.Order.Delay < 0 {
		v.bad("pipeline.order.delay", "%s: must not be negative (0: no consumer lag)", c.Order.Delay)
	}
	for _, x := range []struct {
		path   string
		n, def int
	}{
		{"pipeline.order.workers", c.Order.Workers, def.Order.Workers},
		{"pipeline.dispatcher.batch", c.Dispatcher.Batch, def.Dispatcher.Batch},
		{"pipeline.dispatcher.workers", c.Dispatcher.Workers, def.Dispatcher.Workers},
		{"pipeline.expiry.batch", c.Expiry.Batch, def.Expiry.Batch},
		{"pipeline.expiry.max_pages", c.Expiry.MaxPages, def.Expiry.MaxPages},
		{"pipeline.release.workers", c.Release.Workers, def.Release.Workers},
		{"pipeline.release.attempts", c.Release.Attempts, def.Release.Attempts},
	} {
		if x.n < 1 {
			v.bad(x.path, "%d: want at least 1 (omit it for the default %d)", x.n, x.def)
		}
	}
}

// pipelineDefects checks each listed defect: known (with the closest one
// suggested) and listed once.
func (v *validator) pipelineDefects() {
	valid := pipeline.DefectNames()
	seen := map[string]int{}
	for i, n := range v.s.parsed.defects {
		path := fmt.Sprintf("pipeline.defects[%d]", i)
		if !slices.Contains(valid, n) {
			msg := fmt.Sprintf("%q: unknown defect; valid defects (negative controls, each makes a P- or E-check fail): %s", n, strings.Join(valid, ", "))
			if sug := suggest(n, valid); sug != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", sug)
			}
			v.bad(path, "%s", msg)
			continue
		}
		if j, dup := seen[n]; dup {
			v.bad(path, "%q is listed twice (also pipeline.defects[%d])", n, j)
		}
		seen[n] = i
	}
}

// faultPipeline checks a fault against the pipeline, by what its kind
// declares: one that needs the pipeline (faults.Rules.NeedsPipeline) needs a
// pipeline: section; one that causes a pipeline outage
// (faults.Rules.PipelineOutage) needs a reservation TTL above the outage.
// total is the load's planned length.
func (v *validator) faultPipeline(i int, total time.Duration) {
	s := v.s
	f := s.Faults[i]
	path := fmt.Sprintf("faults[%d]", i)
	spec, _ := faults.Lookup(f.Kind)
	if why := spec.Rules.NeedsPipeline; why != "" && s.Pipeline == nil {
		v.bad(path+".kind", "%s %s, but this scenario has no pipeline (no pipeline: section): add one (pipeline: {drain: 10s} runs it with the defaults) or --set pipeline.drain=10s",
			f.Kind, why)
	}
	if why := spec.Rules.NeedsService; why != "" && strings.TrimSpace(s.ServiceCmd) == "" {
		v.bad(path+".kind", "%s %s, but this scenario starts no service: add service_cmd: 'the command that starts your access service' (or --service-cmd)", f.Kind, why)
	}
	outage := spec.Rules.PipelineOutage
	if outage.Name == "" {
		return
	}
	length, how := f.For, fmt.Sprintf("at %s for %s", f.At, f.For)
	if f.For == 0 {
		length, how = total-f.At, fmt.Sprintf("at %s until the end of the load at %s", f.At, total)
	}
	if ttl := s.Activity.ReservationTTL; length > 0 && ttl > 0 && ttl <= length {
		v.bad("activity.reservation_ttl", "%s does not exceed the %s %s of %s (%s, %s): %s; keep the TTL well above the %s (e.g. reservation_ttl: %s) or shorten the fault's for",
			ttl, length, outage.Name, path, s.where(path), how, outage.Consequence, outage.Name, suggestTTL(length))
	}
}

// suggestTTL is a TTL well above a crash of length d: 3×d rounded up to a second.
func suggestTTL(d time.Duration) time.Duration {
	return (3*d + time.Second - 1).Truncate(time.Second)
}

func (s *Scenario) pipelineMap() map[string]any {
	c := s.Pipeline
	defects := c.Defects.Names()
	if defects == nil {
		defects = []string{}
	}
	return map[string]any{
		"seed": c.Seed,
		"mq": map[string]any{"ack": c.MQ.Ack, "error": c.MQ.Error, "timeout": c.MQ.Timeout,
			"timeout_delivered": c.MQ.TimeoutDelivered, "timeout_after": c.MQ.TimeoutAfter.String(), "lost": c.MQ.Lost},
		"order": map[string]any{"reject": c.Order.Reject, "delay": c.Order.Delay.String(), "workers": c.Order.Workers},
		"dispatcher": map[string]any{"every": c.Dispatcher.Every.String(), "batch": c.Dispatcher.Batch,
			"workers": c.Dispatcher.Workers, "retry_after": c.Dispatcher.RetryAfter.String(),
			"scan_after": c.Dispatcher.ScanAfter.String()},
		"expiry":       map[string]any{"every": c.Expiry.Every.String(), "batch": c.Expiry.Batch, "max_pages": c.Expiry.MaxPages},
		"release":      map[string]any{"workers": c.Release.Workers, "retry": c.Release.Retry.String(), "attempts": c.Release.Attempts},
		"call_timeout": c.CallTimeout.String(),
		"drain":        s.Drain.String(),
		"defects":      defects,
	}
}
