package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/buildinfo"
	"seckill-harness/lua"
	"seckill-harness/reports"
)

// ClusterSpec chooses the cluster a run stands on.
type ClusterSpec struct {
	Spec              string // local (default), docker, redis://…, rediss://…
	Masters, Replicas int    // of a local or docker cluster
	NodeTimeout       time.Duration
	AppendOnly        bool
	// RedisImage is the nodes' image of a docker cluster (--redis-image);
	// "" means $SECKILL_REDIS_IMAGE, else redis:7.0
	// (compose.ResolveDockerImage). Refused with any other cluster.
	RedisImage string
	// PoolSize is the load client's connection pool per node; 0: the
	// workers plus 16 spare, so no worker waits for a connection. A pool
	// smaller than the concurrency makes workers queue for connections
	// (pool wait time, pool timeouts: report.json's pool section).
	PoolSize int
	// PoolTimeout is how long a worker waits for a free connection; 0:
	// go-redis's default (read timeout + 1s).
	PoolTimeout      time.Duration
	RedisServer      string // path of redis-server for a local cluster ("" = PATH)
	AllowDestructive bool   // destructive faults on a cluster the harness did not create
	Toxiproxy        string // "" embedded, else a toxiproxy server's API URL
	// ReplicationProxies routes every replica's replication stream through
	// a proxy of its own (local clusters), so replica-lag and
	// replica-partition can act on it while client traffic is untouched.
	ReplicationProxies bool
	// ServiceRouting makes the nodes of a local cluster announce their
	// client proxies (compose.Options.AnnounceClientProxies), which become
	// the stand's Proxies: a service that is handed Stand.Seeds learns
	// only proxied addresses, so the faults on the proxies reach its
	// traffic without changes to its code. Replication then passes the
	// same proxies (docs/SERVICE_ROUTING.md); refused with
	// ReplicationProxies, a remote toxiproxy and clusters the harness does
	// not start locally.
	ServiceRouting bool
	// ExtraConfig lines go verbatim into every node's redis.conf of a
	// local cluster (e.g. "min-replicas-to-write 1"), so a restarted node
	// keeps them, and onto every container's redis-server command line of
	// a docker one ("--min-replicas-to-write 1"). A cluster the harness
	// did not start (redis://…) is refused with them: the harness does not
	// reconfigure somebody else's cluster.
	ExtraConfig []string
	External    compose.ExternalOptions
}

// Shared reports whether the spec names a cluster other processes reach
// (redis:// or rediss://), as split generators and verify need.
func (c ClusterSpec) Shared() bool {
	return strings.HasPrefix(c.Spec, "redis://") || strings.HasPrefix(c.Spec, "rediss://")
}

// Stand is what a run stands on: the cluster, the proxies in front of it
// (when faults need them) and a hardened client.
type Stand struct {
	Cluster compose.Cluster
	Proxies compose.Toxics // nil unless faults need them
	Client  *redis.ClusterClient
	Started time.Duration // how long the cluster took to be ready
	// Postgres, when set, holds the pipeline's order tables: each run gets
	// its own schema in it, dropped after the run. Nil: a run with the
	// pipeline starts a throwaway local PostgreSQL of its own. The stand
	// does not close it.
	Postgres *pgxpool.Pool
	// PoolSize is the client's connection pool per node.
	PoolSize int
	// Settled is how long WaitSettled waited for the topology of a
	// cluster the harness did not create to settle; nil: it did not wait
	// (the harness formed the cluster and waited for it itself).
	Settled *time.Duration
	spec    ClusterSpec
	log     *slog.Logger
}

// Close ends the client, the proxies and (when the harness started it) the
// cluster; an existing cluster is only disconnected. Idempotent.
func (s *Stand) Close() {
	if s.Client != nil {
		_ = s.Client.Close()
		s.Client = nil
	}
	if s.Proxies != nil {
		_ = s.Proxies.Close()
		s.Proxies = nil
	}
	if s.Cluster != nil {
		owned, provider, nodes := s.Cluster.Owned(), s.Cluster.Provider(), len(s.Cluster.Addrs())
		err := s.Cluster.Close()
		s.Cluster = nil
		switch {
		case !owned:
			s.logger().Info("cluster: disconnected from the existing cluster (left running)")
		case err != nil:
			s.logger().Warn("cluster: stop", "provider", provider, "nodes", nodes, "err", err)
		default:
			s.logger().Info("cluster: stopped and removed", "provider", provider, "nodes", nodes)
		}
	}
}

