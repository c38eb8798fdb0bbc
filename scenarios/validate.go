package scenarios

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"seckill-harness/checks"
	"seckill-harness/faults"
	"seckill-harness/internal/fileref"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/adapter"
	"seckill-harness/sut/httpsut"
)

// InvariantIDs are the invariants a scenario may require: every id of the
// checker's table (checks.Invariants), in report order; the pipeline
// checks among them (PipelineInvariantIDs) only when the scenario has a
// pipeline.
var InvariantIDs = checks.InvariantIDs()

// LocalSoldOutInvariantIDs are the ids of the checks of the local sold-out
// flag (checks.Invariant.LocalSoldOut): in the report only when the
// scenario has local_soldout.
var LocalSoldOutInvariantIDs = func() []string {
	var ids []string
	for _, inv := range checks.Invariants() {
		if inv.LocalSoldOut {
			ids = append(ids, inv.ID)
		}
	}
	return ids
}()

var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_#-]*$`)

// Outcomes lists the outcome names totals.outcomes may hold: the reserve
// codes, the compensate codes, UNKNOWN and ERROR.
func Outcomes() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, c := range lua.ReserveCodes() {
		add(c.String())
	}
	for c := lua.CompensateCode(0); c <= lua.CompensateIDConflict; c++ {
		add(c.String())
	}
	add("UNKNOWN")
	add("ERROR")
	add(sut.LocalSoldOutName)
	return out
}

// Validate checks every value and reports all problems at once
// (errors.Join). Each error names where the value came from (source:line,
// or the --set that wrote it; the enclosing entry's line for a default),
// the field path (e.g. phases[1].rate), the bad value and the valid values
// or the fix. A suite validates its members too.
// It knows only the reference path: ValidateFor takes the caller's list.
func (s *Scenario) Validate() error { return s.ValidateFor(nil) }

// ValidateFor is Validate where path: may name any of paths (the reserve
// paths the caller can run, DefaultPath among them; nil: DefaultPath only).
func (s *Scenario) ValidateFor(paths []string) error {
	if paths == nil {
		paths = []string{DefaultPath}
	}
	v := &validator{s: s, paths: paths}
	v.scenario()
	return errors.Join(v.errs...)
}

type validator struct {
	s     *Scenario
	paths []string // the valid values of path:
	errs  []error
}

func (v *validator) bad(path, format string, args ...any) {
	v.errs = append(v.errs, errors.New(fileref.Clip(fmt.Sprintf("%s: %s: %s", v.s.where(path), path, fmt.Sprintf(format, args...)))))
}

