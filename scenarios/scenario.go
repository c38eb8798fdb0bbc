package scenarios

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"seckill-harness/internal/boundedread"
	"seckill-harness/internal/fileref"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
)

// DefaultPath is the reserve path a scenario drives unless it names another.
const DefaultPath = "reference"

// Defaults of a scenario file (the run command's defaults).
const (
	DefaultSeed      = 42
	defaultMasters   = 3
	defaultReplicas  = 1
	defaultStock     = 1000
	defaultBuckets   = 2
	defaultUsers     = 20000
	defaultPhaseName = "load"
)

var (
	defaultNodeTimeout = 2 * time.Second
	defaultTTL         = 15 * time.Minute
)

// Scenario is one scenario: a cluster, an activity, load phases run back to
// back, a fault timeline and the assertions that decide pass or fail; or a
// suite (Suite non-empty), a sequence of other scenarios with nothing else.
//
// Everything is resolved at Parse: defaults are filled in, every phase's
// runner.Config is complete and rate_scale is applied. Set edits the
// document and resolves it again. Parse checks the schema only (unknown
// fields, shapes, unparsable values); Validate checks the values.
type Scenario struct {
	Name        string
	Description string // free text
	Proves      string // one line: what a pass proves
	Seed        int64
	// RateScale multiplies every phase's rates (rate, slope, amplitude,
	// peak) and, when Activity.ScaleUsers, the users. Default 1. The
	// phases' Configs and Activity.Users are already scaled.
	RateScale float64
	Topology  Topology
	Activity  Activity
	Path      string // reserve path: "reference" or a name the caller passes to ValidateFor
	// Adapter is a contract adapter file (sut/adapter) naming the
	// system under test in place of the reference: a team's own reserve
	// script. Written in a file it is relative to the file's directory;
	// here it is resolved ("" : none).
	Adapter string
	// ServiceCmd starts the access service under test as a child of the
	// run (sut/servicechild: `sh -c`, the service contract's
	// environment, stopped by its process group); "": none. ServiceReady
	// is its readiness URL ("": http://<its SECKILL_LISTEN>/healthz).
	ServiceCmd, ServiceReady string
	// Service is a running access service put under test over HTTP in
	// place of the reference (sut/httpsut): `service: {url: URL,
	// mapping: FILE}`. The mapping file, written in a file, is relative to
	// the file's directory; here it is resolved. Zero: none.
	Service Service
	// LocalSoldOut is the TTL of the reserve path's local sold-out flag
	// (sut.LocalSoldOut: a flag per bucket set by SOLD_OUT, broadcast
	// over Redis Pub/Sub, answering SOLD_OUT locally until it expires);
	// 0: no flag (every request asks Redis).
	LocalSoldOut time.Duration
	// TolerateEvents are the kinds of unplanned events
	// (reports.EventKinds, e.g. automatic-failover, full-resync) the
	// scenario tolerates: they stay in report.json's unplanned_events with
	// tolerated: true but the verdict line does not name them. Unplanned
	// events never fail a run by themselves.
	TolerateEvents []string
	// Regressions bound, per figure (reports/results.RegressionNames: p50,
	// p99, p999, service_p50, service_p99, throughput; and per phase,
	// "phase.<name>.p99"), how much worse than the results history's
	// baseline a run may be under run --baseline before it fails: 0.2 is
	// 20% (written "20%"), negative is off (written "off"). Figures not
	// named keep history.DefaultThresholds (p50, service_p50 and p99 20%,
	// throughput 10%).
	Regressions map[string]float64
	// Wait is the reserve option `wait: {replicas: N, timeout: D}`: WAIT
	// after each fresh ACCEPTED on the connection that ran the script
	// (sut.WaitPolicy). Timeout defaults to sut.DefaultWaitTimeout
	// when replicas is set; the zero value is off.
	Wait   sut.WaitPolicy
	Phases []Phase
	Faults []FaultSpec
	// Pipeline is the asynchronous rest of the reserve path run beside the
	// load (send_pending dispatcher, simulated MQ, order service, release
	// stage, expiry checker), complete: pipeline.DefaultConfig() with the
	// file's pipeline: section over it (Seed defaults to the scenario's
	// seed; MQ.Ack, when not written, is 1 - error - timeout). nil when the
	// scenario has no pipeline: section (the pipeline is off).
	Pipeline *pipeline.Config
	// Drain is how long the pipeline may take after the load (and the
	// heal) to bring every reservation to ORDER_CREATED or RELEASED: P2
	// judges what is left. DefaultDrain when the pipeline is on and
	// pipeline.drain is not written; 0 when the pipeline is off.
	Drain time.Duration
	// Assertions decide pass/fail besides the invariants (see Evaluate).
	Assertions Assertions
	// Suite names the member scenarios (built-in names, or file paths
	// relative to the suite's file). A suite has no phases, faults or
	// assertions of its own.
	Suite  []string
	Source string // the file path, or "builtin:<name>"

	parsed parseState // what Parse and Set keep of the document for Validate and Set
}

