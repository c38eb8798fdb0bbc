package lifecycle

import (
	"fmt"
	"slices"
	"strings"

	"seckill-harness/checks"
	"seckill-harness/faults"
	"seckill-harness/history"
	"seckill-harness/reports"
	"seckill-harness/samplers/servers"
)

// eventLeadS is how long before an event a check's violation may still be
// its doing: a write acknowledged before a failover is lost at it, and the
// cluster takes its node timeout to fail a silent master over.
const eventLeadS = 15.0

// events detects the cluster's events from the servers section (and the
// host's stalls), attributes each to the planned fault that declares it
// (faults.Expecting), marks the unplanned ones the scenario tolerates, and
// names on every failing check the planned faults and unplanned events
// overlapping its violations. Events do not change a check's status.
func (x *execution) events(rep *reports.Report) {
	var evs []reports.Event
	interval := 1.0
	if rep.Servers != nil {
		interval = rep.Servers.IntervalS
		evs = servers.DetectEvents(rep.Servers.Nodes, interval)
	}
	evs = append(evs, hostStallEvents(rep)...)
	slices.SortStableFunc(evs, func(a, b reports.Event) int {
		switch {
		case a.TimeS < b.TimeS:
			return -1
		case a.TimeS > b.TimeS:
			return 1
		}
		return 0
	})
	rep.UnplannedEvents, rep.AttributedEvents = servers.Attribute(evs, faultCauses(x.plan.Faults, x.plan.FaultNames), interval)
	for i := range rep.UnplannedEvents {
		rep.UnplannedEvents[i].Tolerated = slices.Contains(x.plan.Judging.TolerateEvents, rep.UnplannedEvents[i].What)
	}
	var h *history.History
	if x.load.res != nil {
		h = x.load.res.History
	}
	annotateChecks(rep, h)
}

// stallEpisodeGapS joins stalls less than this far apart into one
// episode; stallEpisodeMinMs is the stall time an episode needs to be an
// event: the tightest latency SLO of the built-ins (p99 50 ms) can be
// broken by one such delay alone, so a shorter episode is left to the
// host section.
const (
	stallEpisodeGapS  = 1.0
	stallEpisodeMinMs = 50.0
)

// hostStallEvents turns the host view's harness stalls into unplanned
// events of kind reports.EventHarnessStall (node "harness"): stalls less
// than stallEpisodeGapS apart are one episode, reported when they add up to
// stallEpisodeMinMs or more, with their count, total and the worst second's
// host figures as evidence.
func hostStallEvents(rep *reports.Report) []reports.Event {
	if rep.Host == nil {
		return nil
	}
	var out []reports.Event
	var ep []reports.Stall
	flush := func() {
		if len(ep) == 0 {
			return
		}
		total, worst := 0.0, ep[0]
		for _, st := range ep {
			total += st.DurationMs
			if st.DurationMs > worst.DurationMs {
				worst = st
			}
		}
		last := ep[len(ep)-1]
		if total >= stallEpisodeMinMs {
			out = append(out, reports.Event{TimeS: ep[0].AtS, DurationS: last.AtS + last.DurationMs/1000 - ep[0].AtS,
				Node: "harness", What: reports.EventHarnessStall,
				Evidence: fmt.Sprintf("%d stalls, %.0f ms in all (longest %.0f ms); load1 %.1f, procs_running %d, %d late starts",
					len(ep), total, worst.DurationMs, worst.Evidence.Load1, worst.Evidence.ProcsRunning, worst.Evidence.LateStarts)})
		}
		ep = ep[:0]
	}
	for _, st := range rep.Host.Stalls {
		if len(ep) > 0 {
			if last := ep[len(ep)-1]; st.AtS-(last.AtS+last.DurationMs/1000) >= stallEpisodeGapS {
				flush()
			}
		}
		ep = append(ep, st)
	}
	flush()
	return out
}