// where is the source position of path, or of its nearest enclosing entry.
func (s *Scenario) where(path string) string {
	for p := path; p != ""; p = parentPath(p) {
		if ps, ok := s.parsed.pos[p]; ok {
			return where(s.Source, ps)
		}
	}
	return s.Source
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// given reports whether path was written (in the file or by --set).
func (s *Scenario) given(path string) bool {
	_, ok := s.parsed.pos[path]
	return ok
}

func (v *validator) scenario() {
	s := v.s
	if !nameRe.MatchString(s.Name) {
		v.bad("name", "%q: want letters, digits, '-', '_' (it names the report)", s.Name)
	}
	if s.IsSuite() {
		v.suite()
		return
	}
	if !(s.RateScale > 0) || math.IsInf(s.RateScale, 0) {
		v.bad("rate_scale", "%g: must be positive and finite (1 runs the rates as written, 0.1 a tenth of them)", s.RateScale)
	}
	if !slices.Contains(v.paths, s.Path) {
		v.bad("path", "%q: unknown reserve path; valid paths: %s", s.Path, strings.Join(v.paths, ", "))
	}
	v.adapter()
	v.service()
	v.serviceChild()
	if s.LocalSoldOut < 0 {
		v.bad("local_soldout", "%s: want a positive TTL like 1s (or 0: no local sold-out flag)", s.LocalSoldOut)
	}
	v.tolerateEvents()
	v.regressions()
	if err := s.Wait.Validate(); err != nil {
		v.bad("wait", "replicas %d, timeout %s: %v", s.Wait.Replicas, s.Wait.Timeout, err)
	}
	v.topology()
	v.activity()
	v.pipeline()
	v.phases()
	v.limits()
	v.faults()
	v.assertions()
}

func (v *validator) topology() {
	t := v.s.Topology
	if t.Masters < 1 {
		v.bad("topology.masters", "%d: want at least 1", t.Masters)
	}
	if t.Replicas < 0 {
		v.bad("topology.replicas", "%d: want 0 or more replicas per master", t.Replicas)
	}
	if t.NodeTimeout <= 0 {
		v.bad("topology.node_timeout", "%s: must be positive (cluster-node-timeout, e.g. 2s)", t.NodeTimeout)
	}
	if t.PoolTimeout < 0 {
		v.bad("topology.pool_timeout", "%s: want 0 (go-redis's default) or a positive wait, e.g. 20ms", t.PoolTimeout)
	}
	if t.PoolSize < 0 {
		v.bad("topology.pool_size", "%d: want 0 (one connection per worker) or a positive pool size per node", t.PoolSize)
	}
}

func (v *validator) activity() {
	a := v.s.Activity
	if a.Stock < 0 {
		v.bad("activity.stock", "%d: must not be negative", a.Stock)
	}
	if a.Buckets < 1 {
		v.bad("activity.buckets", "%d: want at least 1 bucket", a.Buckets)
	} else if a.Buckets > lua.MaxBuckets {
		v.bad("activity.buckets", "%d: at most %d buckets (the history stores a bucket index in 16 bits); use fewer buckets", a.Buckets, lua.MaxBuckets)
	} else if a.Stock > 0 && int64(a.Buckets) > a.Stock {
		v.bad("activity.buckets", "%d buckets for stock %d: more buckets than stock leaves some empty; use at most %d buckets (or stock 0)", a.Buckets, a.Stock, a.Stock)
	}
	if a.Users <= 0 {
		v.bad("activity.users", "%d: must be positive", a.Users)
	} else if uint64(a.Users) > runner.MaxUsers {
		v.bad("activity.users", "%d: at most %d users (the history stores a user index in 32 bits)", a.Users, uint64(runner.MaxUsers))
	}
	if a.ReservationTTL <= 0 {
		v.bad("activity.reservation_ttl", "%s: must be positive (e.g. 15m)", a.ReservationTTL)
	}
	if a.Window < 0 {
		v.bad("activity.window", "%s: must not be negative (0: the load's duration plus 1h)", a.Window)
	}
}

func (v *validator) phases() {
	s := v.s
	if len(s.Phases) == 0 {
		v.bad("phases", "no load phase: add at least one (or suite: for a suite)")
		return
	}
	faultNames := map[string]bool{}
	for _, n := range s.FaultPhaseNames() {
		faultNames[n] = true
	}
	clean := len(v.errs) == 0
	seen := map[string]int{}
	for i, p := range s.Phases {
		path := fmt.Sprintf("phases[%d]", i)
		switch {
		case !nameRe.MatchString(p.Name):
			v.bad(path+".name", "%q: want letters, digits, '-', '_', '#'", p.Name)
		case faultNames[p.Name]:
			v.bad(path+".name", "%q is the name of a fault phase of the report (%s); rename the load phase", p.Name, strings.Join(s.FaultPhaseNames(), ", "))
		}
		if j, dup := seen[p.Name]; dup {
			v.bad(path+".name", "%q: phases[%d] has this name already; phase names must be unique", p.Name, j)
		}
		seen[p.Name] = i
		before := len(v.errs)
		v.phase(i)
		if clean && len(v.errs) == before {
			// Backstop: whatever the engine would still refuse.
			c := p.Config
			if err := c.Validate(); err != nil {
				v.bad(path, "the engine refuses this phase: %v", err)
			}
		}
	}
}

func (v *validator) phase(i int) {
	s := v.s
	p := s.Phases[i]
	c := p.Config
	at := s.phaseField(i)
	scaled := ""
	if s.RateScale != 1 {
		scaled = fmt.Sprintf(" (rate_scale %g applied)", s.RateScale)
	}

	if c.Duration <= 0 {
		v.bad(at("duration"), "%s: must be positive (e.g. 10s)", c.Duration)
	}
	switch c.Mode {
	case runner.ModeOpen:
		v.shape(i, scaled)
		if c.MaxInFlight <= 0 {
			v.bad(at("max_in_flight"), "%d: must be positive (scheduled-but-unfinished operations before one is dropped)", c.MaxInFlight)
		}
	case runner.ModeClosed:
		// A closed phase has no arrival rate: shape fields written on the
		// phase itself are a mistake (inherited ones are ignored).
		for _, key := range append([]string{"shape", "rate"}, allShapeParams()...) {
			if path := at(key); strings.HasPrefix(path, "phases[") && s.given(path) {
				v.bad(path, "mode closed has no arrival rate (workers send as fast as they can): remove %s or use mode open", key)
			}
		}
	default:
		v.bad(at("mode"), "%q: unknown mode; valid modes: open, closed", c.Mode)
	}
	if c.Concurrency <= 0 {
		v.bad(at("concurrency"), "%d: must be positive (workers)", c.Concurrency)
	}
	if c.MaxOps < 0 {
		v.bad(at("max_ops"), "%d: must not be negative (0: no cap)", c.MaxOps)
	}
	if c.CallTimeout <= 0 {
		v.bad(at("timeout"), "%s: must be positive (per-send timeout, e.g. 2s)", c.CallTimeout)
	}
	if c.RetrySends < 0 {
		v.bad(at("retries"), "%d: must not be negative", c.RetrySends)
	} else if c.RetrySends > runner.MaxRetrySends {
		v.bad(at("retries"), "%d: at most %d retries (the history counts sends in 8 bits)", c.RetrySends, runner.MaxRetrySends)
	}
	if c.RetryBackoff < 0 {
		v.bad(at("retry_backoff"), "%s: must not be negative", c.RetryBackoff)
	}
	m := c.Mix
	sum := 0.0
	var parts []string
	inRange := true
	mixAt := ""
	for _, sh := range m.Shares() {
		share := *sh.Share
		sum += share
		if !(share >= 0 && share <= 1) {
			v.bad(at("mix."+sh.Name), "%g: a share is between 0 and 1", share)
			inRange = false
		}
		if share != 0 {
			parts = append(parts, fmt.Sprintf("%s %g", sh.Name, share))
			// Point at the mix the shares came from (the phase's or defaults').
			if from := parentPath(at("mix." + sh.Name)); mixAt == "" || mixAt == from {
				mixAt = from
			} else {
				mixAt = fmt.Sprintf("phases[%d].mix", i)
			}
		}
	}
	if inRange && sum > 1+1e-9 {
		v.bad(mixAt, "shares add up to %g (%s): at most 1, fresh requests take the rest", sum, strings.Join(parts, " + "))
	}
}

// phaseField returns the path that gave phase i's field key (the phase's
// own, or defaults').
func (s *Scenario) phaseField(i int) func(key string) string {
	return func(key string) string {
		if i < len(s.parsed.phaseSrc) {
			if p, ok := s.parsed.phaseSrc[i][key]; ok {
				return p
			}
		}
		return fmt.Sprintf("phases[%d].%s", i, key)
	}
}

func allShapeParams() []string {
	var out []string
	for _, k := range runner.Shapes {
		out = append(out, shapeParams[k]...)
	}
	return out
}

func (v *validator) shape(i int, scaled string) {
	s := v.s
	c := s.Phases[i].Config
	sh := c.Shape
	at := s.phaseField(i)
	params, known := shapeParams[sh.Kind]
	if !known {
		v.bad(at("shape"), "%q: unknown shape; valid shapes: %s", sh.Kind, strings.Join(runner.Shapes, ", "))
		return
	}
	for _, key := range allShapeParams() {
		if slices.Contains(params, key) || !s.given(at(key)) {
			continue
		}
		var owners []string
		for _, k := range runner.Shapes {
			if slices.Contains(shapeParams[k], key) {
				owners = append(owners, k)
			}
		}
		v.bad(at(key), "applies to shape %s only; this phase's shape is %s (remove it or change the shape)", strings.Join(owners, "/"), sh.Kind)
	}
	if !v.finiteRates(i, scaled) {
		return
	}
	if sh.Rate <= 0 {
		v.bad(at("rate"), "%g%s: must be positive (ops/s)", sh.Rate, scaled)
		return
	}
	dur := c.Duration.Seconds()
	switch sh.Kind {
	case "linear":
		if end := sh.Rate + sh.Slope*dur; end <= 0 {
			v.bad(at("slope"), "%g%s: the rate falls to %g ops/s by the end of the phase; it must stay positive", sh.Slope, scaled, end)
		}
	case "sine":
		if sh.Amplitude <= 0 || sh.Amplitude >= sh.Rate {
			v.bad(at("amplitude"), "%g%s: want 0 < amplitude < rate (%g)", sh.Amplitude, scaled, sh.Rate)
		}
		if sh.Period <= 0 {
			v.bad(at("period"), "%s: must be positive (e.g. 4s)", sh.Period)
		}
	case "spike":
		if sh.Peak < sh.Rate {
			v.bad(at("peak"), "%g%s: want peak >= rate (%g)", sh.Peak, scaled, sh.Rate)
		}
		for _, k := range []struct {
			key string
			d   time.Duration
		}{{"spike_at", sh.SpikeAt}, {"ramp_up", sh.RampUp}, {"hold", sh.Hold}, {"ramp_down", sh.RampDown}} {
			if k.d < 0 {
				v.bad(at(k.key), "%s: must not be negative", k.d)
			}
		}
		if end := sh.SpikeAt + sh.RampUp + sh.Hold + sh.RampDown; end > c.Duration && c.Duration > 0 {
			v.bad(at("spike_at"), "the spike ends at %s (spike_at+ramp_up+hold+ramp_down), after the phase's duration %s", end, c.Duration)
		}
	}
}

// finiteRates refuses a NaN or infinite rate, slope, amplitude or peak of
// phase i's shape (runner.FiniteRates) and reports whether all are finite.
func (v *validator) finiteRates(i int, scaled string) bool {
	probs := runner.FiniteRates(i, v.s.Phases[i].Config, scaled)
	v.problems(probs)
	return len(probs) == 0
}

// planOne builds the fault's Planned (through faults.Plan, like --fault).
func (f FaultSpec) planOne() (*faults.Planned, error) {
	params := map[string]string{}
	for k, val := range f.Params {
		params[k] = val
	}
	params["at"] = f.At.String()
	if f.For > 0 {
		params["for"] = f.For.String()
	}
	if f.Target != "" {
		params["target"] = f.Target
	}
	return faults.Plan(f.Kind, params, f.Text())
}

// Text is the fault as a --fault value: kind:at=…,for=…,target=…,k=v (sorted).
func (f FaultSpec) Text() string {
	parts := []string{"at=" + f.At.String()}
	if f.For > 0 {
		parts = append(parts, "for="+f.For.String())
	}
	if f.Target != "" {
		parts = append(parts, "target="+f.Target)
	}
	keys := make([]string, 0, len(f.Params))
	for k := range f.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+f.Params[k])
	}
	return f.Kind + ":" + strings.Join(parts, ",")
}