// parseState is what Parse (and Set) keep of the document the scenario
// was read from: where each value came from, for Validate's messages,
// and the values as written, for Validate and Set.
type parseState struct {
	tree     *node
	pos      map[string]pos
	phaseSrc []map[string]string // per phase: field → the path that gave its value
	sets     []string            // suite: --set values forwarded to every member
	defects  []string            // pipeline.defects as written (Validate checks the names)
	// regressionText is regressions: as written (Validate checks each).
	regressionText map[string]string
}

// Service is a running access service under test over HTTP.
type Service struct {
	URL     string // the service's base URL, e.g. http://127.0.0.1:8080
	Mapping string // the service mapping file ("": the HTTP contract's defaults)
}

// Topology is the cluster the scenario runs on.
type Topology struct {
	Masters     int
	Replicas    int // per master
	NodeTimeout time.Duration
	AppendOnly  bool
	// PoolSize is the load client's connection pool per node; 0: one per
	// worker plus 16 spare (no worker ever waits for a connection). Set it
	// below the concurrency to exhaust the pool.
	PoolSize int
	// PoolTimeout is how long a worker waits for a free connection before
	// the call fails with a pool timeout (never sent); 0: go-redis's
	// default (the read timeout plus a second).
	PoolTimeout time.Duration
	// MinReplicasToWrite and MinReplicasMaxLag are redis.conf's
	// min-replicas-to-write / min-replicas-max-lag (seconds): a master
	// refuses writes (NOREPLICAS) unless that many replicas acknowledged
	// the stream within the lag. 0: not set (Redis' default, off).
	MinReplicasToWrite int
	MinReplicasMaxLag  time.Duration
	// AppendFsync is redis.conf's appendfsync (always, everysec, no); "":
	// the cluster's default.
	AppendFsync string
}

// RedisConfig is the topology's redis.conf lines beyond the cluster's own
// (lifecycle.ClusterSpec.ExtraConfig): a restarted node keeps them.
func (t Topology) RedisConfig() []string {
	var out []string
	if t.MinReplicasToWrite > 0 {
		out = append(out, fmt.Sprintf("min-replicas-to-write %d", t.MinReplicasToWrite))
	}
	if t.MinReplicasMaxLag > 0 {
		out = append(out, fmt.Sprintf("min-replicas-max-lag %d", int(t.MinReplicasMaxLag/time.Second)))
	}
	if t.AppendFsync != "" {
		out = append(out, "appendfsync "+t.AppendFsync)
	}
	return out
}

// Activity is the flash-sale activity under test.
type Activity struct {
	Stock   int64
	Buckets int
	// Users is the number of distinct users, rate_scale applied when
	// ScaleUsers (at least 1).
	Users          int
	ScaleUsers     bool
	ReservationTTL time.Duration
	// Window is how long the activity stays open from the start of the
	// run (ends_at); default: the load's duration plus one hour.
	Window time.Duration
}

