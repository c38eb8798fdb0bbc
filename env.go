package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"seckill-harness/compose"
	"seckill-harness/lua"
	"seckill-harness/reports"
)

// clusterFlags choose the cluster a command runs on.
type clusterFlags struct {
	spec              string // --cluster: local (default), docker, redis://…, rediss://…
	masters, replicas int
	nodeTimeout       time.Duration
	appendOnly        bool
	redisServer       string
	allowDestructive  bool
	toxiproxy         string // --toxiproxy: "" embedded, else a toxiproxy server's API URL
	ext               compose.ExternalOptions
}

// addClusterFlags registers the flags of the cluster and its proxies.
func addClusterFlags(f *pflag.FlagSet, cf *clusterFlags) {
	f.StringVar(&cf.spec, "cluster", "local", "where to run: local (redis-server processes the harness starts and removes), docker (containers, needs a Docker engine), or an existing cluster redis://[user@]host:port[,host:port...] (rediss:// for TLS); credentials of an existing cluster preferably from "+compose.EnvRedisUsername+" / "+compose.EnvRedisPassword)
	f.IntVar(&cf.masters, "masters", 3, "masters of a local or docker cluster")
	f.IntVar(&cf.replicas, "replicas", 1, "replicas per master of a local or docker cluster (0: none)")
	f.DurationVar(&cf.nodeTimeout, "node-timeout", 2*time.Second, "cluster-node-timeout of a local or docker cluster")
	f.BoolVar(&cf.appendOnly, "appendonly", false, "start the local or docker nodes with appendonly yes")
	f.StringVar(&cf.redisServer, "redis-server", "", "path of redis-server for a local cluster (default: found on PATH)")
	f.BoolVar(&cf.allowDestructive, "allow-destructive", false, "allow faults that change a cluster the harness did not create (failover, slot-migration, slow-aof)")
	f.StringVar(&cf.toxiproxy, "toxiproxy", "", "drive an existing toxiproxy server (e.g. http://127.0.0.1:8474) instead of the embedded one")
	f.StringVar(&cf.ext.Username, "redis-user", "", "ACL user of an existing cluster (or "+compose.EnvRedisUsername+")")
	f.StringVar(&cf.ext.Password, "redis-password", "", "password of an existing cluster; prefer "+compose.EnvRedisPassword+" (a flag shows in ps)")
	f.StringVar(&cf.ext.CAFile, "tls-ca", "", "rediss://: CA certificate file")
	f.StringVar(&cf.ext.CertFile, "tls-cert", "", "rediss://: client certificate file")
	f.StringVar(&cf.ext.KeyFile, "tls-key", "", "rediss://: client key file")
	f.StringVar(&cf.ext.ServerName, "tls-server-name", "", "rediss://: server name to verify")
	f.BoolVar(&cf.ext.InsecureSkipVerify, "tls-insecure", false, "rediss://: do not verify the server certificate")
}

// stand is what a command stands on: the cluster, the proxies in front of
// it (when faults need them) and a hardened client.
type stand struct {
	cluster compose.Cluster
	proxies compose.Toxics // nil unless faults need them
	rdb     *redis.ClusterClient
	started time.Duration
}

// close ends the client, the proxies and (when the harness started it) the
// cluster; an existing cluster is only disconnected. Idempotent.
func (s *stand) close() {
	if s.rdb != nil {
		_ = s.rdb.Close()
		s.rdb = nil
	}
	if s.proxies != nil {
		_ = s.proxies.Close()
		s.proxies = nil
	}
	if s.cluster != nil {
		_ = s.cluster.Close()
		s.cluster = nil
	}
}