func kindList() string {
	var names []string
	for _, k := range faults.Kinds() {
		names = append(names, k.Kind)
	}
	return strings.Join(names, ", ")
}

// targetKey is what the fault acts on, for the overlap check (as its kind
// declares: faults.OverlapTarget).
func (f FaultSpec) targetKey() faults.Acted {
	params := map[string]string{}
	for k, val := range f.Params {
		params[k] = val
	}
	params["target"] = f.Target
	return faults.OverlapTarget(f.Kind, params)
}

// faultSpan is one fault's window and target, for the overlap check.
type faultSpan struct {
	i          int
	from, to   time.Duration
	target     faults.Acted
	exclusives bool
}

// faults checks each fault (name, kind, parameters, timing, the topology
// and pipeline it needs) and then that no two exclusive faults act on one
// target at the same time.
func (v *validator) faults() {
	s := v.s
	total := s.Duration()
	names := map[string]int{}
	var windows []faultSpan
	for i, f := range s.Faults {
		path := fmt.Sprintf("faults[%d]", i)
		if j, dup := names[f.Name]; dup {
			v.bad(path+".name", "%q: faults[%d] has this name already; give one of them a name: field", f.Name, j)
		}
		names[f.Name] = i
		if !nameRe.MatchString(f.Name) {
			v.bad(path+".name", "%q: want letters, digits, '-', '_', '#'", f.Name)
		}
		if !v.faultKind(path, f) {
			continue
		}
		v.faultParams(i, f)
		v.faultTiming(path, f, total)
		v.faultTopology(i)
		v.faultPipeline(i, total)
		end := total
		if f.For > 0 {
			end = f.At + f.For
		}
		windows = append(windows, faultSpan{i: i, from: f.At, to: end, target: f.targetKey(), exclusives: faults.IsExclusive(f.Kind)})
	}
	v.faultOverlaps(windows)
}

