package explore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
	"seckill-harness/scenarios"
)

// Options are explore's flags.
type Options struct {
	Seed int64
	// Budget is the wall time for drawing and running schedules (shrinking
	// has its own); Runs the most schedules. At least one must be set; the
	// first reached ends the exploration.
	Budget time.Duration
	Runs   int
	// Out receives run-NNN/ per schedule, summary.txt, summary.json and junit.xml.
	Out string
	// State is the coverage state file carried across invocations ("": none).
	State  string
	Bounds Bounds
	// Cluster is the one stand every schedule runs on (its Masters and
	// Replicas are the schedules' topology).
	Cluster lifecycle.ClusterSpec
	// ShrinkBudget is the wall time each finding's shrink may take; 0: no shrink.
	ShrinkBudget time.Duration
	// Confirm is how many times the minimal schedule is run again, each
	// on a cluster of its own as the re-run command does (the "reproduces
	// N/M" figure); 0: not at all.
	Confirm int
	// KeepGoing explores on after a finding (each invariant shrunk once);
	// otherwise the first finding ends the exploration.
	KeepGoing bool
	// Given reports whether a cluster flag (masters, replicas,
	// node-timeout, …) was given explicitly: it then overrides each
	// schedule's topology, as for 'seckill-harness run FILE' (planner.Inputs).
	Given func(flag string) bool
	// Command is how the printed re-run command calls the harness
	// ("" = "seckill-harness").
	Command string
	Log     io.Writer // progress and the summary; nil: discarded
	// Logger receives the shared cluster's start and stop (nil: discarded);
	// each run's own log lines go to its run.log.
	Logger *slog.Logger
}

// RunRecord is one schedule explored.
type RunRecord struct {
	N        int      `json:"n"`
	Dir      string   `json:"dir"`
	Name     string   `json:"name"`
	Kinds    []string `json:"kinds"`
	Faults   []string `json:"faults"` // as --fault values
	Load     string   `json:"load"`   // Schedule.LoadShape
	Size     Size     `json:"size"`
	Verdict  string   `json:"verdict"` // pass, finding, warning (a check other than an invariant failed), error (harness)
	Failed   []string `json:"failed,omitempty"`
	Details  []string `json:"details,omitempty"` // detail of each failed invariant
	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
	Seconds  float64  `json:"seconds"`
	EndS     float64  `json:"end_s"` // since the exploration began
}

// The verdicts of a run.
const (
	VerdictPass    = "pass"
	VerdictFinding = "finding"
	VerdictWarning = "warning"
	VerdictError   = "error"
)

// Finding is an invariant that failed, with its minimal reproducer.
type Finding struct {
	Run       int    `json:"run"`
	Invariant string `json:"invariant"`
	Detail    string `json:"detail"`
	Dir       string `json:"dir"`
	// Minimal is the shrunk scenario file (the original when shrinking
	// was off); Command re-runs it.
	Minimal       string   `json:"minimal"`
	Command       string   `json:"command"`
	Original      Size     `json:"original"`
	MinimalSize   Size     `json:"minimal_size"`
	MinimalFaults []string `json:"minimal_faults"`
	// Confirmations re-ran the minimal scenario; Reproduced of them failed
	// the same invariant. Reproduces is "3/3" or the count.
	Confirmations int           `json:"confirmations"`
	Reproduced    int           `json:"reproduced"`
	Reproduces    string        `json:"reproduces"`
	TimeToFindS   float64       `json:"time_to_find_s"`
	ShrinkS       float64       `json:"shrink_s"`
	Shrink        *ShrinkResult `json:"shrink,omitempty"`
}

// Summary is one exploration.
type Summary struct {
	Seed        int64          `json:"seed"`
	Path        string         `json:"path"`
	StartedAt   time.Time      `json:"started_at"`
	Budget      string         `json:"budget"`
	RunsLimit   int            `json:"runs_limit"`
	Seconds     float64        `json:"seconds"`
	Stopped     string         `json:"stopped"` // why the exploration ended
	Drawable    []string       `json:"drawable_kinds"`
	Runs        []RunRecord    `json:"runs"`
	FaultsTried map[string]int `json:"faults_tried"`
	Findings    []Finding      `json:"findings"`
	Coverage    *Coverage      `json:"coverage"`
}