// clusterKind names the kind of cluster a spec chooses, without its
// address or credentials.
func clusterKind(spec string) string {
	switch s := strings.TrimSpace(spec); {
	case s == "" || s == compose.ProviderLocal:
		return "local (redis-server processes)"
	case strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://"):
		return "an existing one (" + s[:strings.Index(s, ":")] + "://…)"
	}
	return "not docker"
}

func (s *Stand) logger() *slog.Logger {
	if s.log == nil {
		return discardLogger
	}
	return s.log
}

// Caps on the stand's counts, each a flag a typo can make huge: past them
// the run is refused at once (exit 2) instead of starting processes or
// dialling until the machine runs out of memory or file descriptors.
const (
	// MaxMasters and MaxReplicas bound a cluster the harness starts on
	// this machine: 64 masters with 5 replicas each are 384 redis-server
	// processes and as many proxies, already far more than the cores.
	MaxMasters  = 64
	MaxReplicas = 5
	// MaxPoolSize bounds --pool-size, the load client's connections per
	// node (each a file descriptor, times the nodes).
	MaxPoolSize = 10_000
)

// Validate refuses counts and waits the stand cannot have (the caps
// above), naming the flag and the fix. Execute calls it before anything
// is written or started; OpenStand again.
func (cf ClusterSpec) Validate() error {
	if cf.Masters < 1 || cf.Replicas < 0 {
		return fmt.Errorf("--masters must be at least 1 and --replicas at least 0 (got %d and %d)", cf.Masters, cf.Replicas)
	}
	if cf.Masters > MaxMasters || cf.Replicas > MaxReplicas {
		return fmt.Errorf("--masters %d --replicas %d: at most %d masters and %d replicas per master on a stand the harness starts (each node is a redis-server process with a proxy in front, all on this machine); a larger cluster is one you run: --cluster redis://host:port", cf.Masters, cf.Replicas, MaxMasters, MaxReplicas)
	}
	if cf.PoolSize < 0 || cf.PoolSize > MaxPoolSize {
		return fmt.Errorf("--pool-size %d: want 0 (one connection per worker plus spares) or a number of connections per node up to %d (each is a file descriptor, on every node)", cf.PoolSize, MaxPoolSize)
	}
	if cf.PoolTimeout < 0 {
		return fmt.Errorf("--pool-timeout %s: want 0 (go-redis's default) or a positive wait", cf.PoolTimeout)
	}
	return nil
}

