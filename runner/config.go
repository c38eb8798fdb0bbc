package runner

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"seckill-harness/history"
)

// Mode is open (paced by the schedule) or closed (workers as fast as they can).
type Mode string

// Modes.
const (
	ModeOpen   Mode = "open"
	ModeClosed Mode = "closed"
)

// Shape names the arrival-rate curve of an open-loop run.
type Shape struct {
	Kind string  `json:"kind"` // constant | linear | sine | spike
	Rate float64 `json:"rate"` // ops/s: the constant rate, linear start rate, sine mean, spike base
	// linear: the rate grows by Slope ops/s every second.
	Slope float64 `json:"slope,omitempty"`
	// sine: Rate ± Amplitude over Period.
	Amplitude float64       `json:"amplitude,omitempty"`
	Period    time.Duration `json:"period,omitempty"`
	// spike: from Rate, ramp to Peak over RampUp, hold for Hold, fall back
	// to Rate over RampDown, starting at SpikeAt (anti-pattern §6.1's wave).
	Peak     float64       `json:"peak,omitempty"`
	SpikeAt  time.Duration `json:"spike_at,omitempty"`
	RampUp   time.Duration `json:"ramp_up,omitempty"`
	Hold     time.Duration `json:"hold,omitempty"`
	RampDown time.Duration `json:"ramp_down,omitempty"`
}

// Shapes lists the valid Shape.Kind values.
var Shapes = []string{"constant", "linear", "sine", "spike"}

// Mix gives the share of each operation kind; fresh requests take the rest.
// Shares are in [0,1] and add up to at most 1.
type Mix struct {
	Replay         float64 `json:"replay"`          // an earlier request re-sent with the same ids
	SameUser       float64 `json:"same_user"`       // an earlier user with a new request_id
	ForeignRequest float64 `json:"foreign_request"` // another user's request_id reused
	Release        float64 `json:"release"`         // an earlier reservation fenced (RELEASE_PENDING) and compensated
	Return         float64 `json:"return"`          // the user of an earlier release back with a new request_id
	Query          float64 `json:"query"`           // an earlier request's answer asked of the system, not re-sent
}

// FlagName is the run flag that sets the share: mix-NAME, with dashes.
func (sh MixShare) FlagName() string { return "mix-" + strings.ReplaceAll(sh.Name, "_", "-") }

// MixShare is one share of a Mix: the kind it draws, its name (the
// scenario's mix field, report.json's key; run's flag is mix-NAME with
// dashes) and what it means.
type MixShare struct {
	Kind  history.Kind
	Name  string
	Help  string
	Share *float64
}

// Shares is m's shares in kind order (KindReplay .. KindQuery): the one
// list that the workload, the scenario's reader, writer and validator,
// run's flags and the reports walk.
func (m *Mix) Shares() []MixShare {
	return []MixShare{
		{history.KindReplay, "replay", "share of replays of an earlier request (same ids)", &m.Replay},
		{history.KindSameUser, "same_user", "share of earlier users sending a new request_id", &m.SameUser},
		{history.KindForeignRequest, "foreign_request", "share of request_ids reused by another user", &m.ForeignRequest},
		{history.KindRelease, "release", "share of releases (fence + compensate) of an earlier reservation", &m.Release},
		{history.KindReturn, "return", "share of users an earlier release released reserving again with a new request_id", &m.Return},
		{history.KindQuery, "query", "share of status queries: what became of an earlier request, asked without re-sending it (systems that answer one)", &m.Query},
	}
}

// Map is m's shares by name.
func (m Mix) Map() map[string]float64 {
	out := map[string]float64{}
	for _, sh := range m.Shares() {
		out[sh.Name] = *sh.Share
	}
	return out
}

// Total is the sum of m's shares (fresh requests take 1 - Total).
func (m Mix) Total() float64 {
	t := 0.0
	for _, sh := range m.Shares() {
		t += *sh.Share
	}
	return t
}

// Config is one run of the engine.
type Config struct {
	Seed        int64
	Mode        Mode
	Shape       Shape
	Duration    time.Duration
	Concurrency int // open: workers (connections in use at once); closed: workers
	MaxInFlight int // open: cap on scheduled-but-unfinished operations; over it an op is dropped
	MaxOps      int // 0: no cap; otherwise stop scheduling after this many operations
	Users       int
	Mix         Mix
	TTL         time.Duration // reservation TTL passed to reserve.lua
	CallTimeout time.Duration // per send; a send that times out is UNKNOWN
	// RetrySends is how many times an UNKNOWN (or TRYAGAIN/CLUSTERDOWN) answer is
	// re-sent with the same ids: never a new request_id (spec §7.4).
	RetrySends   int
	RetryBackoff time.Duration
	// LateThreshold: an operation that starts later than this after its intended time is a late start.
	LateThreshold time.Duration
	// SampleEvery is the period of the I1 sampler; 0 disables it.
	SampleEvery time.Duration
	// Generator is this process's share of a load split over several
	// harness processes (zero: the whole load).
	Generator history.Generator
}

// Limits of the fields the history stores narrowed (Op): a value past one
// would wrap or saturate there and make the checks judge the wrong thing.
const (
	// MaxUsers: Op.User holds a user index in 32 bits.
	MaxUsers = 1 << 32
	// MaxConcurrency bounds the workers (requests on the wire at once):
	// each may hold a connection to every node, and the default pool is
	// the workers plus 16 per node.
	MaxConcurrency = 10_000
	// MaxRetrySends: Op.Sends (1 + re-sends) is 8 bits.
	MaxRetrySends = 254
	// MaxOpsPerRun: Op.ID and Op.Req are 32 bits; the engine schedules
	// no operation past it (a closed phase ends there), and MaxOps may not
	// ask for more.
	MaxOpsPerRun = 1 << 32
)