// startStand opens the cluster (starting it when it is local or docker) and
// a client whose pool fits `workers`; with proxied, toxiproxy sits in front
// of every node and the client dials through it. On error nothing is left
// running.
func startStand(ctx context.Context, log io.Writer, cf clusterFlags, workers int, proxied bool) (*stand, error) {
	if cf.masters < 1 || cf.replicas < 0 {
		return nil, fmt.Errorf("--masters must be at least 1 and --replicas at least 0 (got %d and %d)", cf.masters, cf.replicas)
	}
	t0 := time.Now()
	local := compose.Options{Masters: cf.masters, ReplicasPerMaster: replicasOpt(cf.replicas), NodeTimeout: cf.nodeTimeout,
		AppendOnly: cf.appendOnly, RedisServer: cf.redisServer}
	docker := compose.DockerOptions{Masters: cf.masters, ReplicasPerMaster: replicasOpt(cf.replicas), NodeTimeout: cf.nodeTimeout, AppendOnly: cf.appendOnly}
	cl, err := compose.OpenCluster(ctx, cf.spec, local, docker, cf.ext)
	if err != nil {
		return nil, err
	}
	s := &stand{cluster: cl, started: time.Since(t0)}
	opt := &redis.ClusterOptions{Addrs: cl.Addrs()}
	if ext, ok := cl.(*compose.ExternalCluster); ok {
		opt = ext.ClientOptions()
		fmt.Fprintf(log, "cluster: existing %s, %d nodes, reached in %.2fs (the harness will not stop, flush or scan it)\n", ext.Redacted(), len(cl.Addrs()), s.started.Seconds())
	} else {
		fmt.Fprintf(log, "cluster: %d masters x %d replicas (%s) on 127.0.0.1, ready in %.2fs\n", cf.masters, cf.replicas, cl.Provider(), s.started.Seconds())
	}
	opt.PoolSize = workers + 16
	opt.ContextTimeoutEnabled = true
	if proxied {
		px, err := compose.OpenToxics(cf.toxiproxy, cl)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("start the proxies: %w", err)
		}
		s.proxies = px
		opt.Dialer = compose.ProxiedDialer(px, opt.TLSConfig)
		where := "embedded toxiproxy"
		if cf.toxiproxy != "" {
			where = "toxiproxy server " + cf.toxiproxy
		}
		fmt.Fprintf(log, "proxies: %s in front of every node (client connections only)\n", where)
	}
	s.rdb = lua.NewClusterClient(opt)
	return s, nil
}

// topology describes the cluster as it is (an existing one from its nodes).
func (s *stand) topology(ctx context.Context, cf clusterFlags) reports.Topology {
	t := reports.Topology{Masters: cf.masters, ReplicasPerMaster: cf.replicas, Provider: s.cluster.Provider(),
		Nodes: s.cluster.Addrs(), Proxied: s.proxies != nil}
	if !s.cluster.Owned() {
		if nodes, err := s.cluster.Nodes(ctx); err == nil {
			m, r := 0, 0
			for _, n := range nodes {
				if n.Role == "master" {
					m++
				} else {
					r++
				}
			}
			t.Masters, t.ReplicasPerMaster = m, 0
			if m > 0 {
				t.ReplicasPerMaster = r / m
			}
		}
	}
	return t
}

// versions reports the harness, go-redis and Redis versions actually in use.
func versions(ctx context.Context, rdb *redis.ClusterClient, scripts *lua.Scripts) reports.Versions {
	v := reports.Versions{Harness: "dev", Go: runtime.Version(), Scripts: scripts.Origin}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Harness = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v.Harness += "+" + s.Value[:12]
			}
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/redis/go-redis/v9" {
				v.GoRedis = d.Version
			}
		}
	}
	if scripts.Origin == "embedded" {
		v.Scripts = "embedded reserve.lua " + scripts.Reserve.SHA1[:12]
	}
	_ = rdb.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return nil
		}
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "redis_version:") {
				v.Redis = strings.TrimSpace(strings.TrimPrefix(line, "redis_version:"))
			}
		}
		return nil
	})
	return v
}

func loadScripts(dir string) (*lua.Scripts, error) {
	if dir == "" {
		return lua.Embedded(), nil
	}
	return lua.LoadDir(dir)
}

// replicasOpt maps the CLI's replica count to compose's (0 there means the default).
func replicasOpt(n int) int {
	if n == 0 {
		return compose.NoReplicas
	}
	return n
}