// Explore opens one stand (a cluster with proxies in front of every node),
// draws schedules from the seed and runs each through the run lifecycle on
// that stand, writing its report to <Out>/run-NNN/. A run whose invariant
// fails is a finding: it is shrunk (ShrinkBudget) to a minimal scenario,
// written as <Out>/run-NNN/minimal.yaml with the command that re-runs it,
// and confirmed (Confirm re-runs). It writes summary.txt, summary.json and
// junit.xml to Out, carries the coverage in State, and prints the summary
// and the coverage to Log. An error is a harness or usage error; findings
// are in the Summary.
func Explore(ctx context.Context, o Options) (*Summary, error) {
	t0 := time.Now()
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	cov, err := LoadCoverage(o.State)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: %w", o.Out, err)
	}
	b := o.Bounds
	if o.Cluster.NodeTimeout > 0 {
		b.NodeTimeout = o.Cluster.NodeTimeout
	}
	st, setting, closeStand, err := openStand(ctx, o, b)
	if err != nil {
		return nil, err
	}
	defer closeStand()
	gen, err := NewDrawer(o.Seed, b, setting, cov)
	if err != nil {
		return nil, err
	}
	cov.Seeds = append(cov.Seeds, o.Seed)
	x := &exploration{o: o, stand: st, log: log, t0: t0, minDuration: gen.bounds.MinDuration}
	sum := &Summary{Seed: o.Seed, Path: gen.bounds.Path, StartedAt: t0.UTC(), Budget: o.Budget.String(), RunsLimit: o.Runs,
		Drawable: gen.Kinds(), FaultsTried: map[string]int{}, Findings: []Finding{}, Runs: []RunRecord{}}
	fmt.Fprintf(log, "explore: seed %d, path %s, kinds %s; budget %s, runs %d\n", o.Seed, sum.Path, strings.Join(sum.Drawable, ", "), o.Budget, o.Runs)
	if err := x.loop(ctx, gen, cov, sum); err != nil {
		return nil, err
	}
	return x.finish(ctx, cov, sum)
}

// openStand opens the one stand every schedule runs on (with proxies, and
// replication proxies on a local cluster with replicas), a throwaway
// PostgreSQL when b runs the pipeline, and reads the fault setting once
// the cluster's nodes agree on the topology. release closes them all.
func openStand(ctx context.Context, o Options, b Bounds) (st *lifecycle.Stand, setting Setting, release func(), err error) {
	spec := o.Cluster
	// Replication proxies make replica-lag and replica-partition drawable.
	spec.ReplicationProxies = spec.ReplicationProxies || (spec.Replicas > 0 && (spec.Spec == "" || spec.Spec == "local"))
	st, err = lifecycle.OpenStand(ctx, o.Logger, spec, 64, true)
	if err != nil {
		return nil, setting, nil, err
	}
	closers := []func(){st.Close}
	release = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	if b.Path != "" && b.Path != scenarios.DefaultPath && !st.Cluster.Owned() {
		return nil, setting, nil, fmt.Errorf("--path %s writes broken data on purpose: explore runs it only on a cluster it creates (--cluster local or docker)", b.Path)
	}
	if b.Pipeline {
		// The pipeline's orders: one throwaway local PostgreSQL for the
		// whole exploration (each run gets its own schema in it).
		pg, err := compose.StartPostgresDB(ctx, compose.PostgresOptions{}, compose.PostgresDBOptions{MaxConns: 32})
		if err != nil {
			return nil, setting, nil, fmt.Errorf("--pipeline: %w", err)
		}
		closers = append(closers, func() { _ = pg.Close() })
		st.Postgres = pg.Pool()
	}
	// The faults it generates follow the setting: read it once every node
	// of a cluster it did not create agrees on the topology.
	if err := st.WaitSettled(ctx, compose.TopologyNeeds{}); err != nil {
		return nil, setting, nil, err
	}
	setting, err = faults.SettingOf(ctx, st.Cluster, o.Cluster.AllowDestructive, st.Proxies != nil, b.Pipeline)
	if err != nil {
		return nil, setting, nil, err
	}
	return st, setting, release, nil
}

