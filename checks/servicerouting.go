package checks

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ServiceRoutingFacts are the connections of the service the run started
// as a child, read twice a second from the moment it was ready until the
// checks (runner/lifecycle's sampler): how many went through a node's
// proxy, which went straight to a node's own address. R1 judges them.
type ServiceRoutingFacts struct {
	Rounds int `json:"rounds"` // rounds in which the service's connections were read
	// ThroughMax is the most connections through the proxies in one round.
	ThroughMax int `json:"through_proxies_max"`
	// RoundsThrough counts the rounds with a connection through the proxies.
	RoundsThrough int `json:"rounds_through_proxies"`
	// FaultRounds counts the rounds taken while a fault acting on the
	// proxies was active, FaultRoundsThrough those with a connection
	// through them.
	FaultRounds        int `json:"rounds_during_proxy_faults"`
	FaultRoundsThrough int `json:"rounds_through_proxies_during_proxy_faults"`
	// Direct are the node addresses the service connected to directly,
	// each with the first round that saw it.
	Direct []DirectConn `json:"direct,omitempty"`
}

// DirectConn is a node the service reached without its proxy.
type DirectConn struct {
	Node string  `json:"node"`
	AtS  float64 `json:"at_s"` // since the service was ready
	// DuringFaults are the kinds of the faults on the proxies active in
	// any round that saw it.
	DuringFaults []string `json:"during_faults,omitempty"`
}

// Add records one round: through connections went through the proxies,
// direct are the node addresses reached without them, proxyFaults the
// kinds of the faults on the proxies active then.
func (f *ServiceRoutingFacts) Add(atS float64, through int, direct, proxyFaults []string) {
	f.Rounds++
	f.ThroughMax = max(f.ThroughMax, through)
	if through > 0 {
		f.RoundsThrough++
	}
	if len(proxyFaults) > 0 {
		f.FaultRounds++
		if through > 0 {
			f.FaultRoundsThrough++
		}
	}
	for _, n := range direct {
		i := slices.IndexFunc(f.Direct, func(d DirectConn) bool { return d.Node == n })
		if i < 0 {
			f.Direct = append(f.Direct, DirectConn{Node: n, AtS: atS})
			i = len(f.Direct) - 1
		}
		for _, k := range proxyFaults {
			if !slices.Contains(f.Direct[i].DuringFaults, k) {
				f.Direct[i].DuringFaults = append(f.Direct[i].DuringFaults, k)
			}
		}
	}
}

// judgeR1: every Redis connection of the service went through the
// proxies, and there were some.
func judgeR1(f *Facts) Verdict {
	s := f.Service
	if s == nil {
		return Verdict{Detail: "no service child"}
	}
	ev := map[string]any{"rounds": s.Rounds, "through_proxies_max": s.ThroughMax, "rounds_through_proxies": s.RoundsThrough,
		"rounds_during_proxy_faults": s.FaultRounds, "rounds_through_proxies_during_proxy_faults": s.FaultRoundsThrough}
	if len(s.Direct) > 0 {
		var nodes, during []string
		for _, d := range s.Direct {
			nodes = append(nodes, fmt.Sprintf("%s (from %.1fs)", d.Node, d.AtS))
			during = append(during, d.DuringFaults...)
		}
		sort.Strings(during)
		ev["direct"] = s.Direct
		why := "no fault on the proxies was active when it was seen, but any would have missed it"
		if len(during) > 0 {
			why = "while " + strings.Join(slices.Compact(during), ", ") + " acted on the proxies: those faults did not touch that traffic"
		}
		return Verdict{Failed: true, Evidence: ev,
			Detail: fmt.Sprintf("the service connected to %d node(s) at their own address, bypassing the proxies: %s; %s. Give its Redis client only $SECKILL_REDIS_ADDRS (the cluster then tells it the proxied addresses)",
				len(s.Direct), strings.Join(nodes, ", "), why)}
	}
	if s.Rounds > 0 && s.RoundsThrough == 0 {
		return Verdict{Failed: true, Evidence: ev,
			Detail: fmt.Sprintf("in %d rounds the service held no connection through the proxies (nor to a node of this cluster): its Redis traffic went elsewhere, and no fault of the run touched it. Give its Redis client $SECKILL_REDIS_ADDRS", s.Rounds)}
	}
	return Verdict{Evidence: ev,
		Detail: fmt.Sprintf("every Redis connection of the service went through the proxies: %d of %d rounds saw them (up to %d at once), %d of them while a fault acted on the proxies",
			s.RoundsThrough, s.Rounds, s.ThroughMax, s.FaultRoundsThrough)}
}

// appliesR1: judged only for a service the run started as a child.
func appliesR1(f *Facts, _ Verdict) string {
	if f.Service == nil {
		return "the run started no service child (--service-cmd): whose connections to attribute is not known"
	}
	return ""
}

// vacuousR1: a service whose connections were never read.
func vacuousR1(f *Facts, _ Verdict) string {
	if f.Service != nil && f.Service.Rounds == 0 {
		return "the service's connections were never read (it was down or had just started)"
	}
	return ""
}
