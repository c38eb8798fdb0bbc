package badpaths

import (
	"fmt"
	"time"

	"seckill-harness/checks"
	"seckill-harness/runner"
	"seckill-harness/sut/httpsut"
	"seckill-harness/sut/pipeline"
)

// Names of the loads that expose the bad paths.
const (
	LoadContention = "contention"  // many users, small stock, high concurrency
	LoadReplay     = "replay"      // earlier requests re-sent with the same ids (and reused by other users)
	LoadSameUser   = "same-user"   // earlier users with a new request_id
	LoadReleaseDup = "release-dup" // releases of earlier reservations, many of them twice or more
	// LoadReleaseReturn: releases of earlier reservations, and the users
	// they released back with a new request_id.
	LoadReleaseReturn = "release-return"
	// LoadReleaseQuery: releases of earlier reservations, and status
	// queries of earlier requests (many of them released before).
	LoadReleaseQuery = "release-query"
	LoadDisconnect   = "disconnect" // disconnect-before-reply pulses on the hot master
	LoadMQTimeout    = "mq-timeout" // the pipeline on, 30% MQ send timeouts (most of them delivered anyway)
	// LoadServiceLatency: a latency toxic on the bucket's master beyond
	// the service's Redis timeout (its calls time out and may have run).
	LoadServiceLatency = "service-latency"
	// LoadServiceMasterless: slot-down on the bucket's master from 500 ms
	// for 1.5 s (a window without a master: Facts.Masterless), healed
	// inside the load: the restarted master answers while the heal still
	// waits for the cluster, which a correct service may accept on (the
	// window ends when the heal begins).
	LoadServiceMasterless = "service-masterless"
)

// LoadNames lists the loads in the order the matrix runs them.
func LoadNames() []string {
	return []string{LoadContention, LoadReplay, LoadSameUser, LoadReleaseDup, LoadReleaseReturn, LoadReleaseQuery, LoadDisconnect, LoadMQTimeout, LoadServiceLatency, LoadServiceMasterless}
}

// Load is one short run's shape: the engine's config, the activity's stock
// and buckets, the fault injected while it runs ("" for none) and, when
// Pipeline is set, the asynchronous stages (dispatcher, MQ, orders,
// releases, expiry) running beside the load, drained for up to Drain
// after it and checked with the pipeline checks as well.
type Load struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Stock       int64            `json:"stock"`
	Buckets     uint32           `json:"buckets"`
	Fault       string           `json:"fault,omitempty"`
	Config      runner.Config    `json:"-"`
	Pipeline    *pipeline.Config `json:"-"`
	Drain       time.Duration    `json:"-"`
}

// GetLoad returns load name; quick shrinks it for tests.
func GetLoad(name string, quick bool) (Load, bool) {
	c := runner.DefaultConfig()
	c.Users = 1_000_000 // never wraps: every fresh op is a new user
	c.Mix = runner.Mix{}
	c.CallTimeout, c.RetrySends, c.RetryBackoff = time.Second, 3, 20*time.Millisecond
	c.SampleEvery = 100 * time.Millisecond
	shrink := func(d, q time.Duration) time.Duration {
		if quick {
			return q
		}
		return d
	}
	closedBurst := func(mix runner.Mix) runner.Config {
		c := c
		c.Mode, c.Concurrency, c.Duration = runner.ModeClosed, 32, 10*time.Second
		c.MaxOps = 800
		if quick {
			c.MaxOps = 400
		}
		c.Mix = mix
		return c
	}
	var l Load
	switch name {
	case LoadContention:
		c.Mode, c.Concurrency, c.Duration = runner.ModeClosed, 64, shrink(1500*time.Millisecond, 800*time.Millisecond)
		c.SampleEvery = 50 * time.Millisecond
		l = Load{Stock: 200, Buckets: 1, Config: c} // sells out once the pool is warm and every worker is busy
	case LoadReplay:
		l = Load{Stock: 1000, Buckets: 1, Config: closedBurst(runner.Mix{Replay: 0.4, ForeignRequest: 0.1})}
	case LoadSameUser:
		l = Load{Stock: 1000, Buckets: 1, Config: closedBurst(runner.Mix{SameUser: 0.5})}
	case LoadReleaseDup:
		l = Load{Stock: 1000, Buckets: 1, Config: closedBurst(runner.Mix{Release: 0.5})}
	case LoadReleaseReturn:
		l = Load{Stock: 1000, Buckets: 1, Config: closedBurst(runner.Mix{Release: 0.3, Return: 0.3})}
	case LoadReleaseQuery:
		l = Load{Stock: 1000, Buckets: 1, Config: closedBurst(runner.Mix{Release: 0.3, Query: 0.3})}
	case LoadDisconnect:
		c.Mode, c.Concurrency, c.MaxInFlight = runner.ModeOpen, 16, 2000
		c.Shape = runner.Shape{Kind: "constant", Rate: 500}
		c.Duration = shrink(2500*time.Millisecond, 2000*time.Millisecond)
		c.SampleEvery = 250 * time.Millisecond
		l = Load{Stock: 5000, Buckets: 1, Config: c,
			Fault: fmt.Sprintf("disconnect-before-reply:every=300ms,at=%s,for=%s", shrink(500*time.Millisecond, 400*time.Millisecond), shrink(1500*time.Millisecond, 1200*time.Millisecond))}
	case LoadMQTimeout:
		// Sells out in about half a second, then keeps asking: units given
		// back are sold again while late messages still arrive.
		c.Mode, c.Concurrency, c.MaxInFlight = runner.ModeOpen, 16, 2000
		c.Shape = runner.Shape{Kind: "constant", Rate: 600}
		c.Duration = shrink(2500*time.Millisecond, 1500*time.Millisecond)
		c.SampleEvery = 250 * time.Millisecond
		pc := pipeline.DefaultConfig()
		pc.MQ = pipeline.MQConfig{Ack: 0.7, Timeout: 0.3, TimeoutDelivered: 0.8, TimeoutAfter: 20 * time.Millisecond}
		pc.Order.Delay = 200 * time.Millisecond // consumer lag: a stored message outlives the send timeout
		l = Load{Stock: 300, Buckets: 1, Config: c, Pipeline: &pc, Drain: 5 * time.Second}
	case LoadServiceLatency, LoadServiceMasterless:
		l = serviceLoad(name, c, shrink)
	default:
		return Load{}, false
	}
	l.Name = name
	l.Description = describe(l)
	return l, true
}