// faultKind reports whether f names a registered kind; a missing or an
// unknown kind is reported (with the valid kinds and the closest one) and
// the fault's other checks are skipped.
func (v *validator) faultKind(path string, f FaultSpec) bool {
	if f.Kind == "" {
		v.bad(path+".kind", "missing: every fault needs a kind; valid kinds: %s", kindList())
		return false
	}
	if _, ok := faults.Lookup(f.Kind); !ok {
		msg := fmt.Sprintf("%q: unknown fault kind; valid kinds: %s", f.Kind, kindList())
		var kinds []string
		for _, k := range faults.Kinds() {
			kinds = append(kinds, k.Kind)
		}
		if sug := suggest(f.Kind, kinds); sug != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", sug)
		}
		v.bad(path+".kind", "%s", msg)
		return false
	}
	return true
}

// faultParams reports at, for or target given as parameters instead of
// fields; without such a mistake it plans the fault and reports the
// planning error at the field or parameter it names.
func (v *validator) faultParams(i int, f FaultSpec) {
	path := fmt.Sprintf("faults[%d]", i)
	misplaced := false
	for _, k := range []string{"at", "for", "target"} {
		if _, ok := f.Params[k]; ok {
			v.bad(path+".params."+k, "%s is a field of the fault, not a parameter: move it up next to kind:", k)
			misplaced = true
		}
	}
	if !misplaced {
		if _, err := f.planOne(); err != nil {
			v.bad(v.faultErrPath(i, err), "%v", err)
		}
	}
}

