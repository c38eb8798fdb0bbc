package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// ParseFaults parses --fault specs and checks each fits in a load of the
// given duration.
func ParseFaults(specs []string, duration time.Duration) ([]*faults.Planned, error) {
	var out []*faults.Planned
	for _, s := range specs {
		p, err := faults.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("--fault: %w", err)
		}
		if p.At >= duration {
			return nil, fmt.Errorf("--fault %q: at=%s is not before the end of the load (--duration %s)", s, p.At, duration)
		}
		if p.For > 0 && p.At+p.For > duration {
			return nil, fmt.Errorf("--fault %q: at+for = %s runs past the end of the load (--duration %s)", s, p.At+p.For, duration)
		}
		out = append(out, p)
	}
	return out, nil
}

// newTimeline builds the fault environment of a stand and activity. The
// hot-* targets aim where the system under test keeps its sale: the slots
// it names (sut.SaleKeys: an adapter's or a service mapping's hash_tag),
// the reference contract's keys for a system without the ability, and for
// one that cannot tell none (the timeline's Env.Traffic, set when the
// servers sampler starts, observes it at each injection).
func newTimeline(ctx context.Context, log *slog.Logger, st *Stand, a *lua.Activity, sys sut.System, planned []*faults.Planned) (*faults.Timeline, error) {
	env := &faults.Env{Cluster: st.Cluster, Proxies: st.Proxies, Client: st.Client, Log: log}
	if sk, ok := sut.Ability[sut.SaleKeys](sys); ok {
		env.HotSlots, env.AimedBy = sk.SaleSlots(a)
		return &faults.Timeline{Env: env, Items: planned}, nil
	}
	for b := uint32(0); b < a.Buckets; b++ {
		s, err := st.Client.ClusterKeySlot(ctx, a.Scope(b).StockKey()).Result()
		if err != nil {
			return nil, fmt.Errorf("hot slots: %w", err)
		}
		env.HotSlots = append(env.HotSlots, int(s))
	}
	env.AimedBy = faults.AimReference
	return &faults.Timeline{Env: env, Items: planned}, nil
}

// expiryAllowances turns the faults' measured expiry drifts (faults.
// ExpiryDrifter: a slot migration) into K1's allowances per bucket of the
// activity (bucket b lives in tl.Env.HotSlots[b]); drifts of one slot add
// up. nil without a timeline or a drift.
func expiryAllowances(tl *faults.Timeline) []reports.ExpiryAllowance {
	if tl == nil || tl.Env == nil {
		return nil
	}
	var out []reports.ExpiryAllowance
	for b, slot := range tl.Env.HotSlots {
		al := reports.ExpiryAllowance{Bucket: b, Slot: slot}
		var why []string
		for _, d := range tl.ExpiryDrifts() {
			if d.Slot == slot {
				al.AllowanceMs += d.Drift.Milliseconds()
				why = append(why, d.Reason)
			}
		}
		if len(why) > 0 {
			al.Reason = strings.Join(why, "; ")
			out = append(out, al)
		}
	}
	return out
}

// settle waits for the cluster to be healthy again after faults (every slot
// covered, cluster_state:ok everywhere) and reloads the client's slot map.
func settle(ctx context.Context, log *slog.Logger, st *Stand, faulted bool) error {
	if !faulted {
		return nil
	}
	t0 := time.Now()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := st.Cluster.WaitHealthy(wctx)
	if err == nil {
		log.Info(fmt.Sprintf("cluster healthy again %.2fs after the load", time.Since(t0).Seconds()))
	} else {
		log.Warn(fmt.Sprintf("cluster NOT healthy after the load: %v", err))
	}
	st.Client.ReloadState(ctx)
	return err
}

func healthAssertions(healErr, healthErr error, faulted bool) []reports.Assertion {
	if !faulted {
		return nil
	}
	a := []reports.Assertion{{Name: "every fault healed", Status: reports.StatusPass, Observed: 1}}
	if healErr != nil {
		a[0].Status, a[0].Observed, a[0].Detail = reports.StatusFail, 0, healErr.Error()
	}
	h := reports.Assertion{Name: "cluster_state:ok with every slot covered before the final checks", Status: reports.StatusPass, Observed: 1}
	if healthErr != nil {
		h.Status, h.Observed, h.Detail = reports.StatusFail, 0, healthErr.Error()
	}
	return append(a, h)
}