func describe(l Load) string {
	c := l.Config
	var s string
	if c.Mode == runner.ModeClosed {
		s = fmt.Sprintf("closed loop, %d workers", c.Concurrency)
		if c.MaxOps > 0 {
			s += fmt.Sprintf(", %d ops", c.MaxOps)
		} else {
			s += fmt.Sprintf(", %s", c.Duration)
		}
	} else {
		s = fmt.Sprintf("open loop %g ops/s, %d workers, %s", c.Shape.Rate, c.Concurrency, c.Duration)
	}
	s += fmt.Sprintf(", stock %d in %d bucket(s)", l.Stock, l.Buckets)
	m := c.Mix
	mix := ""
	add := func(name string, v float64) {
		if v > 0 {
			if mix != "" {
				mix += " "
			}
			mix += fmt.Sprintf("%s=%g", name, v)
		}
	}
	for _, sh := range m.Shares() {
		add(sh.Name, *sh.Share)
	}
	if mix == "" {
		mix = "all fresh users"
	}
	s += ", " + mix
	s += fmt.Sprintf(", I1 sampled every %s", c.SampleEvery)
	if l.Fault != "" {
		s += ", fault " + l.Fault
	}
	if p := l.Pipeline; p != nil {
		s += fmt.Sprintf("; pipeline on: mq ack %g / error %g / timeout %g (%g of timeouts delivered anyway, after %s), consumer lag %s, order reject %g, drain ≤ %s, %s checked",
			p.MQ.Ack, p.MQ.Error, p.MQ.Timeout, p.MQ.TimeoutDelivered, p.MQ.TimeoutAfter, p.Order.Delay, p.Order.Reject, l.Drain, checks.IDRange(true))
	}
	return s
}

// serviceLoad is a service row's load: an open loop of fresh users at
// 100 ops/s on one bucket with plenty of stock, the client's policy the
// contract mapping's (each send bounded by its timeout, twice that for
// the query of an UNKNOWN; up to 3 re-sends of the same request), and
// the fault that exposes the defect: a latency of 2.5 times the
// service's Redis timeout on the bucket's master for 1.5 s, or slot-down
// of that master from 500 ms for 1.5 s, healed inside the load (the
// lifecycle's masterless window runs from the kill to the start of the
// heal; the reference service's ACCEPTED answers from the restarted
// master, while the heal still waits for the cluster, are no fail-open).
func serviceLoad(name string, c runner.Config, shrink func(d, q time.Duration) time.Duration) Load {
	c.Mode, c.Concurrency, c.MaxInFlight = runner.ModeOpen, 16, 2000
	c.Shape = runner.Shape{Kind: "constant", Rate: 100}
	c.CallTimeout, c.RetrySends, c.RetryBackoff = 2*httpsut.DefaultTimeout, httpsut.DefaultResends, httpsut.DefaultBackoff
	c.SampleEvery = 250 * time.Millisecond
	c.Duration = shrink(3*time.Second, 2500*time.Millisecond)
	l := Load{Stock: 5000, Buckets: 1, Config: c}
	if name == LoadServiceMasterless {
		// Two seconds more load after the window: slot-down's inject (an
		// AOF rewrite before the kill) took past the 2.5 s load's end on a
		// busy machine, and the heal then cancelled it ("fault did not
		// happen"), failing the row for the stand, not the service.
		l.Config.Duration = shrink(5*time.Second, 4500*time.Millisecond)
		l.Fault = "slot-down:at=500ms,for=1500ms"
		return l
	}
	l.Fault = fmt.Sprintf("latency:latency=%d,at=500ms,for=1500ms", (serviceRedisTimeout * 5 / 2).Milliseconds())
	return l
}
