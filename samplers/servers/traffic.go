package servers

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// harnessCommands are the commands a node runs for the harness's (and the
// cluster's) own upkeep, never for a sale: the sampler's and the faults'
// reads, the clients' topology and connection set-up, replication and
// slot moves. Served counts every other command (INFO commandstats).
var harnessCommands = map[string]bool{
	"info": true, "cluster": true, "ping": true, "client": true, "command": true, "config": true, "script": true,
	"slowlog": true, "latency": true, "debug": true, "hello": true, "auth": true, "select": true, "readonly": true,
	"readwrite": true, "role": true, "memory": true, "echo": true, "dbsize": true, "lastsave": true, "bgsave": true,
	"bgrewriteaof": true, "save": true, "failover": true, "replicaof": true, "slaveof": true, "psync": true,
	"sync": true, "replconf": true, "acl": true, "module": true, "monitor": true, "migrate": true,
	"restore-asking": true, "time": true, "shutdown": true,
}

// dataCommands sums the calls of every command of an INFO commandstats
// text that is not one of harnessCommands: what the node ran for the
// clients of the path under test.
func dataCommands(fields map[string]string) int64 {
	var n int64
	for k, v := range fields {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		if base, _, _ := strings.Cut(name, "|"); harnessCommands[base] {
			continue
		}
		for _, kv := range strings.Split(v, ",") {
			if c, ok := strings.CutPrefix(kv, "calls="); ok {
				x, _ := strconv.ParseInt(c, 10, 64)
				n += x
			}
		}
	}
	return n
}

// Served returns, by master address, the commands each master ran for the
// system under test's clients (every command but the harness's own
// upkeep, harnessCommands) in the samples taken in (from, to]: a sample
// counts the commands since the one before it, so the window is whole
// sampling intervals. A node that was a replica at a sample's time counts
// nothing for it (a replica replays its master's writes); a sample after
// a gap or a restart counts nothing. Nil on a nil Sampler.
func (s *Sampler) Served(from, to time.Time) map[string]int64 {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for a, ns := range s.nodes {
		for _, sa := range ns.samples {
			if !sa.at.After(from) || sa.at.After(to) || sa.s.Role != "master" || sa.served < 0 {
				continue
			}
			out[a] += sa.served
		}
	}
	return out
}

// ServedNow returns, by master address, the commands each master ran for
// the system under test's clients since the sampler's latest reading of
// it (INFO commandstats read now, through the admin clients): the part of
// the traffic no round has counted yet, so a fault injected before the
// first round of the load still sees it. A node that was not a master at
// its latest reading, or does not answer, counts nothing. Nil on a nil
// Sampler.
func (s *Sampler) ServedNow(ctx context.Context) map[string]int64 {
	if s == nil {
		return nil
	}
	prev := map[string]int64{}
	s.mu.Lock()
	for a, ns := range s.nodes {
		if n := len(ns.samples); n > 0 && ns.samples[n-1].s.Role == "master" && ns.prev != nil {
			prev[a] = ns.prev.data
		}
	}
	s.mu.Unlock()
	out := map[string]int64{}
	for a, before := range prev {
		cl, err := s.c.Admin(a)
		if err != nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, s.opt.Interval/2)
		info, err := cl.Info(rctx, "commandstats").Result()
		cancel()
		if err != nil {
			continue
		}
		if n := dataCommands(parseInfo(info)) - before; n > 0 {
			out[a] = n
		}
	}
	return out
}