// loop draws and runs schedules until --runs, the budget, the context, a
// finding (unless KeepGoing) or three harness errors in a row stop it,
// recording each run, the kinds tried and the findings (each failing
// invariant shrunk once) in sum and the coverage in cov. An error is one
// explore cannot go on after.
func (x *exploration) loop(ctx context.Context, gen *Drawer, cov *Coverage, sum *Summary) error {
	o := x.o
	shrunk := map[string]bool{}
	errorsInRow := 0
	for n := 1; ; n++ {
		if sum.Stopped = x.stopped(ctx, n); sum.Stopped != "" {
			return nil
		}
		s, err := gen.Next()
		if err != nil {
			return err
		}
		rec, err := x.run(ctx, s, filepath.Join(o.Out, fmt.Sprintf("run-%03d", n)), n)
		if err != nil {
			return err
		}
		cov.Add(s)
		for _, k := range s.Kinds() {
			sum.FaultsTried[k]++
		}
		sum.Runs = append(sum.Runs, rec)
		fmt.Fprintf(x.log, "run %03d %-8s %-40s %s  (%.1fs) %s\n", n, rec.Verdict, strings.Join(rec.Faults, " + "), rec.Load, rec.Seconds, strings.Join(append(rec.Failed, rec.Warnings...), "; "))
		if rec.Verdict == VerdictError {
			if errorsInRow++; errorsInRow >= 3 {
				sum.Stopped = "three harness errors in a row: " + rec.Error
				return nil
			}
			continue
		}
		errorsInRow = 0
		if rec.Verdict != VerdictFinding {
			continue
		}
		id := rec.Failed[0]
		cov.Finding(id)
		if shrunk[id] {
			continue
		}
		shrunk[id] = true
		f, err := x.finding(ctx, s, rec, id)
		if err != nil {
			return err
		}
		sum.Findings = append(sum.Findings, *f)
		if !o.KeepGoing {
			sum.Stopped = fmt.Sprintf("finding %s in run %d (add --keep-going to explore on)", id, n)
			return nil
		}
	}
}

// stopped says why schedule n does not start ("": it does): the context
// ended, --runs were run, or the budget is spent.
func (x *exploration) stopped(ctx context.Context, n int) string {
	o := x.o
	switch {
	case ctx.Err() != nil:
		return "interrupted"
	case o.Runs > 0 && n > o.Runs:
		return fmt.Sprintf("ran %d schedule(s) (--runs)", o.Runs)
	case o.Budget > 0 && time.Since(x.t0) >= o.Budget:
		return fmt.Sprintf("budget %s spent", o.Budget)
	}
	return ""
}

// finish saves the coverage to State, writes the summary files to Out and
// prints the summary; an interrupted exploration returns its summary with
// an error saying so.
func (x *exploration) finish(ctx context.Context, cov *Coverage, sum *Summary) (*Summary, error) {
	sum.Seconds = time.Since(x.t0).Seconds()
	sum.Coverage = cov
	if err := cov.Save(x.o.State); err != nil {
		return nil, err
	}
	if err := sum.write(x.o.Out); err != nil {
		return nil, err
	}
	if err := sum.WriteText(x.log); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return sum, fmt.Errorf("explore interrupted after %d run(s) (summary written to %s): %w", len(sum.Runs), x.o.Out, context.Cause(ctx))
	}
	return sum, nil
}

func (o *Options) validate() error {
	var errs []error
	if o.Out == "" {
		errs = append(errs, errors.New("--out: explore needs a directory for its runs and summary"))
	}
	if o.Budget <= 0 && o.Runs <= 0 {
		errs = append(errs, errors.New("give --budget (e.g. 10m) or --runs N: explore needs to know when to stop"))
	}
	if o.Runs < 0 || o.Budget < 0 || o.ShrinkBudget < 0 || o.Confirm < 0 {
		errs = append(errs, errors.New("--runs, --budget, --shrink-budget and --confirm must not be negative"))
	}
	if err := o.Bounds.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := checkChoices(); err != nil {
		errs = append(errs, err)
	}
	if o.Command == "" {
		o.Command = "seckill-harness"
	}
	return errors.Join(errs...)
}