// faultReports turns the timeline into report.json's faults[] (the fault's
// own evidence plus what the history shows about its window) and phases.
// names gives each fault's report phase name ("during <name>"); nil or empty
// entries fall back to the kind (numbered when a kind repeats).
func faultReports(planned []*faults.Planned, names []string, res *runner.Result, chk *checks.CheckReport, a *lua.Activity) ([]reports.Fault, []reports.PhaseSpan) {
	if len(planned) == 0 {
		return nil, nil
	}
	lost := map[string]bool{}
	if chk != nil {
		for _, id := range chk.LostAcks {
			lost[id] = true
		}
	}
	var out []reports.Fault
	var windows []runner.FaultWindow
	named := map[int]bool{}
	for i, p := range planned {
		w := p.Window()
		end, ended := p.EffectEnd()
		fw := runner.FaultWindow{Name: p.Kind, InjectedAt: w.InjectedAt, HealedAt: end, Healed: ended}
		if i < len(names) && names[i] != "" {
			fw.Name = names[i]
		}
		params := map[string]any{}
		for k, v := range p.Params {
			params[k] = v
		}
		f := reports.Fault{Kind: p.Kind, Name: p.Spec, Target: p.Fault.Target(), Params: params,
			InjectedAtS: w.InjectedAt.Seconds(), Healed: w.Healed, Evidence: map[string]any{}}
		if w.Healed {
			f.HealedAtS = w.HealedAt.Seconds()
		}
		if w.HealErr != nil {
			f.HealError = w.HealErr.Error()
		}
		if w.InjectDone > 0 {
			f.Evidence["inject_returned_at_s"] = w.InjectDone.Seconds()
		}
		for k, v := range p.Fault.Evidence() {
			f.Evidence[k] = v
		}
		if !w.Injected {
			f.Evidence["note"] = "never injected: the load ended (or was interrupted) before its time"
		} else {
			if w.InjectErr != nil {
				f.Evidence["inject_error"] = w.InjectErr.Error()
			}
			for k, v := range runner.WindowEvidence(res.History, fw, res.Elapsed, 5*time.Second, 0, lost) {
				f.Evidence["history."+k] = v
			}
			if i < len(names) && names[i] != "" {
				named[len(windows)] = true
			}
			windows = append(windows, fw)
		}
		out = append(out, f)
	}
	for i := range windows {
		if !named[i] {
			windows[i].Name = uniqueName(windows, i)
		}
	}
	sort.SliceStable(windows, func(i, j int) bool { return windows[i].InjectedAt < windows[j].InjectedAt })
	return out, runner.FaultPhases(windows, res.Elapsed)
}

func uniqueName(ws []runner.FaultWindow, i int) string {
	n := 0
	for j := 0; j < i; j++ {
		if strings.HasPrefix(ws[j].Name, ws[i].Name) {
			n++
		}
	}
	if n == 0 {
		return ws[i].Name
	}
	return fmt.Sprintf("%s#%d", ws[i].Name, n+1)
}

// masterless are the windows in which a planned fault left slots without
// a master (faults.Masterless: from the return of Inject to the start of
// its heal, or the end of the load), by bucket of activity a: the facts
// of the service check fail_closed. The window ends when the heal begins,
// not when it returns: slot-down's heal restarts the nodes and then waits
// for the whole cluster, and an ACCEPTED from the restarted master in
// that wait is no fail-open.
func masterless(planned []*faults.Planned, names []string, a *lua.Activity, loadEnd time.Duration) []checks.MasterlessWindow {
	var out []checks.MasterlessWindow
	for i, p := range planned {
		m, ok := p.Fault.(faults.Masterless)
		w := p.Window()
		if !ok || !w.Injected || w.InjectErr != nil || w.InjectDone == 0 {
			continue
		}
		mw := checks.MasterlessWindow{Fault: p.Kind, From: w.InjectDone, To: loadEnd}
		if i < len(names) && names[i] != "" {
			mw.Fault = names[i]
		}
		if w.HealStarted > 0 && w.HealStarted < mw.To {
			mw.To = w.HealStarted
		}
		for b := uint32(0); b < a.Buckets; b++ {
			slot := compose.KeySlot(a.Scope(b).ReqShardKeyN(0))
			for _, r := range m.MasterlessSlots() {
				if slot >= r[0] && slot <= r[1] {
					mw.Buckets = append(mw.Buckets, b)
					break
				}
			}
		}
		if len(mw.Buckets) > 0 && mw.To > mw.From {
			out = append(out, mw)
		}
	}
	return out
}