// faultTiming checks that at and for are not negative and that the fault
// starts, and ends, within the load (total; unchecked when 0).
func (v *validator) faultTiming(path string, f FaultSpec, total time.Duration) {
	if f.At < 0 {
		v.bad(path+".at", "%s: must not be negative", f.At)
	}
	if f.For < 0 {
		v.bad(path+".for", "%s: must not be negative (0: until the end of the load)", f.For)
	}
	if total > 0 && f.At >= total {
		v.bad(path+".at", "%s: at or after the end of the load (%s): the fault would never happen", f.At, total)
	} else if total > 0 && f.At+f.For > total {
		v.bad(path+".for", "at+for = %s runs past the end of the load (%s): shorten for (or 0: until the end)", f.At+f.For, total)
	}
}

// faultOverlaps reports each later fault whose window overlaps an earlier
// one's on the same target when both kinds are exclusive.
func (v *validator) faultOverlaps(windows []faultSpan) {
	s := v.s
	for a := 0; a < len(windows); a++ {
		for b := a + 1; b < len(windows); b++ {
			x, y := windows[a], windows[b]
			if !x.exclusives || !y.exclusives {
				continue
			}
			// all-masters covers every node, not the pipeline's dispatcher.
			if x.target.Same(y.target) && x.from < y.to && y.from < x.to {
				fx, fy := s.Faults[x.i], s.Faults[y.i]
				v.bad(fmt.Sprintf("faults[%d]", y.i), "%s on %s during [%s, %s) overlaps faults[%d] (%s on %s during [%s, %s)): %s faults on one target must not overlap; move at or shorten for (network toxics may stack)",
					fy.Kind, y.target.Target, y.from, y.to, x.i, fx.Kind, x.target.Target, x.from, x.to, strings.Join(faults.ExclusiveKinds(), "/"))
			}
		}
	}
}

// faultErrPath points a faults.Plan error at the parameter it names.
func (v *validator) faultErrPath(i int, err error) string {
	f := v.s.Faults[i]
	path := fmt.Sprintf("faults[%d]", i)
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, fmt.Sprintf("fault %q: ", f.Text())); ok {
		msg = rest
	}
	if (strings.Contains(msg, "target=") || strings.Contains(msg, `"target"`)) && f.Target != "" {
		return path + ".target"
	}
	keys := make([]string, 0, len(f.Params))
	for k := range f.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.Contains(msg, fmt.Sprintf("%q", k)) || strings.Contains(msg, k+"=") {
			return path + ".params." + k
		}
	}
	if v.s.given(path + ".params") {
		return path + ".params"
	}
	return path + ".kind"
}

// faultTopology checks the topology the fault's kind declares it needs
// (faults.Rules.Topology) and the one its target needs.
func (v *validator) faultTopology(i int) {
	s := v.s
	f := s.Faults[i]
	path := fmt.Sprintf("faults[%d]", i)
	t := s.Topology
	spec, _ := faults.Lookup(f.Kind)
	need := spec.Rules.Topology
	if need.Replicas > 0 && t.Replicas < need.Replicas {
		v.bad(path+".kind", "%s needs %s, but topology.replicas is %d: set %s", f.Kind, need.ReplicasWhy, t.Replicas, s.setting("topology.replicas", need.Replicas))
	}
	if need.Masters > 0 && t.Masters < need.Masters {
		v.bad(path+".kind", "%s needs %s, but topology.masters is %d: set %s or more", f.Kind, need.MastersWhy, t.Masters, s.setting("topology.masters", need.Masters))
	}
	if f.Target == faults.TargetHotReplica && t.Replicas < 1 {
		v.bad(path+".target", "hot-replica needs a replica, but topology.replicas is %d", t.Replicas)
	}
}

// redisSettings checks the topology's redis.conf settings.
func (v *validator) redisSettings() {
	t := v.s.Topology
	if t.MinReplicasToWrite < 0 || t.MinReplicasToWrite > t.Replicas {
		v.bad("topology.min_replicas_to_write", "%d: want 0..topology.replicas (%d): a master cannot wait for replicas it does not have", t.MinReplicasToWrite, t.Replicas)
	}
	if t.MinReplicasMaxLag < 0 || t.MinReplicasMaxLag%time.Second != 0 {
		v.bad("topology.min_replicas_max_lag", "%s: want whole seconds (redis.conf min-replicas-max-lag counts seconds), e.g. 1s", t.MinReplicasMaxLag)
	}
	if t.AppendFsync != "" && !slices.Contains([]string{"always", "everysec", "no"}, t.AppendFsync) {
		v.bad("topology.appendfsync", "%q: want always, everysec or no", t.AppendFsync)
	}
}