// ShrinkRepeat is how many trials in a row must fail the invariant for the
// shrinker to keep a change (see ShrinkOptions.Repeat).
const ShrinkRepeat = 2

// exploration is the state of one Explore.
type exploration struct {
	o           Options
	minDuration time.Duration // the shortest load explored: shrinking stays above it
	stand       *lifecycle.Stand
	log         io.Writer
	t0          time.Time
}

// run runs one schedule into dir (its scenario.yaml, the run's report and
// run.log) and judges it. An error is one explore cannot go on after (an
// unwritable directory); a harness error of the run is the record's.
func (x *exploration) run(ctx context.Context, s Schedule, dir string, n int) (RunRecord, error) {
	t0 := time.Now()
	rec := RunRecord{N: n, Dir: dir, Name: s.Name, Kinds: s.Kinds(), Load: s.LoadShape(), Size: s.Size(), Faults: []string{}}
	for _, f := range s.Faults {
		rec.Faults = append(rec.Faults, f.Text())
	}
	failed, warnings, details, err := x.trial(ctx, s, dir, false)
	rec.Seconds, rec.EndS = time.Since(t0).Seconds(), time.Since(x.t0).Seconds()
	var fatal *fatalError
	switch {
	case errors.As(err, &fatal):
		return rec, fatal.err
	case err != nil:
		rec.Verdict, rec.Error = VerdictError, err.Error()
	case len(failed) > 0:
		// The scenario's own "invariants pass" assertion repeats the
		// failure: the other checks are in the run's report.
		rec.Verdict, rec.Failed, rec.Details = VerdictFinding, failed, details
	case len(warnings) > 0:
		rec.Verdict, rec.Warnings = VerdictWarning, warnings
	default:
		rec.Verdict = VerdictPass
	}
	return rec, nil
}

// fatalError is a trial error explore stops on.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

// trial runs schedule s on the stand (fresh: on a cluster of its own,
// started and removed as 'seckill-harness run FILE' does) with its report
// in dir: the failed
// invariants (ids, and their details), and warnings (other checks that
// failed: evidence, health, a fault that did not happen). An error is a
// harness error of the run.
func (x *exploration) trial(ctx context.Context, s Schedule, dir string, fresh bool) (failed, warnings, details []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, nil, &fatalError{fmt.Errorf("--out: %w", err)}
	}
	file := filepath.Join(dir, "scenario.yaml")
	data, err := s.YAML("drawn by seckill-harness explore")
	if err != nil {
		return nil, nil, nil, err
	}
	if err := reports.WriteFileAtomic(file, data); err != nil {
		return nil, nil, nil, &fatalError{fmt.Errorf("--out: %w", err)}
	}
	sc, err := scenarios.Load(file)
	var p *lifecycle.Plan
	if err == nil {
		in := planner.Inputs{Cluster: x.o.Cluster, Given: x.o.Given}
		if !fresh {
			in.Stand = x.stand
		}
		p, err = planner.Build(sc, in)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s is not a valid scenario (a bug of the generator or the shrinker): %w", file, err)
	}
	p.Cluster.AllowDestructive = x.o.Cluster.AllowDestructive
	logf, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		return nil, nil, nil, &fatalError{fmt.Errorf("--out: %w", err)}
	}
	defer logf.Close()
	oc, err := lifecycle.Execute(ctx, p, lifecycle.Output{Dir: dir, Log: logf, Logger: slog.New(slog.NewTextHandler(logf, nil))})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := oc.Interrupted(); err != nil {
		return nil, nil, nil, err
	}
	for _, inv := range oc.Report.Invariants {
		if inv.Status == reports.StatusFail && !inv.Waived && inv.Expected == nil {
			failed = append(failed, inv.ID)
			details = append(details, inv.ID+": "+inv.Detail)
		}
	}
	for _, a := range oc.Report.Assertions {
		if a.Status == reports.StatusFail {
			w := a.Name
			if a.Detail != "" {
				w += ": " + a.Detail
			}
			warnings = append(warnings, w)
		}
	}
	warnings = append(warnings, oc.NotInjected...)
	return failed, warnings, details, nil
}