// DefaultConfig is the engine's default: open loop, constant 2,000 ops/s for 10 s.
func DefaultConfig() Config {
	return Config{
		Seed: 42, Mode: ModeOpen, Shape: Shape{Kind: "constant", Rate: 2000}, Duration: 10 * time.Second,
		Concurrency: 64, MaxInFlight: 20000, Users: 20000,
		Mix: Mix{Replay: 0.05, SameUser: 0.03, ForeignRequest: 0.02, Release: 0.01},
		TTL: 15 * time.Minute, CallTimeout: 2 * time.Second, RetrySends: 3, RetryBackoff: 50 * time.Millisecond,
		LateThreshold: time.Millisecond, SampleEvery: time.Second,
	}
}

// Tail is how long the operations still in flight at a phase's end may
// take to finish: one send's deadline and one backoff (the send on the
// wire gets its answer or its timeout, or one re-send goes). Past it
// their context is cancelled: a send on the wire ends UNKNOWN, an
// operation not yet taken by a worker is recorded DROPPED (never sent),
// and Observed.CutAtTail counts them all.
func (c Config) Tail() time.Duration { return c.CallTimeout + c.RetryBackoff }

// Validate rejects impossible values; the error names the field and the fix.
func (c *Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	switch c.Mode {
	case ModeOpen, ModeClosed:
	default:
		bad("mode %q: want open or closed", c.Mode)
	}
	if c.Duration <= 0 {
		bad("duration must be positive, got %s", c.Duration)
	}
	if c.Concurrency <= 0 {
		bad("concurrency must be positive, got %d", c.Concurrency)
	} else if c.Concurrency > MaxConcurrency {
		bad("concurrency %d: at most %d (each worker may hold a connection to every node: file descriptors; a larger load is split over generators, --generator I/N)", c.Concurrency, MaxConcurrency)
	}
	if c.Users <= 0 {
		bad("users must be positive, got %d", c.Users)
	} else if uint64(c.Users) > MaxUsers {
		bad("users %d: at most %d (the history stores a user index in 32 bits)", c.Users, uint64(MaxUsers))
	}
	if err := c.Generator.Validate(); err != nil {
		errs = append(errs, err)
	} else if c.Users > 0 && c.Users < c.Generator.N() {
		bad("users %d: fewer than the %d generators (each needs users of its own)", c.Users, c.Generator.N())
	}
	if c.MaxOps < 0 {
		bad("max ops must not be negative")
	} else if uint64(c.MaxOps) > MaxOpsPerRun {
		bad("max ops %d: at most %d per run (the history numbers operations in 32 bits)", c.MaxOps, uint64(MaxOpsPerRun))
	}
	if c.TTL <= 0 {
		bad("reservation TTL must be positive, got %s", c.TTL)
	}
	if c.CallTimeout <= 0 {
		bad("call timeout must be positive, got %s", c.CallTimeout)
	}
	if c.RetrySends < 0 {
		bad("retry sends must not be negative")
	} else if c.RetrySends > MaxRetrySends {
		bad("retry sends %d: at most %d (the history counts sends in 8 bits)", c.RetrySends, MaxRetrySends)
	}
	m := c.Mix
	for name, v := range map[string]float64{"rate": c.Shape.Rate, "slope": c.Shape.Slope, "amplitude": c.Shape.Amplitude, "peak": c.Shape.Peak} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad("%s = %g: want a finite number of ops/s", name, v)
		}
	}
	for _, sh := range m.Shares() {
		if v := *sh.Share; math.IsNaN(v) || v < 0 || v > 1 {
			bad("mix %s = %g: want a share between 0 and 1", sh.Name, v)
		}
	}
	if s := m.Total(); s > 1+1e-9 {
		bad("mix shares add up to %g: at most 1 (fresh requests take the rest)", s)
	}
	if c.Mode == ModeOpen {
		if c.MaxInFlight <= 0 {
			bad("max in flight must be positive, got %d", c.MaxInFlight)
		}
		if err := c.Shape.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s Shape) validate() error {
	switch s.Kind {
	case "constant":
		if s.Rate <= 0 {
			return fmt.Errorf("rate must be positive, got %g", s.Rate)
		}
	case "linear":
		if s.Rate <= 0 {
			return fmt.Errorf("linear shape: start rate must be positive, got %g", s.Rate)
		}
	case "sine":
		if s.Rate <= 0 || s.Period <= 0 || s.Amplitude <= 0 || s.Amplitude >= s.Rate {
			return fmt.Errorf("sine shape: want rate > amplitude > 0 and a positive period (rate %g, amplitude %g, period %s)", s.Rate, s.Amplitude, s.Period)
		}
	case "spike":
		if s.Rate <= 0 || s.Peak < s.Rate || s.RampUp < 0 || s.Hold < 0 || s.RampDown < 0 || s.SpikeAt < 0 {
			return fmt.Errorf("spike shape: want peak >= rate > 0 and non-negative spike_at/ramp_up/hold/ramp_down (rate %g, peak %g)", s.Rate, s.Peak)
		}
	default:
		return fmt.Errorf("shape %q: want one of %v", s.Kind, Shapes)
	}
	return nil
}