// Phase is one load phase, resolved: Config is complete (Mode, Shape,
// Duration, Concurrency, MaxInFlight, MaxOps, Mix, CallTimeout, RetrySends,
// RetryBackoff; Seed, Users and TTL copied from the scenario; LateThreshold
// and SampleEvery are runner.DefaultConfig's). Run the phases back to back
// with runner.RunPhases, each as runner.Phase{Name: p.Name, Config: p.Config}.
type Phase struct {
	Name   string
	Config runner.Config
}

// FaultSpec is one entry of the fault timeline: the same kinds and
// parameters as --fault, with at/for/target as fields.
type FaultSpec struct {
	// Name identifies the fault in report phases ("during <name>",
	// "after <name>") and assertions. Default: the kind, with "#2", "#3"
	// appended to the second and later faults of one kind.
	Name   string
	Kind   string
	At     time.Duration // offset from the start of the load
	For    time.Duration // 0: until the end of the load
	Target string        // "" means the kind's default (hot-master)
	Params map[string]string
}

// Assertions are what a scenario requires of a finished run, besides the
// report's invariants. See Evaluate for how each one is judged.
type Assertions struct {
	// Invariants lists the invariant ids (checks.InvariantIDs; the
	// pipeline checks only when the pipeline is on) required to pass. nil:
	// every invariant that ran (status not skip) must pass, and a scenario
	// with a pipeline also needs the pipeline checks in the report. An explicit list waives the others: they
	// are reported, not required (see Waived).
	Invariants []string
	// SLO bounds latency percentiles and throughput, overall or per phase.
	SLO []SLO
	// MaxLostAcks bounds report.lost_acks (nil: not asserted).
	MaxLostAcks *int64
	// ExpectFail maps an invariant id (upper case; one that counts its
	// failures, checks.ExpectableIDs: I3 counts units acknowledged beyond
	// the stock, I6 acknowledged reservations lost) to the fewest failures
	// expected: a demonstration scenario. The run is green when the check
	// failed with at least that count (reported "expected"), red when it
	// did not (lifecycle.Plan.Judging.ExpectFail). nil: none expected.
	ExpectFail map[string]int64
	// MaxUnknownRatio bounds unknown.total / totals.ops (nil: not asserted).
	MaxUnknownRatio *float64
	// MaxDroppedRatio bounds dropped / scheduled operations: the share
	// never sent because the in-flight cap was reached. It is the run's
	// evidence bound (lifecycle.Bounds.MaxDroppedRatio), not an assertion
	// of its own; nil: the verdict's default (runner.DefaultMaxDroppedRatio).
	MaxDroppedRatio *float64
	// MinThroughput bounds throughput_ops_per_s of the whole run (nil: not asserted).
	MinThroughput *float64
	// Outcomes bounds totals.outcomes[name], sorted by name.
	Outcomes []OutcomeBound
}

// SLO is one latency/throughput objective. Phase "" means the whole run;
// otherwise a report phase by name: a load phase, or "baseline",
// "during <fault name>", "after <fault name>" when the scenario has faults.
// A zero bound is not asserted.
type SLO struct {
	Phase         string
	Of            string // "latency" (from the intended send, default) or "service_time" (from the actual send)
	P50, P95, P99 time.Duration
	P999, Max     time.Duration
	MinThroughput float64 // ops/s completed in the phase (or the run)
}

// OutcomeBound bounds the count of one outcome (totals.outcomes).
type OutcomeBound struct {
	Outcome           string
	Exactly, Min, Max *int64
}