// faultCauses turns the timeline into attribution's causes: each fault's
// name, window (injection to the end of its effect; open when it never
// ended) and declared events. A fault never injected causes nothing.
func faultCauses(planned []*faults.Planned, names []string) []servers.Cause {
	var out []servers.Cause
	for i, p := range planned {
		w := p.Window()
		if !w.Injected {
			continue
		}
		c := servers.Cause{Name: p.Spec, FromS: w.InjectedAt.Seconds(), ToS: servers.Open, Expected: p.ExpectedEvents()}
		if i < len(names) && names[i] != "" {
			c.Name = names[i]
		}
		if c.Name == "" {
			c.Name = p.Kind
		}
		if end, ok := p.EffectEnd(); ok {
			c.ToS = end.Seconds()
		}
		out = append(out, c)
	}
	return out
}

// annotateChecks sets Events on every failing invariant and assertion and
// appends a sentence naming them to its detail. A check's violations span
// what its evidence dates (checks.ViolationSpan); without a date, the
// whole load.
func annotateChecks(rep *reports.Report, h *history.History) {
	for i := range rep.Invariants {
		inv := &rep.Invariants[i]
		if inv.Status != reports.StatusFail {
			continue
		}
		from, to, ok := checks.ViolationSpan(h, inv.Evidence)
		if !ok {
			from, to = 0, rep.DurationS
		}
		inv.Events = overlapping(rep, from, to)
		inv.Detail += eventsSentence(inv.Events)
	}
	for i := range rep.Assertions {
		a := &rep.Assertions[i]
		if a.Status != reports.StatusFail && a.Status != reports.StatusInconclusive {
			continue
		}
		from, to := assertionSpan(rep, a)
		a.Events = overlapping(rep, from, to)
		a.Detail = strings.TrimPrefix(a.Detail+eventsSentence(a.Events), "; ")
	}
}

// assertionSpan is the span an assertion judged: its report phase's
// (a per-phase SLO judges only that phase), else the whole load.
func assertionSpan(rep *reports.Report, a *reports.Assertion) (from, to float64) {
	for _, ph := range rep.Phases {
		if a.Phase != "" && ph.Name == a.Phase {
			return ph.StartS, ph.EndS
		}
	}
	return 0, rep.DurationS
}

// overlapping lists the planned fault windows and unplanned events that
// overlap the span [from, to] of a check's violations (an event from
// eventLeadS after the span's start — earlier violations cannot be its
// doing — to servers.SettleS after its end).
func overlapping(rep *reports.Report, from, to float64) []reports.CheckEvent {
	near := func(a, b float64) bool { return a <= to+eventLeadS && b+servers.SettleS >= from }
	var out []reports.CheckEvent
	for _, f := range rep.Faults {
		end := f.HealedAtS
		if !f.Healed || end < f.InjectedAtS {
			end = max(rep.DurationS, f.InjectedAtS)
		}
		if !near(f.InjectedAtS, end) {
			continue
		}
		out = append(out, reports.CheckEvent{Planned: true, TimeS: f.InjectedAtS, EndS: end, What: f.Kind, Node: f.Target,
			Text: fmt.Sprintf("planned %s %.1f–%.1f s", orDash(f.Name, f.Kind), f.InjectedAtS, end)})
	}
	evs := slices.Clone(rep.UnplannedEvents)
	reports.RankEvents(evs)
	for _, e := range evs {
		if near(e.TimeS, e.End()) {
			out = append(out, reports.CheckEvent{TimeS: e.TimeS, EndS: e.End(), What: e.What, Node: e.Node,
				Text: "unplanned " + e.Phrase()})
		}
	}
	return out
}

// eventsSentence is "; unplanned automatic-failover of … at 12.3 s;
// planned failover:… 10.0–15.0 s", unplanned first, at most three of
// each ("" for none).
func eventsSentence(evs []reports.CheckEvent) string {
	var un, pl []string
	for _, e := range evs {
		if e.Planned {
			pl = append(pl, e.Text)
		} else {
			un = append(un, e.Text)
		}
	}
	s := ""
	for _, l := range [][]string{un, pl} {
		if len(l) == 0 {
			continue
		}
		s += "; " + strings.Join(l[:min(len(l), 3)], ", ")
		if len(l) > 3 {
			s += fmt.Sprintf(" (+%d more)", len(l)-3)
		}
	}
	return s
}

func orDash(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
