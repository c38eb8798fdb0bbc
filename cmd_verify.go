package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner"
)

type verifyOptions struct {
	cluster   clusterFlags
	activity  string
	out       string
	luaDir    string
	clockSkew time.Duration
	teardown  bool
	quiet     bool
}

func newVerifyCmd() *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify DIR...",
		Short: "Merge the runs of a load split over generators (--generator I/N) and judge I1–I9 over all of them against the live activity",
		Long: `verify is the merge step of a load split over several harness processes
(run --generator I/N --activity NAME, one --out DIR each). It reads every
generator's history (the --history JSONL, written by default with
--generator) and generator.json, unions the histories (op ids re-numbered,
times put on one clock from each run's started_at), reads the activity's
final state from the cluster, and checks I1–I9 over the union — the checks a
single generator cannot judge (I2 reservation accounting, I9 undersell) are
judged here, and every other check again over all generators together. A
check a generator failed during its own run (e.g. a transient I1 sample)
fails the merge too.

It then writes one report to --out: one verdict, and one latency distribution
from the runs' latency.hlog added together (as 'report' merges them), plus
the merged history.jsonl.

Refused (exit 2) unless the DIRs are exactly generators 0..N-1 of one
activity, each the run that claimed its index in the activity's registry
and finished. The activity stays on the cluster unless --teardown; its keys
expire at retention_until_ms anyway.

Exit codes: 0 every check passed, 1 a check failed, 2 harness or usage error.`,
		Example: `  # on machine A and machine B, against the same cluster and activity:
  seckill-harness run --cluster redis://10.0.0.5:7000 --activity sale42 --generator 0/2 --rate 5000 --out gen0
  seckill-harness run --cluster redis://10.0.0.5:7000 --activity sale42 --generator 1/2 --rate 5000 --out gen1
  # anywhere, with both directories:
  seckill-harness verify --cluster redis://10.0.0.5:7000 --out merged --teardown gen0 gen1`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			return runVerify(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), dirs, o)
		},
	}
	f := cmd.Flags()
	addClusterFlags(f, &o.cluster)
	f.StringVar(&o.activity, "activity", "", "the generators' activity (default: from their generator.json; given, it must match)")
	f.StringVar(&o.out, "out", "", "directory for the merged report.json, report.html, summary.md, junit.xml, latency.* and history.jsonl (required)")
	f.StringVar(&o.luaDir, "lua-dir", "", "the scripts the generators ran, if not the embedded ones")
	f.DurationVar(&o.clockSkew, "clock-skew", 100*time.Millisecond, "how far apart the generators' clocks may be: I9 ignores a SOLD_OUT this close after a bucket's last release")
	f.BoolVar(&o.teardown, "teardown", false, "after verifying, remove the activity's keys (and its generator registry) from the cluster")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "do not print the text summary")
	return cmd
}

// genRun is one generator's saved run.
type genRun struct {
	run  *reports.Run
	info *genInfo
	hist *runner.History
}

