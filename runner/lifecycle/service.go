package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"seckill-harness/checks"
	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/samplers/conns"
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
	if p.Service.Cmd == "" {
		return nil
	}
	cr, ok := x.stand.Cluster.(compose.ClientRouting)
	if !ok || len(cr.Seeds()) == 0 {
		return errors.New("--service-cmd: the stand's nodes do not announce their client proxies (a stand opened without ClusterSpec.ServiceRouting): the service could not be routed through the faults")
	}
	log := x.out.logger()
	child, err := servicechild.Start(ctx, servicechild.Options{Cmd: p.Service.Cmd, Ready: p.Service.Ready, Listen: p.Service.Listen, RedisAddrs: cr.Seeds(),
		Secret: string(x.secret()), PGURL: x.pipe.pgURL, Dir: x.out.Dir,
		Sale: servicechild.Sale{Activity: x.act.ID, SKU: x.act.SKU, Stock: x.act.Stock, Buckets: x.act.Buckets},
		Logf: func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }})
	if err != nil {
		return err
	}
	x.service.child = child
	x.cleanup = append(x.cleanup, func() { _ = child.Stop() })
	if x.fault.tl != nil {
		x.fault.tl.Env.Service = child
	}
	x.service.conns = startConnSampler(child, x.stand, x.fault.tl)
	x.cleanup = append(x.cleanup, x.service.conns.stop)
	log.Info(fmt.Sprintf("service: %s at %s, Redis through the proxies %s", p.Service.Cmd, child.URL(), strings.Join(cr.Seeds(), ",")))
	return nil
}

// secret is the run's reservation-id secret.
func (x *execution) secret() []byte {
	if x.plan.Secret != nil {
		return x.plan.Secret
	}
	return SecretFor(x.plan.Phases[0].Config.Seed)
}

// connSampler is the service's connection sampler with the facts it
// records (see samplers/conns).
type connSampler struct {
	s     *conns.Sampler
	facts checks.ServiceRoutingFacts
}

func startConnSampler(child *servicechild.Child, st *Stand, tl *faults.Timeline) *connSampler {
	var nodes []string
	proxyOf := map[string]string{}
	for _, a := range st.Cluster.Addrs() {
		nodes = append(nodes, a)
		if l, ok := st.Proxies.ListenAddr(a); ok {
			proxyOf[l] = a
		}
	}
	var active func() []string
	if tl != nil {
		active = func() []string {
			var on []string
			for _, k := range tl.Active() {
				if faults.ActsOnProxies(k) {
					on = append(on, k)
				}
			}
			return on
		}
	}
	c := &connSampler{}
	c.s = conns.Start(child, nodes, proxyOf, active, &c.facts)
	return c
}

// stop ends the sampling (idempotent).
func (c *connSampler) stop() { c.s.Stop() }

// result stops the sampler and returns its facts (nil: no service child).
func (c *connSampler) result() *checks.ServiceRoutingFacts {
	if c == nil {
		return nil
	}
	c.s.Stop()
	f := c.facts
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