// OpenStand opens the cluster (starting it when it is local or docker) and
// a client whose pool fits `workers`; with proxied, toxiproxy sits in front
// of every node and the client dials through it. On error nothing is left
// running.
// log (nil: discarded) receives the cluster's start, reach and stop.
func OpenStand(ctx context.Context, log *slog.Logger, cf ClusterSpec, workers int, proxied bool) (*Stand, error) {
	if log == nil {
		log = discardLogger
	}
	if err := cf.Validate(); err != nil {
		return nil, err
	}
	if cf.Spec == "" {
		cf.Spec = "local"
	}
	if strings.TrimSpace(cf.RedisImage) != "" && strings.TrimSpace(cf.Spec) != compose.ProviderDocker {
		return nil, fmt.Errorf("--redis-image %s sets the image of the nodes the harness starts in Docker: it needs --cluster docker, and this run's cluster is %s; drop --redis-image, or add --cluster docker", cf.RedisImage, clusterKind(cf.Spec))
	}
	t0 := time.Now()
	local := compose.Options{Masters: cf.Masters, ReplicasPerMaster: replicasOpt(cf.Replicas), NodeTimeout: cf.NodeTimeout,
		AppendOnly: cf.AppendOnly, RedisServer: cf.RedisServer, ReplicationProxies: cf.ReplicationProxies,
		ExtraConfig: cf.ExtraConfig, AnnounceClientProxies: cf.ServiceRouting}
	if err := refuseServiceRouting(cf); err != nil {
		return nil, err
	}
	if err := refuseConfigOnOutsideCluster(cf); err != nil {
		return nil, err
	}
	docker := compose.DockerOptions{Masters: cf.Masters, ReplicasPerMaster: replicasOpt(cf.Replicas), NodeTimeout: cf.NodeTimeout, AppendOnly: cf.AppendOnly,
		Image: cf.RedisImage, ExtraArgs: redisConfigArgs(cf.ExtraConfig)}
	cl, err := compose.OpenCluster(ctx, cf.Spec, local, docker, cf.External)
	if err != nil {
		return nil, err
	}
	s := &Stand{Cluster: cl, Started: time.Since(t0), spec: cf, log: log}
	opt := &redis.ClusterOptions{Addrs: cl.Addrs()}
	if ext, ok := cl.(*compose.ExternalCluster); ok {
		opt = ext.ClientOptions()
		log.Info(fmt.Sprintf("cluster: existing %s, %d nodes, reached in %.2fs (the harness will not stop, flush or scan it)", ext.Redacted(), len(cl.Addrs()), s.Started.Seconds()))
	} else {
		provider := cl.Provider()
		if dc, ok := cl.(*compose.DockerCluster); ok {
			provider += ", image " + dc.Image()
		}
		log.Info(fmt.Sprintf("cluster: %d masters x %d replicas (%s) on 127.0.0.1, ready in %.2fs", cf.Masters, cf.Replicas, provider, s.Started.Seconds()))
	}
	opt.PoolSize = workers + 16
	if cf.PoolSize > 0 {
		opt.PoolSize = cf.PoolSize
		log.Info(fmt.Sprintf("client: pool of %d connection(s) per node for %d worker(s)", cf.PoolSize, workers))
	}
	if cf.PoolTimeout > 0 {
		opt.PoolTimeout = cf.PoolTimeout
	}
	s.PoolSize = opt.PoolSize
	opt.ContextTimeoutEnabled = true
	if d := compose.AnnouncedDialer(cl); d != nil {
		opt.Dialer = d // nodes announce their replication proxies' ports: dial the real ones
	}
	if s.routeThroughAnnounced(opt) {
		proxied = false
	}
	if proxied {
		px, err := compose.OpenToxics(cf.Toxiproxy, cl)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("start the proxies: %w", err)
		}
		s.Proxies = px
		opt.Dialer = compose.ProxiedDialer(px, opt.TLSConfig)
		where := "embedded toxiproxy"
		if cf.Toxiproxy != "" {
			where = "toxiproxy server " + cf.Toxiproxy
		}
		log.Info(fmt.Sprintf("proxies: %s in front of every node (client connections only)", where))
	}
	s.Client = lua.NewClusterClient(opt)
	return s, nil
}

// routeThroughAnnounced makes the proxies the nodes announce
// (ClusterSpec.ServiceRouting) the stand's Proxies and dials opt through
// them; false when the stand has no such proxies.
func (s *Stand) routeThroughAnnounced(opt *redis.ClusterOptions) bool {
	cr, ok := s.Cluster.(compose.ClientRouting)
	if !ok || !s.spec.ServiceRouting {
		return false
	}
	px, on := cr.ClientToxics()
	if !on {
		return false
	}
	s.Proxies = px // owned by the cluster; Stand.Close closes it first (idempotent)
	opt.Dialer = compose.ProxiedDialer(px, opt.TLSConfig)
	s.logger().Info("proxies: embedded toxiproxy in front of every node, announced by the nodes (the service's and the harness's client connections; replication too)")
	return true
}

// WaitSettled waits, on a cluster the harness did not create, for its
// topology to settle and show need (compose.WaitSettled, bounded by the
// external options' ReadyTimeout, else compose.DefaultSettleTimeout),
// logs how long it waited and keeps that in Settled (report.json's
// topology.settle_wait_ms). A cluster the harness formed was waited for
// when it was formed: nil at once. The error names what never settled
// and the fix.
func (s *Stand) WaitSettled(ctx context.Context, need compose.TopologyNeeds) error {
	if s.Cluster.Owned() {
		return nil
	}
	st, err := compose.WaitSettled(ctx, s.Cluster, need, s.spec.External.ReadyTimeout)
	if err != nil {
		return err
	}
	s.Settled = &st.Waited
	s.logger().Info(fmt.Sprintf("cluster: topology settled after %.2fs: every node agrees on %d masters with at least %d replica(s) each, cluster_state:ok, every slot covered",
		st.Waited.Seconds(), st.Masters, st.MinReplicas))
	return nil
}

