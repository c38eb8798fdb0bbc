package reports

import (
	"math"
	"math/rand/v2"
	"time"
)

// syntheticSamples simulates an open-loop run at rate ops/s for dur with
// a master failover over [stallFrom, stallTo): nothing completes during
// the stall, the queue drains after it (latency from the intended time
// grows to the stall's length, then decays), and a few operations end
// UNKNOWN or ERROR. seed makes it deterministic; offset shifts the
// intended times (two load generators interleave their schedules).
func syntheticSamples(seed uint64, rate float64, dur, stallFrom, stallTo time.Duration, offset time.Duration) []Sample {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n := int(rate * dur.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	drain := time.Duration(float64(time.Second) / (6 * rate)) // backlog served 6× faster than it arrives
	var serverFree time.Duration
	out := make([]Sample, 0, n)
	accepted := 0
	for i := range n {
		intended := offset + time.Duration(i)*interval
		ready := intended + time.Duration(rng.IntN(60))*time.Microsecond
		// Service time: log-normal around 0.4 ms with a thin tail.
		svc := time.Duration(math.Exp(rng.NormFloat64()*0.5) * 400 * float64(time.Microsecond))
		if rng.Float64() < 0.002 {
			svc += time.Duration(rng.IntN(8000)) * time.Microsecond
		}
		begin := ready
		outcome, errClass := OutcomeSoldOut, ""
		if ready >= stallFrom && ready < stallTo {
			begin = stallTo // no master for the slot until the replica takes over
			if r := rng.Float64(); r < 0.03 {
				outcome, errClass = OutcomeError, "CLUSTERDOWN"
			} else if r < 0.036 {
				outcome, errClass = OutcomeUnknown, "timeout"
			}
		}
		if serverFree > begin {
			begin = serverFree
		}
		if begin > ready {
			serverFree = begin + drain // draining the backlog
		}
		// The workers hold at most ~200 ms of the wait as "sent".
		start := max(ready, begin-200*time.Millisecond)
		if outcome == OutcomeSoldOut {
			switch r := rng.Float64(); {
			case accepted < 500 && r < 0.6:
				outcome = OutcomeAccepted
				accepted++
			case r < 0.02:
				outcome = "REQUEST_ID_CONFLICT"
			case r < 0.03:
				outcome = "USER_ALREADY_RESERVED"
			}
		}
		out = append(out, Sample{Intended: intended, Start: start, End: begin + svc, Outcome: outcome, ErrorClass: errClass})
	}
	return out
}

// syntheticFailoverRun is a realistic failed failover run: 12 s at
// 1000 ops/s, the master of the hot slot killed at 4.0 s, a new master
// serving at 6.0 s, the fault healed at 7.5 s, two lost acks (I6 fails).
func syntheticFailoverRun() (*Report, *Recorder) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	phases := []PhaseSpan{
		{Name: "baseline", End: 4 * time.Second},
		{Name: "during failover", Start: 4 * time.Second, End: 7500 * time.Millisecond},
		{Name: "after failover", Start: 7500 * time.Millisecond},
	}
	rec := NewRecorder(start, phases)
	rec.SetLateStartThreshold(time.Millisecond)
	for _, s := range syntheticSamples(7, 1000, 12*time.Second, 4*time.Second, 6*time.Second, 0) {
		rec.Add(s)
	}
	rep := &Report{
		Scenario: "failover-kill", Seed: 7, Passed: false, DurationS: 12,
		Versions: Versions{Harness: "v0.3.0", Redis: "7.0.15", GoRedis: "v9.23.0", Go: "go1.26.8", Scripts: "embedded reserve.lua fc842ef9d374"},
		Topology: Topology{Masters: 3, ReplicasPerMaster: 1, Provider: "local", Proxied: true},
		Load:     Load{Mode: "open", Shape: "constant", TargetRate: 1000, Users: 20000, Stock: 500, Buckets: 2, Concurrency: 64, TimeoutMs: 2000},
		Faults: []Fault{{
			Kind: "failover", Name: "failover:mode=kill,at=4s,for=3.5s", Target: "127.0.0.1:7001",
			Params: map[string]any{"mode": "kill", "at": "4s", "for": "3.5s"}, InjectedAtS: 4, HealedAtS: 7.5, Healed: true,
			Evidence: map[string]any{"old_master": map[string]any{"addr": "127.0.0.1:7001", "id": "5493f64"},
				"new_master": map[string]any{"addr": "127.0.0.1:7004", "id": "f77aa74"}, "recovery_ms": 2004.5,
				"slot": 5687.0, "restarted_as_replica": true,
				"log": []any{"21882:S 29 Nov 2026 10:00:05.092 # Starting a failover election for epoch 7.",
					"21882:S 29 Nov 2026 10:00:05.903 # Failover election won: I'm the new master."}},
		}},
		Stock: Stock{Initial: 500, Available: 0, Reserved: 500, Buckets: []BucketStock{
			{Bucket: 0, Initial: 250, Reserved: 250}, {Bucket: 1, Initial: 250, Reserved: 250}}},
		Unknown:  Unknown{},
		LostAcks: 2,
		Invariants: []Invariant{
			{ID: "I1", Name: "stock_conservation", Status: StatusPass, Detail: "2 buckets conserve stock; 12 samples, 0 violations"},
			{ID: "I3", Name: "no_oversell", Status: StatusPass, Detail: "500 acknowledged reservations held against 500 stock"},
			{ID: "I6", Name: "no_lost_acks", Status: StatusFail, Detail: "2 acknowledged reservations are missing from Redis | after the failover",
				Evidence: map[string]any{"lost": []any{"r7k2m4q9x1c8v5b3n6z0w2e4t1", "p3f8h1j5k9l2m6n0b4v7c1x5z8"}}},
			{ID: "I9", Name: "liveness", Status: StatusSkip, Detail: "faults were injected"},
		},
		Assertions: []Assertion{{Name: "p99 < 20 ms in baseline", Status: StatusPass, Observed: 1.2, Threshold: ptrF(20), Unit: "ms"}},
	}
	rec.Fill(rep)
	rep.Unknown.Total = rep.Totals.Outcomes[OutcomeUnknown]
	rep.Unknown.Executed = rep.Unknown.Total / 3
	rep.Unknown.NotExecuted = rep.Unknown.Total - rep.Unknown.Executed
	return rep, rec
}

