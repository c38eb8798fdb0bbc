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
	masters, replicas int
	nodeTimeout       time.Duration
	appendOnly        bool
	redisServer       string
}

// addClusterFlags registers the flags of the local cluster.
func addClusterFlags(f *pflag.FlagSet, cf *clusterFlags) {
	f.IntVar(&cf.masters, "masters", 3, "masters of the local cluster")
	f.IntVar(&cf.replicas, "replicas", 1, "replicas per master (0: none)")
	f.DurationVar(&cf.nodeTimeout, "node-timeout", 2*time.Second, "cluster-node-timeout of the local cluster")
	f.BoolVar(&cf.appendOnly, "appendonly", false, "start the local nodes with appendonly yes")
	f.StringVar(&cf.redisServer, "redis-server", "", "path of redis-server (default: found on PATH)")
}

// stand is what a command stands on: the cluster it started and a hardened client.
type stand struct {
	cluster *compose.LocalCluster
	proxies *compose.Proxies // nil unless faults need them
	rdb     *redis.ClusterClient
	started time.Duration
}

// close ends the client and every process the stand started. Idempotent.
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

// startStand starts a local cluster and a client whose pool fits `workers`;
// with proxied, an embedded toxiproxy sits in front of every node and the
// client dials through it. On error nothing is left running.
func startStand(ctx context.Context, log io.Writer, cf clusterFlags, workers int, proxied bool) (*stand, error) {
	if cf.masters < 1 || cf.replicas < 0 {
		return nil, fmt.Errorf("--masters must be at least 1 and --replicas at least 0 (got %d and %d)", cf.masters, cf.replicas)
	}
	t0 := time.Now()
	cl, err := compose.Start(ctx, compose.Options{Masters: cf.masters, ReplicasPerMaster: replicasOpt(cf.replicas), NodeTimeout: cf.nodeTimeout, AppendOnly: cf.appendOnly, RedisServer: cf.redisServer})
	if err != nil {
		return nil, err
	}
	s := &stand{cluster: cl, started: time.Since(t0)}
	fmt.Fprintf(log, "cluster: %d masters x %d replicas of redis-server on 127.0.0.1, ready in %.2fs\n", cf.masters, cf.replicas, s.started.Seconds())
	opt := &redis.ClusterOptions{
		Addrs:                 cl.Addrs(),
		PoolSize:              workers + 16,
		ContextTimeoutEnabled: true,
	}
	if proxied {
		px, err := compose.NewProxies(cl)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("start the proxies: %w", err)
		}
		s.proxies = px
		opt.Dialer = px.Dialer()
		fmt.Fprintf(log, "proxies: embedded toxiproxy in front of every node (client connections only)\n")
	}
	s.rdb = lua.NewClusterClient(opt)
	return s, nil
}

func (s *stand) topology(cf clusterFlags) reports.Topology {
	return reports.Topology{Masters: cf.masters, ReplicasPerMaster: cf.replicas, Provider: "local", Nodes: s.cluster.Addrs(), Proxied: s.proxies != nil}
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
