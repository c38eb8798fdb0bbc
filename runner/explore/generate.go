package explore

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"seckill-harness/faults"
	"seckill-harness/runner"
)

// Bounds are what the generator may draw. The zero value of a field takes
// the DefaultBounds value.
type Bounds struct {
	MinDuration, MaxDuration time.Duration // length of the load
	MinRate, MaxRate         float64       // ops/s (the mean of the curve)
	MaxFaults                int           // faults per schedule: 1..MaxFaults
	// Kinds, when not empty, restricts the draw to these fault kinds
	// (each must be drawable in the setting).
	Kinds []string
	// Path is the reserve path every schedule drives ("" = reference).
	Path string
	// Pipeline runs the order pipeline beside every schedule's load (the
	// pipeline fault kinds become drawable); the run needs PostgreSQL.
	Pipeline bool
	// NodeTimeout is the cluster-node-timeout every schedule names; its
	// masters and replicas are the Setting's (explore runs them all on
	// one stand).
	NodeTimeout time.Duration
}

// DefaultBounds are explore's defaults: a nightly job's loads of 3-10 s
// between 100 and 1,000 ops/s, one to three faults.
func DefaultBounds() Bounds {
	return Bounds{MinDuration: 3 * time.Second, MaxDuration: 10 * time.Second, MinRate: 100, MaxRate: 1000, MaxFaults: 3,
		NodeTimeout: 2 * time.Second}
}

func (b Bounds) withDefaults() Bounds {
	d := DefaultBounds()
	if b.MinDuration == 0 {
		b.MinDuration = min(d.MinDuration, max(b.MaxDuration, time.Second))
	}
	if b.MaxDuration == 0 {
		b.MaxDuration = max(d.MaxDuration, b.MinDuration)
	}
	if b.MinRate == 0 {
		b.MinRate = min(d.MinRate, max(b.MaxRate, 1))
	}
	if b.MaxRate == 0 {
		b.MaxRate = max(d.MaxRate, b.MinRate)
	}
	if b.MaxFaults == 0 {
		b.MaxFaults = d.MaxFaults
	}
	if b.NodeTimeout == 0 {
		b.NodeTimeout = d.NodeTimeout
	}
	if b.Path == "" {
		b.Path = "reference"
	}
	return b
}

// Validate names the flag to fix.
func (b Bounds) Validate() error {
	b = b.withDefaults()
	var errs []error
	if b.MinDuration < time.Second {
		errs = append(errs, fmt.Errorf("--min-duration %s: at least 1s (a fault needs load before, during and after it)", b.MinDuration))
	}
	if b.MaxDuration < b.MinDuration {
		errs = append(errs, fmt.Errorf("--max-duration %s is below --min-duration %s", b.MaxDuration, b.MinDuration))
	}
	if b.MinRate < 1 || b.MaxRate < b.MinRate {
		errs = append(errs, fmt.Errorf("rates: want 1 <= --min-rate (%g) <= --max-rate (%g)", b.MinRate, b.MaxRate))
	}
	if b.MaxFaults < 1 || b.MaxFaults > 3 {
		errs = append(errs, fmt.Errorf("--max-faults %d: want 1, 2 or 3", b.MaxFaults))
	}
	return errors.Join(errs...)
}