// assertions checks the assertions: section (invariant ids, expected
// failures, redis settings, SLOs, ratio and throughput limits, outcome
// bounds), reporting in that order.
func (v *validator) assertions() {
	v.assertedInvariants()
	v.expectFail()
	v.redisSettings()
	v.slos()
	v.assertionLimits()
	v.outcomeBounds()
}

// assertedInvariants checks each listed invariant id: known, not "all"
// among others, and judged by this scenario (a local sold-out check needs
// local_soldout, a pipeline check a pipeline: section).
func (v *validator) assertedInvariants() {
	s := v.s
	for i, id := range s.Assertions.Invariants {
		path := fmt.Sprintf("assertions.invariants[%d]", i)
		switch {
		case strings.EqualFold(id, "all"):
			v.bad(path, "all stands alone (invariants: all); or list ids: %s", strings.Join(InvariantIDs, ", "))
		case !slices.Contains(InvariantIDs, strings.ToUpper(id)):
			v.bad(path, "%q: unknown invariant; valid: all, %s", id, strings.Join(InvariantIDs, ", "))
		case s.LocalSoldOut <= 0 && slices.Contains(LocalSoldOutInvariantIDs, strings.ToUpper(id)):
			v.bad(path, "%q judges the local sold-out flag, in the report only when the path has one, but this scenario has no local_soldout: add local_soldout: 1s or remove %s", id, id)
		case s.Pipeline == nil && slices.Contains(PipelineInvariantIDs, strings.ToUpper(id)):
			v.bad(path, "%q is a pipeline check (%s), in the report only when the pipeline runs, but this scenario has no pipeline: section: add one or remove %s", id, checks.IDRange(true), id)
		}
	}
}

// slos checks each SLO: a phase that exists (an "after" phase needs its
// fault to end), what it measures, bounds not negative, and at least one
// objective.
func (v *validator) slos() {
	s := v.s
	phases := s.sloPhases()
	for i, slo := range s.Assertions.SLO {
		path := fmt.Sprintf("assertions.slo[%d]", i)
		if slo.Phase != "" && !slices.Contains(phases, slo.Phase) {
			msg := fmt.Sprintf("%q: no such phase; valid phases: %s (or omit phase: for the whole run)", slo.Phase, strings.Join(phases, ", "))
			v.bad(path+".phase", "%s", msg)
		}
		if after, ok := strings.CutPrefix(slo.Phase, "after "); ok {
			for _, f := range s.Faults {
				if f.Name == after && f.For == 0 && !faults.CompletesOnInject(f.Kind, f.Params) {
					v.bad(path+".phase", "%q: fault %s lasts until the end of the load (for is 0), so it has no after phase; give it a for:", slo.Phase, f.Name)
				}
			}
		}
		if slo.Of != "latency" && slo.Of != "service_time" {
			v.bad(path+".of", "%q: want latency (from the intended send) or service_time (from the actual send)", slo.Of)
		}
		bounds := 0
		for _, b := range slo.bounds() {
			if b.limit < 0 {
				v.bad(path+"."+b.key, "%s: must be positive", b.limit)
			}
			if b.limit != 0 {
				bounds++
			}
		}
		if slo.MinThroughput < 0 {
			v.bad(path+".min_throughput", "%g: must be positive (ops/s)", slo.MinThroughput)
		}
		if slo.MinThroughput != 0 {
			bounds++
		}
		if bounds == 0 {
			v.bad(path, "no objective: give at least one of p50, p95, p99, p999, max (a duration) or min_throughput (ops/s)")
		}
	}
}

// assertionLimits checks the run-wide limits: lost acks not negative, the
// dropped and unknown ratios within (0,1] and [0,1], throughput positive.
func (v *validator) assertionLimits() {
	a := v.s.Assertions
	if a.MaxLostAcks != nil && *a.MaxLostAcks < 0 {
		v.bad("assertions.max_lost_acks", "%d: must not be negative", *a.MaxLostAcks)
	}
	if a.MaxDroppedRatio != nil && (*a.MaxDroppedRatio <= 0 || *a.MaxDroppedRatio > 1) {
		v.bad("assertions.max_dropped_ratio", "%g: want a ratio above 0 and at most 1 (0.01 = 1%% of scheduled operations; leave it out for the default %g)", *a.MaxDroppedRatio, runner.DefaultMaxDroppedRatio)
	}
	if a.MaxUnknownRatio != nil && (*a.MaxUnknownRatio < 0 || *a.MaxUnknownRatio > 1) {
		v.bad("assertions.max_unknown_ratio", "%g: want a ratio between 0 and 1 (0.01 = 1%% of operations)", *a.MaxUnknownRatio)
	}
	if a.MinThroughput != nil && *a.MinThroughput <= 0 {
		v.bad("assertions.min_throughput", "%g: must be positive (ops/s)", *a.MinThroughput)
	}
}

