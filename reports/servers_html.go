package reports

// The servers section of report.html: CPU per node, replication lag per
// replica and memory per node, on the load's time axis under the fault
// windows, and the scripts' server-side cost.

// serversChart is what assets/report.js draws for the servers section.
type serversChart struct {
	CPU    []nodeLine `json:"cpu"`    // percent of one core, per node
	Lag    []nodeLine `json:"lag"`    // bytes behind the master, per replica
	Memory []nodeLine `json:"memory"` // used_memory in MiB, per node
}

// nodeLine is one node's series: [t_s, value] points, value null when the
// node did not answer.
type nodeLine struct {
	Name   string        `json:"name"`
	Points [][2]*float64 `json:"points"`
}

// serversView is the section's text: the hottest-node line and the
// scripts' command statistics.
type serversView struct {
	Hottest string
	Scripts []CommandStat
	Nodes   []NodeCPU
	Errors  []string
}

// serversHTML builds the section's charts and text (nil, nil without a
// servers section).
func serversHTML(s *Servers) (*serversChart, *serversView) {
	if s == nil || len(s.Nodes) == 0 {
		return nil, nil
	}
	c := &serversChart{CPU: []nodeLine{}, Lag: []nodeLine{}, Memory: []nodeLine{}}
	for _, n := range s.Nodes {
		name := n.Addr + " (" + n.Role + ")"
		cpu, mem := nodeLine{Name: name}, nodeLine{Name: name}
		lag := nodeLine{Name: n.Addr + " → " + n.Master}
		for _, p := range n.Series {
			t := p.TS
			cpu.Points = append(cpu.Points, [2]*float64{&t, p.CPUPct})
			var m *float64
			if p.Error == "" {
				v := float64(p.UsedMemory) / (1 << 20)
				m = &v
			}
			mem.Points = append(mem.Points, [2]*float64{&t, m})
			var l *float64
			if p.LagBytes != nil {
				v := float64(*p.LagBytes)
				l = &v
			}
			lag.Points = append(lag.Points, [2]*float64{&t, l})
		}
		c.CPU = append(c.CPU, cpu)
		c.Memory = append(c.Memory, mem)
		if n.Role == "replica" {
			c.Lag = append(c.Lag, lag)
		}
	}
	return c, &serversView{Hottest: s.HottestSummary(), Scripts: s.Scripts, Nodes: s.CPUByNode(), Errors: s.Errors}
}