// finding shrinks the schedule of a run that failed invariant id, writes
// the minimal scenario and confirms it.
func (x *exploration) finding(ctx context.Context, s Schedule, rec RunRecord, id string) (*Finding, error) {
	f := &Finding{Run: rec.N, Invariant: id, Dir: rec.Dir, Original: s.Size(), TimeToFindS: rec.EndS}
	for _, d := range rec.Details {
		if strings.HasPrefix(d, id+": ") {
			f.Detail = strings.TrimPrefix(d, id+": ")
		}
	}
	minimal := s
	if x.o.ShrinkBudget > 0 {
		fmt.Fprintf(x.log, "shrinking run %03d (%s failed; %s) for up to %s\n", rec.N, id, s.Size(), x.o.ShrinkBudget)
		try := func(ctx context.Context, v Schedule, label string) ([]string, error) {
			failed, _, _, err := x.trial(ctx, v, filepath.Join(rec.Dir, label), false)
			var fatal *fatalError
			if errors.As(err, &fatal) {
				return nil, fatal.err
			}
			verdict := "passed"
			if slices.Contains(failed, id) {
				verdict = id + " still fails"
			} else if err != nil {
				verdict = "error: " + err.Error()
			}
			fmt.Fprintf(x.log, "  %s: %s (%s)\n", label, verdict, v.Size())
			return failed, err
		}
		valid := func(v Schedule) error { _, _, err := v.Scenario(v.Name); return err }
		res := Shrink(ctx, s, id, valid, try, ShrinkOptions{Budget: x.o.ShrinkBudget, Repeat: ShrinkRepeat, MinDuration: x.minDuration})
		f.Shrink, f.ShrinkS, minimal = res, res.Seconds, res.Schedule
		how := "no smaller variant fails " + id
		if !res.Exhausted {
			how = "the shrink budget ran out"
		}
		fmt.Fprintf(x.log, "shrunk in %.1fs (%d variants tried; %s): %s -> %s\n", res.Seconds, len(res.Steps), how, res.Original, res.Minimal)
	}
	minimal.Name = s.Name + "-minimal"
	f.MinimalSize = minimal.Size()
	for _, fd := range minimal.Faults {
		f.MinimalFaults = append(f.MinimalFaults, fd.Text())
	}
	f.Minimal = filepath.Join(rec.Dir, "minimal.yaml")
	f.Command = fmt.Sprintf("%s run %s --out %s", x.o.Command, f.Minimal, filepath.Join(rec.Dir, "repro"))
	for i := 1; i <= x.o.Confirm && ctx.Err() == nil; i++ {
		// As the re-run command does: on a cluster of its own.
		failed, _, _, err := x.trial(ctx, minimal, filepath.Join(rec.Dir, fmt.Sprintf("confirm-%d", i)), true)
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return nil, fatal.err
		}
		f.Confirmations++
		if err == nil && slices.Contains(failed, id) {
			f.Reproduced++
		}
	}
	f.Reproduces = fmt.Sprintf("%d/%d", f.Reproduced, f.Confirmations)
	if f.Confirmations == 0 {
		f.Reproduces = "not confirmed (--confirm 0)"
	}
	fmt.Fprintf(x.log, "confirmations: %s reproduces %s\n", id, f.Reproduces)
	header := fmt.Sprintf("# Minimal reproducer: %s fails (%s).\n# Found by seckill-harness explore --seed %d in run %d; shrunk from %s\n# to %s.\n# Reproduces %s. Re-run:\n#   %s\n",
		id, oneLine(f.Detail), x.o.Seed, rec.N, f.Original, f.MinimalSize, f.Reproduces, f.Command)
	data, err := minimal.YAML(fmt.Sprintf("minimal reproducer of %s from explore seed %d run %d (reproduces %s)", id, x.o.Seed, rec.N, f.Reproduces))
	if err != nil {
		return nil, err
	}
	if err := reports.WriteFileAtomic(f.Minimal, append([]byte(header), data...)); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	if err := reports.WriteFileAtomic(filepath.Join(rec.Dir, "REPRODUCE.txt"), []byte(f.Command+"\n")); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return f, nil
}

// oneLine shortens a detail for a comment line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