// outcomeBounds checks each outcome bound: a known outcome (with the
// closest one suggested), exactly or min/max but not both, min ≤ max, no
// negative count.
func (v *validator) outcomeBounds() {
	valid := Outcomes()
	for _, b := range v.s.Assertions.Outcomes {
		path := "assertions.outcomes." + b.Outcome
		if !slices.Contains(valid, b.Outcome) {
			msg := fmt.Sprintf("%q: unknown outcome; valid outcomes: %s", b.Outcome, strings.Join(valid, ", "))
			if sug := suggest(strings.ToUpper(b.Outcome), valid); sug != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", sug)
			}
			v.bad(path, "%s", msg)
		}
		switch {
		case b.Exactly == nil && b.Min == nil && b.Max == nil:
			v.bad(path, "no bound: give exactly, min or max")
		case b.Exactly != nil && (b.Min != nil || b.Max != nil):
			v.bad(path, "exactly excludes min and max")
		case b.Min != nil && b.Max != nil && *b.Min > *b.Max:
			v.bad(path, "min %d > max %d", *b.Min, *b.Max)
		}
		for _, x := range []struct {
			key string
			p   *int64
		}{{"exactly", b.Exactly}, {"min", b.Min}, {"max", b.Max}} {
			if x.p != nil && *x.p < 0 {
				v.bad(path+"."+x.key, "%d: must not be negative", *x.p)
			}
		}
	}
}

// sloPhases are the phase names an SLO may name.
func (s *Scenario) sloPhases() []string {
	var out []string
	for _, p := range s.Phases {
		out = append(out, p.Name)
	}
	return append(out, s.FaultPhaseNames()...)
}

type sloBound struct {
	key   string
	limit time.Duration
	pick  func(pct reports.Percentiles) float64
}

func (slo SLO) bounds() []sloBound {
	return []sloBound{
		{"p50", slo.P50, func(p reports.Percentiles) float64 { return p.P50 }},
		{"p95", slo.P95, func(p reports.Percentiles) float64 { return p.P95 }},
		{"p99", slo.P99, func(p reports.Percentiles) float64 { return p.P99 }},
		{"p999", slo.P999, func(p reports.Percentiles) float64 { return p.P999 }},
		{"max", slo.Max, func(p reports.Percentiles) float64 { return p.Max }},
	}
}

