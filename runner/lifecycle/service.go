package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/sut/servicechild"
)

// refuseServiceRouting refuses a service routing the stand cannot give:
// the nodes must announce the client proxies, which only a local cluster
// the harness starts can be told to do, with the embedded toxiproxy, and
// a node announces one port (not also a replication proxy's).
func refuseServiceRouting(cf ClusterSpec) error {
	if !cf.ServiceRouting {
		return nil
	}
	switch {
	case strings.TrimSpace(cf.Spec) != compose.ProviderLocal:
		return fmt.Errorf("--service-cmd: the service's Redis client is routed through the faults by nodes that announce their proxies (cluster-announce-port), which the harness can only set on a cluster it starts locally, and this run's cluster is %s: use --cluster local (docs/SERVICE_ROUTING.md)", clusterKind(cf.Spec))
	case strings.TrimSpace(cf.Toxiproxy) != "":
		return errors.New("--service-cmd with --toxiproxy: the nodes announce the embedded toxiproxy's proxies, a remote toxiproxy's cannot be announced before the nodes start: drop --toxiproxy")
	case cf.ReplicationProxies:
		return errors.New("--service-cmd with a replication fault (replica-lag, replica-partition): with a service under test the nodes announce their client proxies, and replication runs through those same proxies, so a fault on the replication stream alone cannot be placed: run the replication faults without --service-cmd (docs/SERVICE_ROUTING.md)")
	}
	return nil
}

// startService starts the plan's service child (if any) with the proxied
// seeds, the run's secret, the orders' URL and the run's sale (activity,
// SKU, stock, buckets), makes it the target of the
// service faults and starts the sampler of its connections
// (service_behind_proxies). Without a ServiceCmd it does nothing.
func (x *execution) startService(ctx context.Context) error {
	p := x.plan
	if p.ServiceCmd == "" {
		return nil
	}
	cr, ok := x.stand.Cluster.(compose.ClientRouting)
	if !ok || len(cr.Seeds()) == 0 {
		return errors.New("--service-cmd: the stand's nodes do not announce their client proxies (a stand opened without ClusterSpec.ServiceRouting): the service could not be routed through the faults")
	}
	log := x.out.logger()
	child, err := servicechild.Start(ctx, servicechild.Options{Cmd: p.ServiceCmd, Ready: p.ServiceReady, Listen: p.ServiceListen, RedisAddrs: cr.Seeds(),
		Secret: string(x.secret()), PGURL: x.pgURL, Dir: x.out.Dir,
		Sale: servicechild.Sale{Activity: x.act.ID, SKU: x.act.SKU, Stock: x.act.Stock, Buckets: x.act.Buckets},
		Logf: func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }})
	if err != nil {
		return err
	}
	x.svc = child
	x.cleanup = append(x.cleanup, func() { _ = child.Stop() })
	if x.tl != nil {
		x.tl.Env.Service = child
	}
	x.svcConns = startConnSampler(child, x.stand, x.tl)
	x.cleanup = append(x.cleanup, x.svcConns.stop)
	log.Info(fmt.Sprintf("service: %s at %s, Redis through the proxies %s", p.ServiceCmd, child.URL(), strings.Join(cr.Seeds(), ",")))
	return nil
}

// secret is the run's reservation-id secret.
func (x *execution) secret() []byte {
	if x.plan.Secret != nil {
		return x.plan.Secret
	}
	return SecretFor(x.plan.Phases[0].Config.Seed)
}

// connSampler reads the service's TCP connections twice a second and
// sorts them: through a node's proxy, straight to a node's own address
// (bypassing every fault on the proxies), or elsewhere.
type connSampler struct {
	child *servicechild.Child
	tl    *faults.Timeline
	t0    time.Time
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	proxyOf map[string]string // proxy listen address → node
	nodes   map[string]bool   // nodes' own addresses

	mu    sync.Mutex
	facts checks.ServiceRoutingFacts
}

func startConnSampler(child *servicechild.Child, st *Stand, tl *faults.Timeline) *connSampler {
	s := &connSampler{child: child, tl: tl, t0: time.Now(), done: make(chan struct{}), proxyOf: map[string]string{}, nodes: map[string]bool{}}
	for _, a := range st.Cluster.Addrs() {
		s.nodes[a] = true
		if l, ok := st.Proxies.ListenAddr(a); ok {
			s.proxyOf[l] = a
		}
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
func (s *connSampler) round() {
	conns, err := s.child.Conns()
	if err != nil || s.child.PGID() == 0 {
		return // down (a service fault) or unreadable: no round
	}
	var proxyFaults []string
	if s.tl != nil {
		for _, k := range s.tl.Active() {
			if faults.ActsOnProxies(k) {
				proxyFaults = append(proxyFaults, k)
			}
		}
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
	s.facts.Add(time.Since(s.t0).Seconds(), through, direct, proxyFaults)
}

// stop ends the sampling (idempotent) after one last round.
func (s *connSampler) stop() {
	s.once.Do(func() { close(s.done); s.wg.Wait() })
}

// result stops the sampler and returns its facts (nil: no service child).
func (s *connSampler) result() *checks.ServiceRoutingFacts {
	if s == nil {
		return nil
	}
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.facts
	return &f
}

// serviceDBURL is the URL of the orders' database for the service child:
// the given one, or the throwaway server's, with the run's schema as its
// search_path (the service sees the tables the checks read). "" when
// neither is known.
func serviceDBURL(given string, db *compose.PostgresDB) string {
	base := given
	switch {
	case base != "":
	case db.Local() != nil:
		base = db.Local().URL()
	case db.Docker() != nil:
		base = db.Docker().URL()
	default:
		return ""
	}
	u, err := url.Parse(base)
	if err != nil || db.Schema() == "" {
		return base
	}
	q := u.Query()
	q.Set("search_path", db.Schema())
	u.RawQuery = q.Encode()
	return u.String()
}
