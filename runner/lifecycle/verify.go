package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"seckill-harness/checks"
	"seckill-harness/history"
	"seckill-harness/internal/boundedread"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/sut"
)

// MaxHistoryBytes is the largest history.jsonl Verify reads from a
// generator's directory (16 GiB: a run at the scenario limit of 50M
// operations writes about 12.5 GB).
const MaxHistoryBytes = 16 * boundedread.GiB

// VerifyOptions describe the merge of a load split over generators.
type VerifyOptions struct {
	Cluster   ClusterSpec
	Activity  string        // the generators' activity ("" = from their generator.json)
	Out       string        // directory of the merged report (required)
	LuaDir    string        // the scripts the generators ran ("" = embedded)
	ClockSkew time.Duration // how far apart the generators' clocks may be
	Teardown  bool          // remove the activity's keys afterwards
	Quiet     bool          // no text summary
	Logger    *slog.Logger  // the cluster's reach and stop (nil: discarded)
}

// genRun is one generator's saved run.
type genRun struct {
	run  *reports.Run
	info *GenInfo
	hist *history.History
}

// Verify is the merge step of a load split over generators: it unions
// every generator's history, reads the activity's final state from the
// cluster, judges the invariants over the union and writes one report.
// The returned report's Passed is the verdict; an error is a harness error.
func Verify(ctx context.Context, stdout, stderr io.Writer, dirs []string, o VerifyOptions) (*reports.Report, error) {
	if o.Out == "" {
		return nil, errors.New("--out is required: the merged report is written there")
	}
	if !o.Cluster.Shared() {
		return nil, fmt.Errorf("--cluster %q: verify reads the generators' activity from the cluster they ran against: --cluster redis://host:port[,…] (rediss:// for TLS)", o.Cluster.Spec)
	}
	runs, err := loadGenRuns(dirs, o.Activity)
	if err != nil {
		return nil, err
	}
	first := runs[0].info
	scripts, err := LoadScripts(o.LuaDir)
	if err != nil {
		return nil, err
	}
	st, err := OpenStand(ctx, o.Logger, o.Cluster, 8, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	act, err := ReadActivity(cctx, st.Client, first.Activity, first.SKU, first.Buckets, first.Stock)
	if err != nil {
		return nil, err
	}
	if err := checkRegistry(cctx, st, act, runs); err != nil {
		return nil, err
	}

	merged, faulted := mergeHistories(runs)
	skew := o.ClockSkew
	if len(runs) == 1 {
		skew = 0
	}
	store := lua.NewStore(st.Client, scripts, SecretFor(first.Seed))
	chk, err := checks.Judge(cctx, sut.Sale{Activity: act, IDs: store}, sut.NewReference(store),
		checks.CheckInput{History: merged, FaultsInjected: faulted, ClockSkew: skew,
			ExpiryAllowances: mergedExpiryAllowances(runs)})
	if err != nil {
		return nil, fmt.Errorf("reading the final state back: %w", err)
	}

	rep, hists, err := mergedReport(stderr, runs, chk, merged)
	if err != nil {
		return nil, err
	}
	in := &reports.Inputs{Report: rep, Hists: hists, History: merged.WriteJSONL}
	if chk.Drawing != nil {
		windows := linWindows(rep.Faults, time.Duration(rep.DurationS*float64(time.Second)))
		in.Linearizability = func(w io.Writer) error { return chk.Drawing.Render(w, windows) }
	}
	if err := reports.WriteArtifacts(o.Out, in); err != nil {
		return nil, err
	}
	if !o.Quiet {
		if err := reports.WriteText(stdout, rep); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(stdout, "verified %d ops of %d generators against activity %s\nreport: %s\n",
		len(merged.Ops), len(runs), act.ID, filepath.Join(o.Out, reports.ReportFile))
	if o.Teardown {
		if err := teardownVerified(cctx, stdout, st, sut.NewReference(store), act); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// mergeHistories is the generators' histories as one: op ids re-numbered
// in order, times on the earliest run's clock; faulted when any generator
// injected a fault.
func mergeHistories(runs []genRun) (merged *history.History, faulted bool) {
	merged = &history.History{}
	var base time.Time
	for _, r := range runs {
		if s := r.run.Report.StartedAt; base.IsZero() || s.Before(base) {
			base = s
		}
	}
	for _, r := range runs {
		shift := r.run.Report.StartedAt.Sub(base)
		faulted = faulted || len(r.run.Report.Faults) > 0
		for _, op := range r.hist.Ops {
			op.ID = uint32(len(merged.Ops))
			op.Intended += shift
			if op.Outcome != history.OutcomeDropped {
				op.Start += shift
				op.End += shift
			}
			merged.Ops = append(merged.Ops, op)
		}
	}
	return merged, faulted
}

// mergedReport is the generators' reports merged into one (merge notes
// to stderr) with the verification over the union applied, and WAIT's
// confirmations and losses over the union when the generators ran with it.
func mergedReport(stderr io.Writer, runs []genRun, chk *checks.CheckReport, merged *history.History) (*reports.Report, *reports.Histograms, error) {
	loaded := make([]*reports.Run, len(runs))
	for i, r := range runs {
		loaded[i] = r.run
	}
	rep, hists, notes, err := reports.MergeRuns(loaded)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "merge:", n)
	}
	applyVerification(rep, chk, loaded)
	for _, r := range loaded {
		if w := r.Report.Wait; w != nil {
			policy := sut.WaitPolicy{Replicas: w.Replicas, Timeout: time.Duration(w.TimeoutMs * float64(time.Millisecond))}
			rep.Wait = checks.WaitSummaryOf(merged, chk.LostAcks, policy)
			break
		}
	}
	return rep, hists, nil
}

// teardownVerified removes the verified activity's keys and its registry.
func teardownVerified(ctx context.Context, stdout io.Writer, st *Stand, sys sut.Provisioner, act *lua.Activity) error {
	n, err := sys.Teardown(ctx, act)
	if err == nil {
		err = st.Client.Del(ctx, RegistryKey(act)).Err()
	}
	if err != nil {
		return fmt.Errorf("teardown of activity %s: %w (its keys expire at %s anyway)", act.ID, err,
			time.UnixMilli(act.RetentionUntilMs).UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(stdout, "teardown: removed the %d keys of activity %s\n", n+1, act.ID)
	return nil
}

// loadGenRuns reads every DIR's report, histograms, generator.json and
// history, and checks they are generators 0..N-1 of one split load.
func loadGenRuns(dirs []string, activity string) ([]genRun, error) {
	var runs []genRun
	for _, d := range dirs {
		info, err := ReadGenInfo(d)
		if err != nil {
			return nil, err
		}
		path, err := info.HistoryPath(d)
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
		f, err := boundedread.Open(path, MaxHistoryBytes, "history of "+d, "give the directories the generators wrote (their history.jsonl)")
		if err != nil {
			return nil, err
		}
		h, err := history.ReadJSONL(f)
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
			if g := in.Gen(); int(op.User)%g.N() != g.Index || int(op.Req)%g.N() != g.Index {
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
func checkRegistry(ctx context.Context, st *Stand, act *lua.Activity, runs []genRun) error {
	reg, err := st.Client.HGetAll(ctx, RegistryKey(act)).Result()
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
// only a run has, e.g. the pipeline's, stay as merged by MergeRuns), a check a
// generator failed during its run fails the merge too, and stock, unknowns
// and lost acks are the union's.
func applyVerification(rep *reports.Report, chk *checks.CheckReport, runs []*reports.Run) {
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
			Evidence: maps.Clone(c.Evidence), ConsequenceOf: c.ConsequenceOf}
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
				// The scenario's waiver, not a generator's waived consequence:
				// the merge judges consequences itself (waiveConsequences).
				inv.Waived = inv.Waived || (g.Waived && g.ConsequenceOf == "")
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
	rep.Invariants = waiveConsequences(out)

	s := chk.Stock()
	rep.Stock, rep.Load.Stock, rep.Load.Buckets = s, s.Initial, len(chk.Buckets)
	rep.Unknown = reports.Unknown{Total: int64(chk.Unknown.Total), Executed: int64(chk.Unknown.Executed),
		NotExecuted: int64(chk.Unknown.NotExecuted), Unresolved: int64(chk.Unknown.Unresolved)}
	rep.LostAcks, rep.LostAcksNotJudged = int64(len(chk.LostAcks)), chk.LostAcksNotJudged
	rejudgeExpectations(rep, runs)
	rep.Passed = len(rep.FailedChecks()) == 0
}

// rejudgeExpectations carries the generators' expected failures (a
// scenario's expect_fail: every generator ran the same one) through the
// merge: each expected invariant is judged again on the union, with the
// largest minimum any generator expected, and its "fails as expected"
// assertion replaces the generators' own (a generator's share may hold
// none of the loss the union reproduced, or all of it).
func rejudgeExpectations(rep *reports.Report, runs []*reports.Run) {
	expect := map[string]int64{}
	for _, r := range runs {
		for _, inv := range r.Report.Invariants {
			if inv.Expected != nil {
				expect[strings.ToUpper(inv.ID)] = max(expect[strings.ToUpper(inv.ID)], inv.Expected.Min)
			}
		}
	}
	if len(expect) == 0 {
		return
	}
	kept := rep.Assertions[:0]
	for _, a := range rep.Assertions {
		if !expectAssertionOf(a.Name, expect) {
			kept = append(kept, a)
		}
	}
	rep.Assertions = append(kept, expectFailures(rep, expect)...)
}

// expectAssertionOf reports whether name is a generator's "<ID> <name>
// fails as expected (…)" assertion (maybe prefixed "[label] " by the
// merge) of an id in expect.
func expectAssertionOf(name string, expect map[string]int64) bool {
	if strings.HasPrefix(name, "[") {
		if _, rest, ok := strings.Cut(name, "] "); ok {
			name = rest
		}
	}
	id, _, _ := strings.Cut(name, " ")
	_, ok := expect[strings.ToUpper(id)]
	return ok && strings.Contains(name, " fails as expected")
}

// mergedExpiryAllowances is the K1 allowance per bucket that the runs'
// reports granted (keyspace.expiry_allowances): the faults of each run
// measured how far they moved its keys' expiries, so the merged verdict
// allows the sum per bucket (a key moved by two runs' faults drifted twice).
func mergedExpiryAllowances(runs []genRun) []reports.ExpiryAllowance {
	var out []reports.ExpiryAllowance
	at := map[int]int{}
	for _, r := range runs {
		ks := r.run.Report.KeySpace
		if ks == nil {
			continue
		}
		for _, al := range ks.ExpiryAllowances {
			i, ok := at[al.Bucket]
			if !ok {
				at[al.Bucket] = len(out)
				out = append(out, al)
				continue
			}
			out[i].AllowanceMs += al.AllowanceMs
			out[i].Reason += "; " + al.Reason
		}
	}
	return out
}