func (v *validator) suite() {
	s := v.s
	for _, key := range []string{"phases", "defaults", "faults", "pipeline", "assertions"} {
		// pipeline: turns the pipeline on even when empty.
		if s.parsed.tree.has(key) || key == "pipeline" && s.parsed.tree.get(key) != nil {
			v.bad(key, "a suite (suite: is set) has no %s of its own: put them in the member scenarios", key)
		}
	}
	seen := map[string]int{}
	for i, name := range s.Suite {
		path := fmt.Sprintf("suite[%d]", i)
		if j, dup := seen[name]; dup {
			v.bad(path, "%q is listed twice (also suite[%d])", name, j)
			continue
		}
		seen[name] = i
		if name == s.Name {
			v.bad(path, "%q: a suite cannot contain itself", name)
			continue
		}
		m, err := s.member(name)
		if err != nil {
			v.bad(path, "%v", err)
			continue
		}
		if m.IsSuite() {
			v.bad(path, "%q is a suite itself: list its members instead (%s)", name, strings.Join(m.Suite, ", "))
			continue
		}
		if err := m.ValidateFor(v.paths); err != nil {
			v.bad(path, "member %q is invalid:\n%v", name, indent(err.Error()))
		}
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// expectFail checks assertions.expect_fail: ids that count their failures,
// a minimum of at least 1, and no id also required to pass.
func (v *validator) expectFail() {
	a := v.s.Assertions
	expectable := checks.ExpectableIDs()
	ids := make([]string, 0, len(a.ExpectFail))
	for id := range a.ExpectFail {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		path := "assertions.expect_fail." + id
		switch {
		case !slices.Contains(expectable, id):
			v.bad(path, "%q: only a check that counts its failures may be expected to fail; valid: %s", id, strings.Join(expectable, ", "))
		case a.ExpectFail[id] < 1:
			v.bad(path+".min", "%d: want at least 1 (the fewest failures that show the window was reproduced)", a.ExpectFail[id])
		case slices.ContainsFunc(a.Invariants, func(r string) bool { return strings.EqualFold(r, id) }):
			v.bad(path, "%s is also required to pass in assertions.invariants: remove it from one of the two", id)
		}
	}
}

// tolerateEvents: every entry one of reports.EventKinds, none twice.
func (v *validator) tolerateEvents() {
	for i, e := range v.s.TolerateEvents {
		path := fmt.Sprintf("tolerate_events[%d]", i)
		if !reports.IsEventKind(e) {
			v.bad(path, "%q: unknown event kind; valid kinds: %s", e, strings.Join(reports.EventKindNames(), ", "))
		}
		if j := slices.Index(v.s.TolerateEvents, e); j < i {
			v.bad(path, "%q is listed twice (also tolerate_events[%d])", e, j)
		}
	}
}

// AdapterCannotRun is why an adapter file cannot be s's system under test
// ("" when it can): it has a pipeline, which works on the reference contract's
// records and queues, which an adapter file does not describe. A suite run
// with --adapter skips such members with this reason (planner.BuildSuite).
func AdapterCannotRun(s *Scenario) string {
	if s.Pipeline != nil {
		return "the async pipeline works on the reference contract's records and queues, which an adapter file does not describe"
	}
	return ""
}

// service checks service:: a URL the client can reach (http or https), a
// mapping file that loads (its own errors name its file:line), and the
// run's only system under test (no path:, no adapter:). A pipeline needs
// state: reference (it works on the reference contract's records).
func (v *validator) service() {
	sv := v.s.Service
	if sv.URL == "" {
		if sv.Mapping != "" {
			v.bad("service.mapping", "%s without service.url: give the service's URL (--service URL)", sv.Mapping)
		}
		return
	}
	if _, err := httpsut.CheckURL(sv.URL); err != nil {
		v.bad("service.url", "%v", err)
	}
	if v.s.Path != DefaultPath || v.s.Adapter != "" {
		v.bad("service", "%s with path %q / adapter %q: a run has one system under test: drop path: (--path), adapter: (--adapter) or service: (--service)", sv.URL, v.s.Path, v.s.Adapter)
	}
	m, err := httpsut.LoadMapping(sv.Mapping)
	if err != nil {
		v.bad("service.mapping", "%v", err)
		return
	}
	if why := ServiceCannotRun(v.s, m); why != "" {
		v.bad("service", "%s with a pipeline: %s", sv.URL, why)
	}
}

// ServiceCannotRun is why scenario s cannot run against a service spoken
// to through mapping m ("" when it can): it has a pipeline, which works on
// the reference contract's records and queues, and the service keeps them
// only with state: reference. A suite run against such a service skips
// such members with this reason (planner.BuildSuite).
func ServiceCannotRun(s *Scenario, m *httpsut.Mapping) string {
	if s.Pipeline != nil && !m.ReferenceState() {
		return "the async pipeline works on the reference contract's records and queues; a service keeps them only with state: reference in its mapping (--service-mapping)"
	}
	return ""
}

// adapter checks adapter:: the file loads (its own errors name its
// file:line), it is the run's only system under test (path: stays the
// reference) and the run has no pipeline (the pipeline works on the
// reference contract's records and queues, which a file does not describe).
func (v *validator) adapter() {
	s := v.s
	if s.Adapter == "" {
		return
	}
	if s.Path != DefaultPath {
		v.bad("adapter", "%s with path %q: a run has one system under test: drop path: (--path) or adapter: (--adapter)", s.Adapter, s.Path)
	}
	if why := AdapterCannotRun(s); why != "" {
		v.bad("adapter", "%s with a pipeline: %s: drop pipeline: (--pipeline) or adapter: (--adapter)", s.Adapter, why)
	}
	if _, err := adapter.Load(s.Adapter); err != nil {
		v.bad("adapter", "%v", err)
	}
}

// serviceChild checks service_cmd: and service_ready: (--service-cmd,
// --service-ready): a readiness URL is an http(s) URL, and needs a command.
func (v *validator) serviceChild() {
	s := v.s
	if s.ServiceReady == "" {
		return
	}
	if u, err := url.Parse(s.ServiceReady); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.bad("service_ready", "%q: want an http:// URL the service answers 200 on once ready, e.g. http://127.0.0.1:8080/healthz", s.ServiceReady)
	}
	if strings.TrimSpace(s.ServiceCmd) == "" {
		v.bad("service_ready", "without service_cmd (--service-cmd): the harness polls the readiness of a service it starts; give the command that starts it")
	}
}
