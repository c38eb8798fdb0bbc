package host

import (
	"sort"
	"time"

	"seckill-harness/reports"
)

// stallsOf turns the probe's late wake-ups into the report's stalls:
// offsets from began, inside the load [0, elapsed), overlapping ones
// merged, in time order. late is sorted by Intended.
func stallsOf(raw []stall, began time.Time, elapsed time.Duration, late []LateStart) []reports.Stall {
	type span struct {
		from, to time.Duration
		late     time.Duration
	}
	var spans []span
	for _, r := range raw {
		from := r.start.Sub(began)
		to := from + r.late
		if to <= 0 || from >= elapsed {
			continue
		}
		spans = append(spans, span{max(from, 0), min(to, elapsed), r.late})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	var merged []span
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, sp.to)
			merged[n-1].late = max(merged[n-1].late, sp.late)
			continue
		}
		merged = append(merged, sp)
	}
	out := make([]reports.Stall, 0, len(merged))
	for _, sp := range merged {
		st := reports.Stall{AtS: round(sp.from.Seconds(), 3), DurationMs: round(ms(sp.to-sp.from), 3)}
		st.Evidence.ProbeLateMs = round(ms(sp.late), 3)
		i := sort.Search(len(late), func(i int) bool { return late[i].Intended >= sp.from })
		for ; i < len(late) && late[i].Intended < sp.to; i++ {
			st.Evidence.LateStarts++
			st.Evidence.MaxLateMs = max(st.Evidence.MaxLateMs, round(ms(late[i].Late), 3))
		}
		out = append(out, st)
	}
	return out
}

// fillLateness adds the pacer's late starts and the stall time to the
// seconds they fall in.
func fillLateness(h *reports.Host, late []LateStart) {
	at := func(t time.Duration) *reports.HostSecond {
		i := int(t / time.Second)
		if t < 0 || i >= len(h.Seconds) {
			return nil
		}
		return &h.Seconds[i]
	}
	for _, l := range late {
		if sec := at(l.Intended); sec != nil {
			sec.LateStarts++
			sec.MaxLateMs = max(sec.MaxLateMs, round(ms(l.Late), 3))
		}
	}
	for _, st := range h.Stalls {
		from := time.Duration(st.AtS * float64(time.Second))
		to := from + time.Duration(st.DurationMs*float64(time.Millisecond))
		for t := from; t < to; {
			next := min(to, (t/time.Second+1)*time.Second)
			if sec := at(t); sec != nil {
				sec.StallMs = round(sec.StallMs+ms(next-t), 3)
			}
			t = next
		}
	}
}

// fillStallEvidence copies the host figures of the second a stall began in.
func fillStallEvidence(h *reports.Host, st *reports.Stall) {
	i := int(st.AtS)
	if i < 0 || i >= len(h.Seconds) {
		return
	}
	sec := h.Seconds[i]
	st.Evidence.Load1, st.Evidence.ProcsRunning, st.Evidence.StealShare, st.Evidence.STWMs = sec.Load1, sec.ProcsRunning, sec.StealShare, sec.STWMs
}