// Drawable lists, sorted, the fault kinds the generator may draw in
// setting s within bounds b: registered kinds that are available there by
// their declared rules (faults.Available: topology, proxies, replication
// proxies, pipeline, process control, the kind's own check), not
// destructive unless s.AllowDestructive, and in b.Kinds when given. An
// error names a kind of b.Kinds that cannot be drawn, and why.
func Drawable(s Setting, b Bounds) ([]string, error) {
	var out []string
	why := map[string]string{}
	for _, spec := range faults.Kinds() {
		k := spec.Kind
		if faults.Destructive(k, map[string]string{}) && !s.AllowDestructive {
			why[k] = "it is destructive: add --allow-destructive"
			continue
		}
		p, err := FaultDraw{Kind: k, For: time.Second, Params: drawParams(k, rand.New(rand.NewPCG(1, 1)), s)}.planned()
		if err == nil {
			err = faults.Available(p, s)
		}
		if err != nil {
			why[k] = err.Error()
			continue
		}
		out = append(out, k)
	}
	if len(b.Kinds) > 0 {
		var errs []error
		for _, k := range b.Kinds {
			if _, ok := faults.Lookup(k); !ok {
				errs = append(errs, fmt.Errorf("--kinds %s: unknown fault kind; see 'seckill-harness faults'", k))
			} else if !slices.Contains(out, k) {
				errs = append(errs, fmt.Errorf("--kinds %s: not drawable here: %s", k, why[k]))
			}
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		out = append([]string(nil), b.Kinds...)
		sort.Strings(out)
		out = slices.Compact(out)
	}
	if len(out) == 0 {
		return nil, errors.New("no fault kind can be drawn on this cluster: give it proxies, replicas, or --allow-destructive")
	}
	return out, nil
}

// Setting is the cluster the schedules run on, as faults.Available judges
// it: explore reads it from its stand (faults.SettingOf); a test may fill
// it by hand.
type Setting = faults.Setting

// Drawer draws schedules: the i-th schedule of seed S comes from a PCG
// source seeded with (S, i) and from the coverage the drawer started
// with plus the schedules it drew before, so the same seed, bounds,
// setting and starting coverage give the same schedules.
type Drawer struct {
	seed     uint64
	bounds   Bounds
	setting  Setting
	kinds    []string
	coverage *Coverage // the starting coverage plus every schedule drawn
	n        int
}

// NewDrawer checks the bounds against the setting and returns a
// drawer; cov (nil: none) is copied, not changed. The setting's
// Pipeline is the bounds' (every schedule runs the pipeline, or none).
func NewDrawer(seed int64, b Bounds, s Setting, cov *Coverage) (*Drawer, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	b = b.withDefaults()
	s.Pipeline = b.Pipeline // the schedules run the pipeline or none do
	kinds, err := Drawable(s, b)
	if err != nil {
		return nil, err
	}
	if cov == nil {
		cov = NewCoverage()
	}
	return &Drawer{seed: uint64(seed), bounds: b, setting: s, kinds: kinds, coverage: cov.Clone()}, nil
}

// Kinds lists the kinds the generator draws from.
func (g *Drawer) Kinds() []string { return append([]string(nil), g.kinds...) }

// Next draws the next schedule: a valid scenario (checked by the scenario
// validator, and each fault by faults.Available in the setting). It draws
// again, from the same source, when a draw is not valid (two exclusive
// faults overlapping on one target, say); an error means no valid draw
// was found, which is a bug in the bounds.
func (g *Drawer) Next() (Schedule, error) {
	g.n++
	r := rand.New(rand.NewPCG(g.seed, uint64(g.n)))
	var last error
	for attempt := 0; attempt < 50; attempt++ {
		s := g.draw(r)
		s.Name = fmt.Sprintf("explore-%d-%03d", int64(g.seed), g.n)
		if err := g.check(s); err != nil {
			last = err
			continue
		}
		g.coverage.Add(s)
		return s, nil
	}
	return Schedule{}, fmt.Errorf("explore: no valid schedule in 50 draws (seed %d, schedule %d): %w", int64(g.seed), g.n, last)
}

// check validates a schedule as a scenario and each fault in the setting.
func (g *Drawer) check(s Schedule) error {
	if _, _, err := s.Scenario(s.Name); err != nil {
		return err
	}
	for _, f := range s.Faults {
		p, err := f.planned()
		if err != nil {
			return err
		}
		if err := faults.Available(p, g.setting); err != nil {
			return err
		}
		if faults.Destructive(f.Kind, p.Params) && !g.setting.AllowDestructive {
			return fmt.Errorf("%s is destructive", f.Text())
		}
	}
	return nil
}

func (g *Drawer) draw(r *rand.Rand) Schedule {
	b := g.bounds
	s := Schedule{Seed: r.Int64N(1 << 31), Path: b.Path, Masters: g.setting.Masters, Replicas: g.setting.Replicas, NodeTimeout: b.NodeTimeout}
	s.Load = g.drawLoad(r)
	demand := s.Demand()
	// Stock between 30% and 150% of the demand: about half the schedules sell out.
	s.Stock = max(int64(demand*(0.3+1.2*r.Float64())), 4)
	s.Buckets = []int{1, 1, 2, 4}[r.IntN(4)]
	s.Stock = max(s.Stock, int64(s.Buckets))
	// Users: from a little over the stock (many repeat users) to above the demand.
	s.Users = max(int(float64(s.Stock)*1.1), int(demand*(0.5+1.5*r.Float64())), 10)
	if b.Pipeline {
		s.Pipeline = drawPipeline(r)
		// Every ACCEPTED becomes an order transaction in PostgreSQL: keep
		// the orders within what the order stage finishes in the drain on
		// a small machine (tens of transactions a second under load).
		s.Stock = min(s.Stock, pipelineMaxStock)
		s.Users = max(s.Users, int(float64(s.Stock)*1.1))
	}
	s.Faults = g.drawFaults(r, s.Load.Duration)
	return s
}

// drawLoad draws the load: a curve less explored weighs more.
func (g *Drawer) drawLoad(r *rand.Rand) Load {
	b := g.bounds
	shapes := []string{"constant", "linear", "sine", "spike"}
	w := make([]float64, len(shapes))
	for i, sh := range shapes {
		w[i] = 1 / float64(1+g.coverage.shapeCount(sh))
	}
	l := Load{Shape: shapes[pick(r, w)]}
	span := b.MaxDuration - b.MinDuration
	l.Duration = b.MinDuration
	if span > 0 {
		l.Duration += time.Duration(r.Int64N(int64(span) + 1))
	}
	l.Duration = l.Duration.Round(100 * time.Millisecond)
	l.Rate = math.Round(b.MinRate + (b.MaxRate-b.MinRate)*r.Float64())
	switch l.Shape {
	case "linear":
		// Ends at up to 1.5× the start rate, within MaxRate.
		end := min(l.Rate*(1+0.5*r.Float64()), b.MaxRate)
		l.Slope = math.Round((end - l.Rate) / l.Duration.Seconds())
	case "sine":
		l.Amplitude = math.Round(l.Rate * (0.2 + 0.6*r.Float64()))
		l.Period = (l.Duration / time.Duration(1+r.IntN(3))).Round(100 * time.Millisecond)
	case "spike":
		l.Peak = math.Round(min(l.Rate*(1.5+r.Float64()), 2*b.MaxRate))
		third := l.Duration / 3
		l.SpikeAt = (third * time.Duration(r.IntN(2)+1) / 2).Round(100 * time.Millisecond)
		l.RampUp = (third / 4).Round(10 * time.Millisecond)
		l.Hold = (third / 2).Round(10 * time.Millisecond)
		l.RampDown = (third / 4).Round(10 * time.Millisecond)
	}
	l.Concurrency = []int{16, 32, 64}[r.IntN(3)]
	l.Timeout = time.Second
	l.Retries = 3
	if r.IntN(2) == 1 {
		// A share of duplicates (replays, earlier users, foreign ids) and releases.
		l.Mix = runner.Mix{Replay: round2(0.2 * r.Float64()), SameUser: round2(0.1 * r.Float64()),
			ForeignRequest: round2(0.05 * r.Float64()), Release: round2(0.05 * r.Float64())}
	}
	return l
}

// pipelineMaxStock bounds the stock of a schedule with the pipeline.
const pipelineMaxStock = 300

// drawPipeline draws the pipeline's weather: MQ errors and timeouts (half
// of the timed-out sends stored anyway), order rejects (each one a
// release: the compensation path), consumer lag. The access service sends
// each reservation itself (scan_after 500 ms, as service-crash needs), so
// the send_pending scanner and a drawn service-crash are exercised.
func drawPipeline(r *rand.Rand) *Pipeline {
	return &Pipeline{MQError: []float64{0, 0, 0.05}[r.IntN(3)], MQTimeout: []float64{0, 0.05, 0.2}[r.IntN(3)],
		OrderReject: []float64{0.1, 0.3}[r.IntN(2)], OrderDelay: []time.Duration{0, 20 * time.Millisecond}[r.IntN(2)],
		ScanAfter: 500 * time.Millisecond, Drain: 15 * time.Second}
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// drawFaults draws 1..MaxFaults faults, kinds weighted towards the less
// explored (and pairs with the kinds already drawn), placed back to back
// or overlapping inside the load.
func (g *Drawer) drawFaults(r *rand.Rand, load time.Duration) []FaultDraw {
	n := 1 + r.IntN(min(g.bounds.MaxFaults, len(g.kinds)))
	var chosen []string
	for len(chosen) < n {
		var cands []string
		var w []float64
		for _, k := range g.kinds {
			if slices.Contains(chosen, k) {
				continue
			}
			c := g.coverage.Kinds[k]
			for _, o := range chosen {
				c += g.coverage.Pairs[pairKey(k, o)]
			}
			cands = append(cands, k)
			w = append(w, 1/float64(1+c))
		}
		if len(cands) == 0 {
			break
		}
		chosen = append(chosen, cands[pick(r, w)])
	}
	// The faults act inside [10%, 90%] of the load: load before and after each.
	from, to := load/10, load*9/10
	minFor := min(300*time.Millisecond, (to-from)/time.Duration(len(chosen)))
	out := make([]FaultDraw, len(chosen))
	backToBack := len(chosen) > 1 && r.IntN(2) == 0
	slot := (to - from) / time.Duration(len(chosen))
	for i, k := range chosen {
		params := drawParams(k, r, g.setting)
		f := FaultDraw{Kind: k, Params: params}
		if t, ok := params["target"]; ok {
			f.Target = t
			delete(f.Params, "target")
		}
		if len(f.Params) == 0 {
			f.Params = nil
		}
		lo, hi := from, to
		if backToBack {
			lo, hi = from+slot*time.Duration(i), from+slot*time.Duration(i+1)
		}
		f.At = lo + time.Duration(r.Int64N(int64(hi-lo-minFor)/2+1))
		f.For = minFor + time.Duration(r.Int64N(int64(hi-f.At-minFor)+1))
		f.At, f.For = f.At.Round(100*time.Millisecond), f.For.Round(100*time.Millisecond)
		if f.For < 100*time.Millisecond {
			f.For = 100 * time.Millisecond
		}
		if f.At+f.For > hi {
			f.For = max(hi-f.At, 100*time.Millisecond)
		}
		out[i] = f
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// pick draws an index with probability proportional to its weight.
func pick(r *rand.Rand, w []float64) int {
	var sum float64
	for _, x := range w {
		sum += x
	}
	v := r.Float64() * sum
	for i, x := range w {
		if v < x {
			return i
		}
		v -= x
	}
	return len(w) - 1
}