func runVerify(ctx context.Context, stdout, stderr io.Writer, dirs []string, o verifyOptions) error {
	if o.out == "" {
		return errors.New("--out is required: the merged report is written there")
	}
	if !sharedCluster(o.cluster.spec) {
		return fmt.Errorf("--cluster %q: verify reads the generators' activity from the cluster they ran against: --cluster redis://host:port[,…] (rediss:// for TLS)", o.cluster.spec)
	}
	runs, err := loadGenRuns(dirs, o.activity)
	if err != nil {
		return err
	}
	first := runs[0].info
	scripts, err := loadScripts(o.luaDir)
	if err != nil {
		return err
	}
	st, err := startStand(ctx, stdout, o.cluster, 8, false)
	if err != nil {
		return err
	}
	defer st.close()
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	act, err := readActivity(cctx, st.rdb, first.Activity, first.SKU, first.Buckets, first.Stock)
	if err != nil {
		return err
	}
	if err := checkRegistry(cctx, st, act, runs); err != nil {
		return err
	}

	// One history: op ids re-numbered in order, times on the earliest run's clock.
	merged := &runner.History{}
	var base time.Time
	for _, r := range runs {
		if s := r.run.Report.StartedAt; base.IsZero() || s.Before(base) {
			base = s
		}
	}
	faulted := false
	for _, r := range runs {
		shift := r.run.Report.StartedAt.Sub(base)
		faulted = faulted || len(r.run.Report.Faults) > 0
		for _, op := range r.hist.Ops {
			op.ID = uint32(len(merged.Ops))
			op.Intended += shift
			if op.Outcome != runner.OutcomeDropped {
				op.Start += shift
				op.End += shift
			}
			merged.Ops = append(merged.Ops, op)
		}
	}
	skew := o.clockSkew
	if len(runs) == 1 {
		skew = 0
	}
	store := lua.NewStore(st.rdb, scripts, []byte(fmt.Sprintf("seckill-harness-%d", first.Seed)))
	chk, err := runner.Verify(cctx, runner.Target{Store: store, Activity: act},
		runner.CheckInput{History: merged, FaultsInjected: faulted, ClockSkew: skew})
	if err != nil {
		return fmt.Errorf("reading the final state back: %w", err)
	}

	loaded := make([]*reports.Run, len(runs))
	for i, r := range runs {
		loaded[i] = r.run
	}
	rep, hists, notes, err := reports.MergeRuns(loaded)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "merge:", n)
	}
	applyVerification(rep, chk, loaded)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", o.out, err)
	}
	hf, err := os.Create(filepath.Join(o.out, "history.jsonl"))
	if err != nil {
		return err
	}
	werr := merged.WriteJSONL(hf)
	if err := errors.Join(werr, hf.Close()); err != nil {
		return fmt.Errorf("merged history: %w", err)
	}
	rep.HistoryFile = "history.jsonl"
	if err := reports.WriteFiles(o.out, rep, hists); err != nil {
		return err
	}
	if err := reports.WriteJUnitFile(o.out, rep); err != nil {
		return err
	}
	if !o.quiet {
		if err := reports.WriteText(stdout, rep); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "verified %d ops of %d generators against activity %s\nreport: %s\n",
		len(merged.Ops), len(runs), act.ID, filepath.Join(o.out, reports.ReportFile))
	if o.teardown {
		n, err := lua.Teardown(cctx, st.rdb, act)
		if err == nil {
			err = st.rdb.Del(cctx, registryKey(act)).Err()
		}
		if err != nil {
			return fmt.Errorf("teardown of activity %s: %w (its keys expire at %s anyway)", act.ID, err,
				time.UnixMilli(act.RetentionUntilMs).UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(stdout, "teardown: removed the %d keys of activity %s\n", n+1, act.ID)
	}
	if !rep.Passed {
		return errChecksFailed
	}
	return nil
}

// loadGenRuns reads every DIR's report, histograms, generator.json and
// history, and checks they are generators 0..N-1 of one split load.
func loadGenRuns(dirs []string, activity string) ([]genRun, error) {
	var runs []genRun
	for _, d := range dirs {
		info, err := readGenInfo(d)
		if err != nil {
			return nil, err
		}
		run, err := reports.LoadRun(d)
		if err != nil {
			return nil, err
		}
		if run.HistSource != reports.HlogFileName {
			return nil, fmt.Errorf("%s has no %s: its latency cannot be merged exactly", d, reports.HlogFileName)
		}
		path := info.History
		if path == "" {
			return nil, fmt.Errorf("%s: generator.json names no history", d)
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(d, path)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", d, err)
		}
		h, err := runner.ReadJSONL(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		runs = append(runs, genRun{run: run, info: info, hist: h})
	}
	first := runs[0].info
	if activity != "" && activity != first.Activity {
		return nil, fmt.Errorf("--activity %s, but %s ran activity %s", activity, dirs[0], first.Activity)
	}
	seen := map[int]string{}
	for i, r := range runs {
		in := r.info
		switch {
		case in.Activity != first.Activity:
			return nil, fmt.Errorf("%s ran activity %s, %s ran %s: verify one activity at a time", dirs[0], first.Activity, dirs[i], in.Activity)
		case in.Spec != first.Spec || in.SKU != first.SKU:
			return nil, fmt.Errorf("%s ran %s, %s ran %s: not one split load", dirs[0], first.Spec, dirs[i], in.Spec)
		}
		if prev, dup := seen[in.Index]; dup {
			return nil, fmt.Errorf("%s and %s are both generator %s", prev, dirs[i], in.Generator)
		}
		seen[in.Index] = dirs[i]
		for _, op := range r.hist.Ops {
			if g := in.gen(); int(op.User)%g.N() != g.Index || int(op.Req)%g.N() != g.Index {
				return nil, fmt.Errorf("%s: op %d (%s, %s) is outside generator %s's users and requests", dirs[i], op.ID, op.UserID(), op.RequestID(), g)
			}
		}
	}
	var missing []string
	for i := 0; i < first.Count; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Count))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("generator %s of activity %s missing: pass every generator's --out (its reservations are in the counters, so the checks need its history)", strings.Join(missing, ", "), first.Activity)
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].info.Index < runs[j].info.Index })
	return runs, nil
}