func ptrF(v float64) *float64 { return &v }

// withCompareAndCapacity adds both optional sections to rep.
func withCompareAndCapacity(rep *Report) *Report {
	variant := func(b int, p99 float64, left int64) CompareVariant {
		v := CompareVariant{Name: map[int]string{1: "1 bucket", 4: "4 buckets", 16: "16 buckets"}[b], Buckets: b, Passed: true,
			Ops: 20000, ThroughputOpsPerS: 2000, LatencyMs: Percentiles{P50: 0.4, P99: p99, Max: p99 * 3},
			Outcomes: map[string]int64{OutcomeAccepted: 1000 - left, OutcomeSoldOut: 19000 + left}}
		base := int64(1000 / b)
		for i := range b {
			l := int64(0)
			if int64(i) < left {
				l = 1
			}
			v.Stock.Buckets = append(v.Stock.Buckets, BucketStock{Bucket: i, Initial: base, Reserved: base - l, Available: l})
			v.Stock.Initial += base
			v.Stock.Reserved += base - l
			v.Stock.Available += l
		}
		return v
	}
	rep.Compare = &CompareResult{Dimension: "buckets", Variants: []CompareVariant{variant(1, 4.1, 0), variant(4, 1.9, 2), variant(16, 1.2, 7)}}
	rep.Capacity = &CapacityResult{TargetP99Ms: 20, MaxRateOpsPerS: 24000}
	for i, rate := range []float64{5000, 10000, 15000, 20000, 24000, 28000, 32000} {
		p99 := 1.1 * math.Pow(1.9, float64(i))
		rep.Capacity.Steps = append(rep.Capacity.Steps, CapacityStep{RateOpsPerS: rate, ThroughputOpsPerS: min(rate, 27500) * 0.999,
			DurationS: 10, Ops: int64(rate * 10), LatencyMs: Percentiles{P50: p99 / 4, P99: p99, P999: p99 * 2, Max: p99 * 3},
			Passed: p99 <= 20})
	}
	return rep
}

