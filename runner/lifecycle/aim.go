package lifecycle

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"seckill-harness/faults"
	"seckill-harness/reports"
)

// aimFaults states, for each planned fault that names the Redis masters it
// acted on (faults.Aimed), how its target was chosen and the share of the
// system under test's Redis traffic those masters served in the
// faults.ObserveWindow before its injection (the servers sampler's
// per-master command counts, the harness's own upkeep left out), in
// report.json's faults[].aim and its evidence (target_chosen_by,
// sut_traffic_share). A fault aimed by the sale (hot-master, hot-replica,
// slot-migration's slots=hot|all) whose masters served none of that
// traffic while some was seen is marked missed (FaultAim.Missed), which
// judgeMissed turns into the run's inconclusive verdict. rep.Aim says how
// the run's hot-* targets are chosen. began is the load's start.
func (x *execution) aimFaults(rep *reports.Report, began time.Time) {
	if x.fault.tl == nil || x.fault.tl.Env == nil {
		return
	}
	env := x.fault.tl.Env
	chosen := env.ChosenBy()
	if len(x.plan.Faults) > 0 {
		rep.Aim = &reports.Aim{ChosenBy: chosen, Slots: env.HotSlots}
	}
	for i, p := range x.plan.Faults {
		am, ok := p.Fault.(faults.Aimed)
		w := p.Window()
		if !ok || i >= len(rep.Faults) || !w.Injected {
			continue
		}
		masters, bySale := am.AimedAt()
		fa := &reports.FaultAim{ChosenBy: chosen, Masters: masters, WindowS: faults.ObserveWindow.Seconds()}
		if !bySale {
			fa.ChosenBy = "the scenario"
		}
		at := began.Add(w.InjectedAt)
		from := at.Add(-faults.ObserveWindow)
		if from.Before(began) {
			from = began
		}
		fa.WindowS = math.Round(at.Sub(from).Seconds()*1000) / 1000
		fa.ByMaster = x.obs.servers.Served(from, at)
		for a, n := range fa.ByMaster {
			fa.Commands += n
			for _, m := range masters {
				if m == a {
					fa.TargetCommands += n
				}
			}
		}
		ev := rep.Faults[i].Evidence
		ev["target_chosen_by"] = fa.ChosenBy
		if fa.Commands > 0 {
			share := math.Round(float64(fa.TargetCommands)/float64(fa.Commands)*1e4) / 1e4
			fa.Share = &share
			ev["sut_traffic_share"] = share
		} else {
			ev["sut_traffic_note"] = "share unknown: no Redis traffic of the system under test seen before the injection"
		}
		if bySale && fa.Commands > 0 && fa.TargetCommands == 0 && len(masters) > 0 {
			fa.Missed = fmt.Sprintf("the fault missed the system under test: its sale is on %s, the fault acted on %s (%s%s, chosen by %s), which served none of it",
				saleText(fa.ByMaster, fa.Commands, fa.WindowS), strings.Join(masters, ","), rep.Faults[i].Kind, slotText(env.HotSlots), chosen)
			x.out.logger().Warn(fmt.Sprintf("fault %s: %s (%s)", rep.Faults[i].Kind, fa.Missed, MissedRule))
			ev["missed"] = fa.Missed
		}
		rep.Faults[i].Aim = fa
	}
}

// saleText names where the system's traffic went: the masters that
// served it, busiest first, with their shares.
func saleText(by map[string]int64, total int64, windowS float64) string {
	var addrs []string
	for a, n := range by {
		if n > 0 {
			addrs = append(addrs, a)
		}
	}
	sort.Slice(addrs, func(i, j int) bool {
		return by[addrs[i]] > by[addrs[j]] || by[addrs[i]] == by[addrs[j]] && addrs[i] < addrs[j]
	})
	var parts []string
	for _, a := range addrs {
		parts = append(parts, fmt.Sprintf("%s (%.1f%%", a, 100*float64(by[a])/float64(total)))
	}
	return fmt.Sprintf("%s of the system's %d Redis commands in the %.1fs before)", strings.Join(parts, "%, "), total, windowS)
}

// slotText is ", slot <n>" for the sale's hot slot ("" when observed).
func slotText(slots []int) string {
	if len(slots) == 0 {
		return ""
	}
	return fmt.Sprintf(" at slot %d's master", slots[0])
}
