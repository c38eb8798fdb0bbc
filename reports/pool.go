package reports

// Pool is the load client's connection pool during the load (report.json
// "pool", additive): its size and, per second, how often and how long
// workers waited for a free connection and how many gave up (a pool
// timeout: the call fails before anything is sent). Figures are summed
// over the cluster's nodes (go-redis ClusterClient.PoolStats).
type Pool struct {
	// Size is the pool's size per node.
	Size int `json:"size"`
	// Waits counts acquisitions that had to wait for a connection and got one.
	Waits int64 `json:"waits"`
	// WaitMs is the time those waits took, summed.
	WaitMs float64 `json:"wait_ms"`
	// Timeouts counts acquisitions that waited the whole pool timeout and
	// failed (go-redis ErrPoolTimeout).
	Timeouts int64 `json:"timeouts"`
	// MaxConns is the most connections open at one reading.
	MaxConns uint32 `json:"max_conns"`
	// PerSecond holds one reading per second of the load.
	PerSecond []PoolWaitSecond `json:"per_second"`
}

// PoolWaitSecond is one second of the pool: the waits, wait time and timeouts
// that happened in it and the connections open at its end.
type PoolWaitSecond struct {
	T          float64 `json:"t_s"` // offset of the second's end from the run's start
	Waits      int64   `json:"waits"`
	WaitMs     float64 `json:"wait_ms"`
	MeanWaitMs float64 `json:"mean_wait_ms"` // WaitMs / Waits (0 when none waited)
	Timeouts   int64   `json:"timeouts"`
	TotalConns uint32  `json:"total_conns"`
	IdleConns  uint32  `json:"idle_conns"`
	Pending    uint32  `json:"pending"` // acquisitions in progress at the reading
}

// PoolOf is the pool section of a run whose pool had size connections per
// node, from the pool series the servers sampler read (servers.pool: one
// entry per interval, counters as differences): the same readings, under
// the pool section's names, with the totals summed.
func PoolOf(size int, series []PoolSecond) *Pool {
	p := &Pool{Size: size, PerSecond: []PoolWaitSecond{}}
	for _, s := range series {
		sec := PoolWaitSecond{T: s.TS, Waits: s.WaitCount, WaitMs: s.WaitMs, Timeouts: s.Timeouts,
			TotalConns: uint32(s.TotalConns), IdleConns: uint32(s.IdleConns), Pending: uint32(s.Pending)}
		if sec.Waits > 0 {
			sec.MeanWaitMs = sec.WaitMs / float64(sec.Waits)
		}
		p.PerSecond = append(p.PerSecond, sec)
		p.Waits += sec.Waits
		p.WaitMs += sec.WaitMs
		p.Timeouts += sec.Timeouts
		p.MaxConns = max(p.MaxConns, sec.TotalConns)
	}
	return p
}