// checkRegistry makes sure each DIR is the run that claimed its index in
// the activity's registry and that every generator finished.
func checkRegistry(ctx context.Context, st *stand, act *lua.Activity, runs []genRun) error {
	reg, err := st.rdb.HGetAll(ctx, registryKey(act)).Result()
	if err != nil {
		return fmt.Errorf("activity %s: read the generator registry: %w", act.ID, err)
	}
	if len(reg) == 0 {
		return fmt.Errorf("activity %s has no generator registry (not run with --activity, or torn down)", act.ID)
	}
	if reg["spec"] != runs[0].info.Spec {
		return fmt.Errorf("activity %s was set up for %s, the runs say %s", act.ID, reg["spec"], runs[0].info.Spec)
	}
	for _, r := range runs {
		i := strconv.Itoa(r.info.Index)
		switch {
		case reg["gen:"+i] != r.info.Token:
			return fmt.Errorf("%s is not the run that claimed generator %s of activity %s (its token %s, the registry's %q)", r.run.Dir, r.info.Generator, act.ID, r.info.Token, reg["gen:"+i])
		case reg["done:"+i] != r.info.Token:
			return fmt.Errorf("generator %s of activity %s has not finished (still running, or it died before writing its report)", r.info.Generator, act.ID)
		}
	}
	for f := range reg {
		if idx, ok := strings.CutPrefix(f, "gen:"); ok {
			if n, err := strconv.Atoi(idx); err != nil || n >= runs[0].info.Count {
				return fmt.Errorf("activity %s's registry holds an unexpected generator %q", act.ID, f)
			}
		}
	}
	return nil
}

// applyVerification puts the merged checks into the merged report: the
// invariants judged over the union replace the per-generator ones (checks
// only a run has, e.g. P1–P5, stay as merged by MergeRuns), a check a
// generator failed during its run fails the merge too, and stock, unknowns
// and lost acks are the union's.
func applyVerification(rep *reports.Report, chk *runner.CheckReport, runs []*reports.Run) {
	labels := make([]string, len(runs))
	for i, r := range runs {
		labels[i] = filepath.Base(filepath.Clean(r.Dir))
	}
	byID := map[string]int{}
	for i, inv := range rep.Invariants {
		byID[inv.ID] = i
	}
	var out []reports.Invariant
	for _, c := range chk.Checks {
		inv := reports.Invariant{ID: c.ID, Name: c.Name, Status: reports.Status(c.Status), Detail: c.Detail,
			Evidence: maps.Clone(c.Evidence)}
		if inv.Evidence == nil {
			inv.Evidence = map[string]any{}
		}
		per := map[string]any{}
		for k, r := range runs {
			for _, g := range r.Report.Invariants {
				if g.ID != c.ID {
					continue
				}
				per[labels[k]] = map[string]any{"status": g.Status, "detail": g.Detail}
				inv.Waived = inv.Waived || g.Waived
				if g.Status == reports.StatusFail {
					inv.Status = reports.StatusFail
					inv.Detail += fmt.Sprintf("; %s failed it during its run: %s", labels[k], g.Detail)
				}
			}
		}
		inv.Evidence["judged_on"] = "merge"
		inv.Evidence["per_generator"] = per
		out = append(out, inv)
		delete(byID, c.ID)
	}
	for _, inv := range rep.Invariants {
		if _, ok := byID[inv.ID]; ok {
			out = append(out, inv)
		}
	}
	rep.Invariants = out

	var s reports.Stock
	for b, x := range chk.Buckets {
		s.Buckets = append(s.Buckets, reports.BucketStock{Bucket: b, Initial: x.Initial, Available: x.Available, Reserved: x.Reserved, ReleasedTotal: x.ReleasedTotal})
		s.Initial += x.Initial
		s.Available += x.Available
		s.Reserved += x.Reserved
		s.ReleasedTotal += x.ReleasedTotal
	}
	rep.Stock, rep.Load.Stock, rep.Load.Buckets = s, s.Initial, len(chk.Buckets)
	rep.Unknown = reports.Unknown{Total: int64(chk.Unknown.Total), Executed: int64(chk.Unknown.Executed),
		NotExecuted: int64(chk.Unknown.NotExecuted), Unresolved: int64(chk.Unknown.Unresolved)}
	rep.LostAcks = int64(len(chk.LostAcks))
	rep.Passed = len(rep.FailedChecks()) == 0
}