// Topology describes the cluster as it is (an existing one from its nodes).
func (s *Stand) Topology(ctx context.Context) reports.Topology {
	t := reports.Topology{Masters: s.spec.Masters, ReplicasPerMaster: s.spec.Replicas, Provider: s.Cluster.Provider(),
		Nodes: s.Cluster.Addrs(), Proxied: s.Proxies != nil}
	if s.Settled != nil {
		ms := s.Settled.Milliseconds()
		t.SettleWaitMs = &ms
	}
	if !s.Cluster.Owned() || t.Masters == 0 {
		if nodes, err := s.Cluster.Nodes(ctx); err == nil {
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

// Versions reports the harness, go-redis and Redis versions actually in use.
func Versions(ctx context.Context, rdb *redis.ClusterClient, scripts *lua.Scripts) reports.Versions {
	bi := buildinfo.Read()
	v := reports.Versions{Harness: "dev", Go: bi.GoVersion, GoRedis: bi.GoRedis, Scripts: scripts.Origin}
	if bi.Version != "" && bi.Version != "(devel)" {
		v.Harness = bi.Version
	}
	if len(bi.Revision) >= 12 {
		v.Harness += "+" + bi.Revision[:12]
	}
	if scripts.Origin == "embedded" {
		v.Scripts = "embedded reserve.lua " + scripts.Reserve.SHA1[:12]
	}
	// ForEachShard calls the function on every shard at once: the version
	// is written under a lock (the race detector caught the bare write).
	var mu sync.Mutex
	_ = rdb.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return nil
		}
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "redis_version:") {
				mu.Lock()
				v.Redis = strings.TrimSpace(strings.TrimPrefix(line, "redis_version:"))
				mu.Unlock()
			}
		}
		return nil
	})
	return v
}

// LoadScripts reads the team's scripts from dir, or the embedded ones ("").
func LoadScripts(dir string) (*lua.Scripts, error) {
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

// redisConfigArgs turns redis.conf lines ("min-replicas-to-write 1") into
// redis-server arguments ("--min-replicas-to-write", "1"), in order (a
// later one overrides an earlier one of the same name, as in redis.conf).
func redisConfigArgs(lines []string) []string {
	var args []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		args = append(args, "--"+f[0])
		args = append(args, f[1:]...)
	}
	return args
}

// refuseConfigOnOutsideCluster refuses redis.conf settings (the topology's
// min_replicas_to_write, min_replicas_max_lag, appendfsync) on a cluster
// the harness did not start: it would have to CONFIG SET every node of
// somebody else's cluster (and the setting would outlive a crash of the
// harness). The error names each setting and the fix.
func refuseConfigOnOutsideCluster(cf ClusterSpec) error {
	if !cf.Shared() || len(cf.ExtraConfig) == 0 {
		return nil
	}
	var settings, sets []string
	for _, l := range cf.ExtraConfig {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		settings = append(settings, fmt.Sprintf("topology.%s (%s)", strings.ReplaceAll(f[0], "-", "_"), l))
		sets = append(sets, "CONFIG SET "+l)
	}
	return fmt.Errorf("--cluster %s: the harness does not change the configuration of a cluster it did not start, and this run sets %s: "+
		"set them on the cluster yourself (%s on every master and replica, and in their redis.conf), then drop them from the scenario or --set; "+
		"or run on a cluster the harness starts (--cluster local or docker)",
		redactedSpec(cf.Spec), strings.Join(settings, ", "), strings.Join(sets, ", "))
}

// redactedSpec is a cluster spec without its credentials.
func redactedSpec(spec string) string {
	if u, err := url.Parse(spec); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	if strings.Contains(spec, "@") {
		return "redis://…"
	}
	return spec
}