// withServers adds a servers section to the synthetic failover run:
// 127.0.0.1:7001 is the hot master until it is killed at 4 s, when its
// replica 127.0.0.1:7004 takes over (and gets the heat); the other
// replicas' lag grows and shrinks with the load.
func withServers(rep *Report) *Report {
	type nodeDef struct {
		addr, role, master string
		cpu                func(t float64) float64
	}
	hot := func(t float64) float64 { return 70 + 5*float64(int(t)%3) }
	cold := func(t float64) float64 { return 8 + float64(int(t)%2) }
	defs := []nodeDef{
		{"127.0.0.1:7001", "master", "", func(t float64) float64 { return hot(t) }},
		{"127.0.0.1:7002", "master", "", cold},
		{"127.0.0.1:7003", "master", "", cold},
		{"127.0.0.1:7004", "replica", "127.0.0.1:7001", func(t float64) float64 {
			if t >= 6 {
				return hot(t) + 10
			}
			return 3
		}},
		{"127.0.0.1:7005", "replica", "127.0.0.1:7002", func(float64) float64 { return 2 }},
		{"127.0.0.1:7006", "replica", "127.0.0.1:7003", func(float64) float64 { return 2 }},
	}
	s := &Servers{IntervalS: 1, LatencyThresholdMs: 5,
		Scripts: []CommandStat{{Command: "evalsha", Calls: 12000, Usec: 180000, UsecPerCall: 15, FailedCalls: 2}}}
	for _, d := range defs {
		n := ServerNode{Addr: d.addr, Role: d.role, Master: d.master}
		for i := 0; i <= 12; i++ {
			t := float64(i)
			p := NodeSample{TS: t, Role: d.role, UsedMemory: int64(2<<20 + i*(64<<10)), ConnectedClients: 40, ClusterState: "ok"}
			switch {
			case d.addr == "127.0.0.1:7001" && t >= 4 && t < 8:
				p = NodeSample{TS: t, Error: "compose: node not running: 127.0.0.1:7001"}
			case i > 0:
				cpu, ops := d.cpu(t), d.cpu(t)*150
				p.CPUPct, p.OpsPerS = &cpu, &ops
			}
			if d.addr == "127.0.0.1:7004" && t >= 6 {
				p.Role = "master"
			}
			if p.Error == "" && p.Role == "replica" {
				lag := int64(100 * (i % 4))
				p.LinkStatus, p.LagBytes = "up", &lag
			}
			n.Series = append(n.Series, p)
		}
		s.Nodes = append(s.Nodes, n)
	}
	for i := 0; i <= 12; i++ {
		s.Pool = append(s.Pool, PoolSecond{TS: float64(i), Hits: 990, Misses: 10, TotalConns: 80, IdleConns: 60})
	}
	rep.Servers = s
	return rep
}

// withPipeline adds report.json's pipeline section as a failover-data-loss
// run with the pipeline writes it: orders in PostgreSQL, their throughput,
// and a final reconciliation that names lost reservations.
func withPipeline(rep *Report) *Report {
	divs := []any{}
	for _, rid := range []string{"lostwithorderaaaaaaaaaaaa1", "lostwithorderaaaaaaaaaaaa2"} {
		divs = append(divs, map[string]any{"class": "order_reservation_lost", "reservation_id": rid, "order_id": "ord-" + rid,
			"detail": "order ord-" + rid + " stands; Redis has no record of its reservation"})
	}
	divs = append(divs, map[string]any{"class": "accepted_reservation_lost", "reservation_id": "lostwithoutorderbbbbbbbbb1",
		"detail": "acknowledged ACCEPTED; Redis has no record of it and PostgreSQL no order (lost before its order)"})
	divs = append(divs, map[string]any{"class": "order_not_fenced", "reservation_id": "repairedccccccccccccccccc1", "order_id": "ord-repairedccccccccccccccccc1",
		"redis_status": "ENQUEUED", "detail": "order stands while the reservation is ENQUEUED; repaired", "repaired": true})
	rep.Pipeline = map[string]any{
		"orders": 180,
		"order_db": map[string]any{"server": "local throwaway postgres://seckill@127.0.0.1:5999/postgres", "schema": "seckill_run_x",
			"throughput": map[string]any{"transactions": 338, "tx_p50_ms": 11.2, "tx_p99_ms": 580.6, "tx_max_ms": 711.7,
				"stock_row_update_p50_ms": 0.3, "stock_row_update_p99_ms": 54.5, "orders_created": 180, "orders_per_s": 30.2, "creating_window_s": 5.9}},
		"reconciliation": map[string]any{"passes": 31, "during_load": map[string]any{"order_not_fenced": 2, "order_reservation_lost": 2},
			"final": map[string]any{"reservations_compared": 338, "orders": 180, "repaired": 1, "divergences": divs,
				"counts": map[string]any{"order_reservation_lost": 2, "accepted_reservation_lost": 1},
				"stock":  map[string]any{"pg_total": 180, "pg_sold": 180, "redis_lost_with_order": 2}}},
	}
	return rep
}
