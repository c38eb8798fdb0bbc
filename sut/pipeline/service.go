package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The access service's own send (DispatcherConfig.ScanAfter > 0): right
// after a reserve answered ACCEPTED, the service that ran it sends the
// reservation's message itself (ServiceSend: the MQ send with the fixed
// message_id, then RESERVED -> ENQUEUED), and the send_pending dispatcher
// becomes the scanner that sends only what is still unsent ScanAfter after
// it was reserved. The service-crash fault crashes the service between a
// successful reserve and its send: the reservation is ACCEPTED in Redis and
// in send_pending, but its message is never sent by the crashed service;
// the scanner must send it later.

type service struct {
	crashed                  atomic.Bool
	sends, lost, recovered   atomic.Int64
	crashes, restarts        atomic.Int64
	mu                       sync.Mutex
	unsent                   map[string]bool // reservations whose send the crash lost, not yet sent by the scanner
	crashedAt, lastRestarted time.Time
}

// ServiceSends reports whether the access service sends each reservation
// itself (DispatcherConfig.ScanAfter > 0): the load must then call
// ServiceSend after every first ACCEPTED (runner.WithAccepted).
func (p *Pipeline) ServiceSends() bool { return p != nil && p.cfg.Dispatcher.ScanAfter > 0 }

// ServiceSend is the access service sending reservation rid of bucket b
// right after its reserve answered ACCEPTED. While the service is crashed
// (CrashService) the send never happens: the reservation waits in
// send_pending for the scanner. No-op unless ServiceSends, before Start
// or after Stop.
func (p *Pipeline) ServiceSend(ctx context.Context, b uint32, rid string) {
	if !p.ServiceSends() || b >= p.a.Buckets {
		return
	}
	p.run.mu.Lock()
	live := p.run.started && !p.run.stopped
	p.run.mu.Unlock()
	if !live {
		return
	}
	s := &p.svc
	if s.crashed.Load() {
		s.lost.Add(1)
		s.mu.Lock()
		if s.unsent == nil {
			s.unsent = map[string]bool{}
		}
		s.unsent[rid] = true
		s.mu.Unlock()
		return
	}
	s.sends.Add(1)
	p.sendOne(ctx, p.a.Scope(b), rid)
}

// scannerSent notes that the scanner (the dispatcher) sent rid: a send the
// crashed service lost is now recovered.
func (p *Pipeline) scannerSent(rid string) {
	s := &p.svc
	s.mu.Lock()
	if s.unsent[rid] {
		delete(s.unsent, rid)
		s.recovered.Add(1)
	}
	s.mu.Unlock()
}

// CrashService crashes the access service: from now until RestartService
// every successful reserve's send is lost. Implements the service-crash
// fault's control; it reports false when the service does not send
// (ScanAfter 0) or the pipeline does not run.
func (p *Pipeline) CrashService() bool {
	if !p.ServiceSends() {
		return false
	}
	p.run.mu.Lock()
	live := p.run.started && !p.run.stopped
	p.run.mu.Unlock()
	if !live {
		return false
	}
	s := &p.svc
	if s.crashed.CompareAndSwap(false, true) {
		s.crashes.Add(1)
		s.mu.Lock()
		s.crashedAt = time.Now()
		s.mu.Unlock()
	}
	return true
}

// RestartService starts the access service again: sends happen again.
func (p *Pipeline) RestartService() {
	if p == nil {
		return
	}
	s := &p.svc
	if s.crashed.CompareAndSwap(true, false) {
		s.restarts.Add(1)
		s.mu.Lock()
		s.lastRestarted = time.Now()
		s.mu.Unlock()
	}
}

// ServiceState is the service-crash fault's evidence: crashes, the sends
// the crashed service lost (reservations ACCEPTED and left in
// send_pending), how many of them the scanner has sent since, and how
// many it has not (yet, or at all: a reservation released before the
// scanner came to it is never sent).
func (p *Pipeline) ServiceState() map[string]any {
	s := &p.svc
	s.mu.Lock()
	unsent := len(s.unsent)
	s.mu.Unlock()
	return map[string]any{
		"service_sends":         s.sends.Load(),
		"crashed":               s.crashed.Load(),
		"crashes":               s.crashes.Load(),
		"restarts":              s.restarts.Load(),
		"sends_lost_at_crash":   s.lost.Load(),
		"recovered_by_scanner":  s.recovered.Load(),
		"not_sent_by_scanner":   unsent,
		"scanner_scan_after_ms": p.cfg.Dispatcher.ScanAfter.Milliseconds(),
	}
}
