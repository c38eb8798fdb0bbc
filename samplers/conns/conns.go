// Package conns samples the TCP connections of a service under test twice
// a second and sorts them: through a node's proxy, straight to a node's own
// address (bypassing every fault on the proxies), or elsewhere. What it
// sees feeds the service-routing checks: a service that never used the
// proxies, or left them while a fault acted on them, was not faulted.
package conns

import (
	"sync"
	"time"

	"seckill-harness/sut/servicechild"
)

// Source is the service whose connections are read: its process group
// (0 when it is down) and the connections that group holds.
type Source interface {
	Conns() ([]servicechild.Conn, error)
	PGID() int
}

// Recorder takes one round: the seconds since sampling began, the number
// of connections through the proxies, the node addresses reached directly,
// and the kinds of the faults acting on the proxies during the round.
type Recorder interface {
	Add(atS float64, through int, direct []string, proxyFaults []string)
}

// Sampler reads a Source's connections every half second until Stop.
type Sampler struct {
	src         Source
	proxyFaults func() []string
	rec         Recorder
	t0          time.Time
	done        chan struct{}
	once        sync.Once
	wg          sync.WaitGroup

	proxyOf map[string]string // proxy listen address → node
	nodes   map[string]bool   // nodes' own addresses

	mu sync.Mutex // guards rec
}

// Start samples src at once and then every 500 ms. proxyOf maps each
// proxy's listen address to its node; nodes are the nodes' own addresses;
// proxyFaults (nil: none) names the faults acting on the proxies now. rec
// is written from the sampler's goroutine only, until Stop returns.
func Start(src Source, nodes []string, proxyOf map[string]string, proxyFaults func() []string, rec Recorder) *Sampler {
	s := &Sampler{src: src, proxyFaults: proxyFaults, rec: rec, t0: time.Now(), done: make(chan struct{}), proxyOf: proxyOf, nodes: map[string]bool{}}
	for _, a := range nodes {
		s.nodes[a] = true
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			s.round()
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// round reads the connections once.
func (s *Sampler) round() {
	conns, err := s.src.Conns()
	if err != nil || s.src.PGID() == 0 {
		return // down (a service fault) or unreadable: no round
	}
	var active []string
	if s.proxyFaults != nil {
		active = s.proxyFaults()
	}
	through := 0
	var direct []string
	for _, c := range conns {
		switch {
		case s.proxyOf[c.Remote] != "":
			through++
		case s.nodes[c.Remote]:
			direct = append(direct, c.Remote)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Add(time.Since(s.t0).Seconds(), through, direct, active)
}

// Stop ends the sampling (idempotent); after it returns the Recorder is
// no longer written.
func (s *Sampler) Stop() {
	s.once.Do(func() { close(s.done); s.wg.Wait() })
}
