package compose

// Client routing: nodes that announce their client proxies.
//
// A LocalCluster started with Options.AnnounceClientProxies announces, for
// every node, the listen port of its client proxy instead of its own port.
// A client that was given only those addresses (Seeds) learns the proxied
// topology from the cluster itself, so its traffic passes the toxics
// without a Dialer of the harness: the way a service under test, whose
// code the harness does not touch, is routed through the faults. The cost
// (measured in docs/SERVICE_ROUTING.md): replication follows the
// announced address too, so the master→replica stream shares the proxies
// with the clients.

import (
	"errors"
	"fmt"
)

// ClientRouting is implemented by clusters whose nodes announce their
// client proxies' addresses. ClientToxics returns those proxies (keyed by
// the nodes' real addresses, like any Toxics); ok is false when the nodes
// announce something else. Seeds are the proxies' listen addresses, in the
// order of Addrs: what a client outside the harness is given.
type ClientRouting interface {
	ClientToxics() (t Toxics, ok bool)
	Seeds() []string
}

var _ ClientRouting = (*LocalCluster)(nil)

// openAnnouncedProxies creates the embedded toxiproxy whose ports the
// nodes will announce, for either option that asks for one.
func (c *LocalCluster) openAnnouncedProxies() error {
	opt := c.opt
	if opt.ReplicationProxies && opt.AnnounceClientProxies {
		return errors.New("compose: Options.ReplicationProxies and Options.AnnounceClientProxies both set: a node announces one port, " +
			"so replication gets proxies of its own, or clients and replication share the announced client proxies: choose one")
	}
	if !opt.ReplicationProxies && !opt.AnnounceClientProxies {
		return nil
	}
	p, err := NewProxies(nil)
	if err != nil {
		return fmt.Errorf("compose: announced proxies: %w", err)
	}
	c.repl, c.clientsAnnounced = p, opt.AnnounceClientProxies
	return nil
}

// bindAnnouncedProxies tells the announced client proxies which cluster
// they front, once it is formed, so their Dialer maps the announced
// addresses back to their nodes (and counts the connections) and probes a
// node the cluster knows is down. Called before Start returns, when no
// client of the proxies exists yet.
func (c *LocalCluster) bindAnnouncedProxies() {
	if c.repl == nil || !c.clientsAnnounced {
		return
	}
	c.repl.mu.Lock()
	c.repl.cluster = c
	c.repl.mu.Unlock()
}

// ClientToxics implements ClientRouting: the proxies the nodes announce,
// when they are the client proxies (Options.AnnounceClientProxies). The
// cluster owns and closes them; closing them earlier is allowed (Close is
// idempotent) and cuts every client and replica link.
func (c *LocalCluster) ClientToxics() (Toxics, bool) {
	if c == nil || c.repl == nil || !c.clientsAnnounced {
		return nil, false
	}
	return c.repl, true
}

// Seeds implements ClientRouting: the announced client proxies' listen
// addresses in the order of Addrs; nil without AnnounceClientProxies.
func (c *LocalCluster) Seeds() []string {
	px, ok := c.ClientToxics()
	if !ok {
		return nil
	}
	var out []string
	for _, a := range c.Addrs() {
		if l, ok := px.ListenAddr(a); ok {
			out = append(out, l)
		}
	}
	return out
}