// Load reads a scenario file. Errors name path:line. It reads at most
// MaxFileBytes+1 bytes: a larger file is refused without reading the rest.
func Load(path string) (*Scenario, error) {
	if _, err := boundedread.Check(path, 0, "scenario", "give a scenario file (YAML), or a built-in name (seckill-harness list)"); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse reads a scenario from data; source names it in errors (a file
// path, or "builtin:<name>"). It rejects YAML syntax errors, unknown
// fields (listing the valid ones), wrong shapes and unparsable values,
// every one at once with source:line. It does not check the values: call
// Validate (after any Set). It refuses input over the limits (MaxFileBytes,
// MaxNesting, MaxNodes, MaxPhases) before the work they would cost.
func Parse(source string, data []byte) (*Scenario, error) {
	if err := checkSize(source, data); err != nil {
		return nil, err
	}
	if err := checkBrackets(source, data); err != nil {
		return nil, err
	}
	tree, err := parseTree(source, data)
	if err != nil {
		return nil, err
	}
	return decode(source, tree)
}

func decode(source string, tree *node) (*Scenario, error) {
	for _, l := range []struct {
		key, what string
		max       int
	}{{"phases", "phases", MaxPhases}, {"faults", "faults", MaxFaults}, {"suite", "suite members", MaxSuiteMembers}} {
		if list := tree.get(l.key); list != nil && list.kind == seqNode && len(list.items) > l.max {
			return nil, fmt.Errorf("%s: %s: %d %s: at most %d per scenario (split it into a suite of smaller scenarios)",
				where(source, list.items[l.max].pos), l.key, len(list.items), l.what, l.max)
		}
	}
	var errs []error
	checkTree(source, tree, rootSchema, "", &errs)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s := &Scenario{Source: source, parsed: parseState{tree: tree, pos: map[string]pos{}}}
	d := &dec{s: s}
	d.scenario(tree)
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return s, nil
}

// dec extracts values from a checked tree and records their positions.
// Values that failed the check cannot reach it; errs are the paths to
// other files that leave the scenario's directory (file).
type dec struct {
	s    *Scenario
	errs []error
}

// file is the path of another file written under key: relative to the
// scenario file's directory, and refused (an error of Parse, so nothing
// reads it) when it leaves that directory or --files-root
// (fileref.Resolve). A built-in's or run's flags' path is kept as given.
func (d *dec) file(m *node, key, path string) string {
	written := d.str(m, key, path, "")
	if written == "" || strings.HasPrefix(d.s.Source, "builtin:") || d.s.Source == FlagSource {
		return written
	}
	full, err := fileref.Resolve(d.s.Source, written)
	if err != nil {
		d.errs = append(d.errs, fmt.Errorf("%s: %s: %w", d.s.where(path), path, err))
		return filepath.Join(filepath.Dir(d.s.Source), written)
	}
	return full
}

func (d *dec) mark(path string, n *node) {
	if n != nil {
		d.s.parsed.pos[path] = n.pos
	}
}

// section marks a mapping or list under key by the key's line.
func (d *dec) section(m *node, key, path string) *node {
	v := m.get(key)
	if v != nil {
		if kp, ok := m.keyPos[key]; ok {
			d.s.parsed.pos[path] = kp
		} else {
			d.mark(path, v)
		}
	}
	return v
}

func (d *dec) scalar(m *node, key, path string) (string, bool) {
	v := m.get(key)
	if v == nil || v.kind != scalarNode {
		return "", false
	}
	d.mark(path, v)
	return v.text, true
}

func (d *dec) str(m *node, key, path, def string) string {
	if t, ok := d.scalar(m, key, path); ok {
		return strings.TrimSpace(t)
	}
	return def
}

func (d *dec) int(m *node, key, path string, def int64) int64 {
	if t, ok := d.scalar(m, key, path); ok {
		if v, err := parseInt(t); err == nil {
			return v
		}
	}
	return def
}

func (d *dec) float(m *node, key, path string, def float64) float64 {
	if t, ok := d.scalar(m, key, path); ok {
		if v, err := parseFloat(t); err == nil {
			return v
		}
	}
	return def
}

func (d *dec) dur(m *node, key, path string, def time.Duration) time.Duration {
	if t, ok := d.scalar(m, key, path); ok {
		if v, err := parseDuration(t); err == nil {
			return v
		}
	}
	return def
}

func (d *dec) bool(m *node, key, path string, def bool) bool {
	if t, ok := d.scalar(m, key, path); ok {
		if v, err := parseBool(t); err == nil {
			return v
		}
	}
	return def
}

func (d *dec) strs(m *node, key, path string) []string {
	v := d.section(m, key, path)
	if v == nil {
		return nil
	}
	var out []string
	switch v.kind {
	case scalarNode:
		for i, part := range strings.Split(v.text, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
				d.mark(fmt.Sprintf("%s[%d]", path, i), v)
			}
		}
	case seqNode:
		for i, it := range v.items {
			out = append(out, strings.TrimSpace(it.text))
			d.mark(fmt.Sprintf("%s[%d]", path, i), it)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func (d *dec) scenario(root *node) {
	s := d.s
	s.Name = d.str(root, "name", "name", defaultName(s.Source))
	s.Description = d.str(root, "description", "description", "")
	s.Proves = d.str(root, "proves", "proves", "")
	s.Seed = d.int(root, "seed", "seed", DefaultSeed)
	s.RateScale = d.float(root, "rate_scale", "rate_scale", 1)
	s.Path = d.str(root, "path", "path", DefaultPath)
	s.Adapter = d.file(root, "adapter", "adapter")
	s.ServiceCmd = d.str(root, "service_cmd", "service_cmd", "")
	s.ServiceReady = d.str(root, "service_ready", "service_ready", "")
	svc := d.section(root, "service", "service")
	s.Service.URL = d.str(svc, "url", "service.url", "")
	s.Service.Mapping = d.file(svc, "mapping", "service.mapping")
	s.LocalSoldOut = d.dur(root, "local_soldout", "local_soldout", 0)
	s.TolerateEvents = d.strs(root, "tolerate_events", "tolerate_events")
	d.regressions(root)
	w := d.section(root, "wait", "wait")
	s.Wait.Replicas = int(d.int(w, "replicas", "wait.replicas", 0))
	s.Wait.Timeout = d.dur(w, "timeout", "wait.timeout", 0)
	if s.Wait.Replicas > 0 && s.Wait.Timeout == 0 {
		s.Wait.Timeout = sut.DefaultWaitTimeout
	}
	s.Suite = d.strs(root, "suite", "suite")

	t := d.section(root, "topology", "topology")
	s.Topology = Topology{
		Masters:            int(d.int(t, "masters", "topology.masters", defaultMasters)),
		Replicas:           int(d.int(t, "replicas", "topology.replicas", defaultReplicas)),
		NodeTimeout:        d.dur(t, "node_timeout", "topology.node_timeout", defaultNodeTimeout),
		AppendOnly:         d.bool(t, "appendonly", "topology.appendonly", false),
		PoolSize:           int(d.int(t, "pool_size", "topology.pool_size", 0)),
		PoolTimeout:        d.dur(t, "pool_timeout", "topology.pool_timeout", 0),
		MinReplicasToWrite: int(d.int(t, "min_replicas_to_write", "topology.min_replicas_to_write", 0)),
		MinReplicasMaxLag:  d.dur(t, "min_replicas_max_lag", "topology.min_replicas_max_lag", 0),
		AppendFsync:        d.str(t, "appendfsync", "topology.appendfsync", ""),
	}
	a := d.section(root, "activity", "activity")
	s.Activity = Activity{
		Stock:          d.int(a, "stock", "activity.stock", defaultStock),
		Buckets:        int(d.int(a, "buckets", "activity.buckets", defaultBuckets)),
		Users:          int(d.int(a, "users", "activity.users", defaultUsers)),
		ScaleUsers:     d.bool(a, "scale_users", "activity.scale_users", false),
		ReservationTTL: d.dur(a, "reservation_ttl", "activity.reservation_ttl", defaultTTL),
		Window:         d.dur(a, "window", "activity.window", 0),
	}
	if s.Activity.ScaleUsers && s.RateScale > 0 && s.Activity.Users > 0 {
		s.Activity.Users = max(1, int(math.Round(float64(s.Activity.Users)*s.RateScale)))
	}

	if len(s.Suite) == 0 {
		d.phases(root)
		if s.Activity.Window == 0 {
			s.Activity.Window = s.Duration() + time.Hour
		}
	} else {
		d.section(root, "phases", "phases")
		d.section(root, "defaults", "defaults")
	}
	d.faults(root)
	d.pipeline(root)
	if len(s.Suite) > 0 {
		s.Pipeline, s.Drain = nil, 0 // a suite's members run it (Validate reports the section)
	}
	d.assertions(root)
}

func defaultName(source string) string {
	if n, ok := strings.CutPrefix(source, "builtin:"); ok {
		return n
	}
	base := filepath.Base(source)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// phases decodes phases: (or, without it, one phase from defaults:) into
// s.Phases, each field from the phase, else defaults:, else the runner's
// default, and records where each field came from (s.phaseSrc). Rates are
// scaled by s.RateScale.
func (d *dec) phases(root *node) {
	s := d.s
	defs := d.section(root, "defaults", "defaults")
	list := d.section(root, "phases", "phases")
	var items []*node
	if list != nil {
		items = list.items
	}
	if len(items) == 0 {
		items = []*node{nil} // one phase from defaults:
	}
	for i, it := range items {
		path := fmt.Sprintf("phases[%d]", i)
		d.mark(path, it)
		ps := &phaseSource{it: it, defs: defs, path: path, src: map[string]string{}}
		name := defaultPhaseName
		if len(items) > 1 {
			name = fmt.Sprintf("phase%d", i+1)
		}
		name = d.str(it, "name", path+".name", name)

		c := d.phaseConfig(ps)
		d.phaseMix(ps, &c)

		if k := s.RateScale; k > 0 && k != 1 {
			c.Shape.Rate *= k
			c.Shape.Slope *= k
			c.Shape.Amplitude *= k
			c.Shape.Peak *= k
		}
		s.Phases = append(s.Phases, Phase{Name: name, Config: c})
		s.parsed.phaseSrc = append(s.parsed.phaseSrc, ps.src)
	}
}

// phaseSource is where one phase's fields come from: the phase's own
// mapping (it, at path) over defaults: (defs). src records, per field, the
// path it was read from.
type phaseSource struct {
	it, defs *node
	path     string
	src      map[string]string
}

// get returns the mapping and path that give field key: the phase's own,
// else defaults:, else the phase (unset); it records the field's path.
func (ps *phaseSource) get(key string) (*node, string) {
	m, p := ps.it, ps.path
	if !ps.it.has(key) && ps.defs.has(key) {
		m, p = ps.defs, "defaults"
	}
	ps.src[key] = join(p, key)
	return m, p
}

// phaseConfig decodes a phase's load fields (mode, duration, shape and its
// parameters, concurrency, limits, timeout and retries) over the runner's
// defaults, with the scenario's seed, users and reservation TTL.
func (d *dec) phaseConfig(ps *phaseSource) runner.Config {
	s := d.s
	get := ps.get
	c := runner.DefaultConfig()
	c.Seed, c.Users, c.TTL = s.Seed, s.Activity.Users, s.Activity.ReservationTTL
	m, p := get("mode")
	c.Mode = runner.Mode(d.str(m, "mode", p+".mode", string(runner.ModeOpen)))
	m, p = get("duration")
	c.Duration = d.dur(m, "duration", p+".duration", c.Duration)
	m, p = get("shape")
	c.Shape = runner.Shape{Kind: d.str(m, "shape", p+".shape", "constant"), Rate: c.Shape.Rate}
	m, p = get("rate")
	c.Shape.Rate = d.float(m, "rate", p+".rate", c.Shape.Rate)
	for _, f := range []struct {
		key string
		dst *float64
	}{{"slope", &c.Shape.Slope}, {"amplitude", &c.Shape.Amplitude}, {"peak", &c.Shape.Peak}} {
		m, p = get(f.key)
		*f.dst = d.float(m, f.key, p+"."+f.key, 0)
	}
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{"period", &c.Shape.Period}, {"spike_at", &c.Shape.SpikeAt}, {"ramp_up", &c.Shape.RampUp},
		{"hold", &c.Shape.Hold}, {"ramp_down", &c.Shape.RampDown}} {
		m, p = get(f.key)
		*f.dst = d.dur(m, f.key, p+"."+f.key, 0)
	}
	m, p = get("concurrency")
	c.Concurrency = int(d.int(m, "concurrency", p+".concurrency", int64(c.Concurrency)))
	m, p = get("max_in_flight")
	c.MaxInFlight = int(d.int(m, "max_in_flight", p+".max_in_flight", int64(c.MaxInFlight)))
	m, p = get("max_ops")
	c.MaxOps = int(d.int(m, "max_ops", p+".max_ops", 0))
	m, p = get("timeout")
	c.CallTimeout = d.dur(m, "timeout", p+".timeout", c.CallTimeout)
	m, p = get("retries")
	c.RetrySends = int(d.int(m, "retries", p+".retries", int64(c.RetrySends)))
	m, p = get("retry_backoff")
	c.RetryBackoff = d.dur(m, "retry_backoff", p+".retry_backoff", c.RetryBackoff)
	return c
}

// phaseMix decodes the phase's mix: share by share, the phase's over
// defaults:, unset shares 0.
func (d *dec) phaseMix(ps *phaseSource, c *runner.Config) {
	it, defs, path := ps.it, ps.defs, ps.path
	c.Mix = runner.Mix{}
	d.section(it, "mix", path+".mix")
	d.section(defs, "mix", "defaults.mix")
	for _, sh := range c.Mix.Shares() {
		mm, mp := it.get("mix"), path+".mix"
		if !mm.has(sh.Name) && defs.get("mix").has(sh.Name) {
			mm, mp = defs.get("mix"), "defaults.mix"
		}
		ps.src["mix."+sh.Name] = join(mp, sh.Name)
		*sh.Share = d.float(mm, sh.Name, mp+"."+sh.Name, 0)
	}
}

func (d *dec) faults(root *node) {
	s := d.s
	list := d.section(root, "faults", "faults")
	if list == nil {
		return
	}
	count := map[string]int{}
	for i, it := range list.items {
		path := fmt.Sprintf("faults[%d]", i)
		d.mark(path, it)
		f := FaultSpec{
			Kind:   d.str(it, "kind", path+".kind", ""),
			At:     d.dur(it, "at", path+".at", 0),
			For:    d.dur(it, "for", path+".for", 0),
			Target: d.str(it, "target", path+".target", ""),
			Params: map[string]string{},
		}
		count[f.Kind]++
		def := f.Kind
		if count[f.Kind] > 1 {
			def = fmt.Sprintf("%s#%d", f.Kind, count[f.Kind])
		}
		f.Name = d.str(it, "name", path+".name", def)
		if pm := d.section(it, "params", path+".params"); pm != nil {
			for _, k := range pm.keys {
				f.Params[k] = d.str(pm, k, path+".params."+k, "")
			}
		}
		s.Faults = append(s.Faults, f)
	}
}

func (d *dec) assertions(root *node) {
	a := &d.s.Assertions
	m := d.section(root, "assertions", "assertions")
	a.Invariants = d.strs(m, "invariants", "assertions.invariants")
	if len(a.Invariants) == 1 && strings.EqualFold(a.Invariants[0], "all") {
		a.Invariants = nil
	}
	if list := d.section(m, "slo", "assertions.slo"); list != nil {
		for i, it := range list.items {
			p := fmt.Sprintf("assertions.slo[%d]", i)
			d.mark(p, it)
			a.SLO = append(a.SLO, SLO{
				Phase:         d.str(it, "phase", p+".phase", ""),
				Of:            d.str(it, "of", p+".of", "latency"),
				P50:           d.dur(it, "p50", p+".p50", 0),
				P95:           d.dur(it, "p95", p+".p95", 0),
				P99:           d.dur(it, "p99", p+".p99", 0),
				P999:          d.dur(it, "p999", p+".p999", 0),
				Max:           d.dur(it, "max", p+".max", 0),
				MinThroughput: d.float(it, "min_throughput", p+".min_throughput", 0),
			})
		}
	}
	if m.has("max_lost_acks") {
		v := d.int(m, "max_lost_acks", "assertions.max_lost_acks", 0)
		a.MaxLostAcks = &v
	}
	if em := d.section(m, "expect_fail", "assertions.expect_fail"); em != nil {
		a.ExpectFail = map[string]int64{}
		for _, k := range em.keys {
			p := "assertions.expect_fail." + k
			d.mark(p, em.get(k))
			a.ExpectFail[strings.ToUpper(k)] = d.int(em.get(k), "min", p+".min", 1)
		}
	}
	if m.has("max_dropped_ratio") {
		v := d.float(m, "max_dropped_ratio", "assertions.max_dropped_ratio", 0)
		a.MaxDroppedRatio = &v
	}
	if m.has("max_unknown_ratio") {
		v := d.float(m, "max_unknown_ratio", "assertions.max_unknown_ratio", 0)
		a.MaxUnknownRatio = &v
	}
	if m.has("min_throughput") {
		v := d.float(m, "min_throughput", "assertions.min_throughput", 0)
		a.MinThroughput = &v
	}
	if om := d.section(m, "outcomes", "assertions.outcomes"); om != nil {
		keys := append([]string(nil), om.keys...)
		sort.Strings(keys)
		for _, k := range keys {
			p := "assertions.outcomes." + k
			d.mark(p, om.get(k))
			b := OutcomeBound{Outcome: k}
			bm := om.get(k)
			for _, f := range []struct {
				key string
				dst **int64
			}{{"exactly", &b.Exactly}, {"min", &b.Min}, {"max", &b.Max}} {
				if bm.has(f.key) {
					v := d.int(bm, f.key, p+"."+f.key, 0)
					*f.dst = &v
				}
			}
			a.Outcomes = append(a.Outcomes, b)
		}
	}
}

// Duration is the planned length of the load: the sum of the phases'
// durations (an upper bound for phases that end at max_ops). For a suite,
// the sum of its members' (members that fail to load count 0).
func (s *Scenario) Duration() time.Duration {
	if len(s.Suite) > 0 {
		var total time.Duration
		for _, name := range s.Suite {
			if m, err := s.member(name); err == nil {
				total += m.Duration()
			}
		}
		return total
	}
	var total time.Duration
	for _, p := range s.Phases {
		total += p.Config.Duration
	}
	return total
}

// PhaseSpans returns the load phases as report phases, at their planned
// offsets from the start of the load. Phases that end early (max_ops,
// closed loop) shift the later ones: prefer the engine's actual phase
// boundaries (runner.Result.Phases) when building the report.
func (s *Scenario) PhaseSpans() []reports.PhaseSpan {
	var out []reports.PhaseSpan
	var at time.Duration
	for _, p := range s.Phases {
		out = append(out, reports.PhaseSpan{Name: p.Name, Start: at, End: at + p.Config.Duration})
		at += p.Config.Duration
	}
	return out
}

// IsSuite reports whether the scenario is a suite of other scenarios.
func (s *Scenario) IsSuite() bool { return len(s.Suite) > 0 }

// Waived reports whether invariant id is reported but not required: the
// scenario lists the required invariants explicitly and id is not among
// them. Compute a run's verdict as: no assertion of Evaluate failed, and no
// invariant failed unless it is waived.
func (s *Scenario) Waived(id string) bool {
	if s.Assertions.Invariants == nil {
		return false
	}
	for _, r := range s.Assertions.Invariants {
		if strings.EqualFold(r, id) {
			return false
		}
	}
	return true
}

// FaultPhaseNames are the report phase names the fault timeline yields when
// named with FaultSpec.Name ("baseline", "during <name>", "after <name>").
func (s *Scenario) FaultPhaseNames() []string {
	if len(s.Faults) == 0 {
		return nil
	}
	out := []string{"baseline"}
	for _, f := range s.Faults {
		out = append(out, "during "+f.Name, "after "+f.Name)
	}
	return out
}
