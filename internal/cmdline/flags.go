package cmdline

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/runner/lifecycle"
)

// ClusterFlags registers on f the flags of the cluster and its proxies
// (--cluster, --masters, ..., the TLS flags of an existing cluster) into
// cf, with the defaults every command shares.
func ClusterFlags(f *pflag.FlagSet, cf *lifecycle.ClusterSpec) {
	f.StringVar(&cf.Spec, "cluster", "local", "where to run: local (redis-server processes the harness starts and removes), docker (containers, needs a Docker engine), or an existing cluster redis://[user@]host:port[,host:port...] (rediss:// for TLS); credentials of an existing cluster preferably from "+compose.EnvRedisUsername+" / "+compose.EnvRedisPassword)
	f.IntVar(&cf.Masters, "masters", 3, "masters of a local or docker cluster")
	f.IntVar(&cf.Replicas, "replicas", 1, "replicas per master of a local or docker cluster (0: none)")
	f.DurationVar(&cf.NodeTimeout, "node-timeout", 2*time.Second, "cluster-node-timeout of a local or docker cluster")
	f.BoolVar(&cf.AppendOnly, "appendonly", false, "start the local or docker nodes with appendonly yes")
	f.StringVar(&cf.RedisImage, "redis-image", "", "--cluster docker: image of the nodes (needs redis-server and redis-cli); default $"+compose.RedisImageEnv+", else "+compose.DefaultDockerImage)
	f.DurationVar(&cf.PoolTimeout, "pool-timeout", 0, "how long a worker waits for a free connection before a pool timeout (0: go-redis's default)")
	f.IntVar(&cf.PoolSize, "pool-size", 0, "load client connections per node (0: concurrency + 16); below the concurrency workers queue for connections")
	f.StringVar(&cf.RedisServer, "redis-server", "", "path of redis-server for a local cluster (default: found on PATH)")
	f.BoolVar(&cf.AllowDestructive, "allow-destructive", false, "allow faults that change a cluster the harness did not create ("+strings.Join(faults.DestructiveKinds(), ", ")+")")
	f.StringVar(&cf.Toxiproxy, "toxiproxy", "", "drive an existing toxiproxy server (e.g. http://127.0.0.1:8474) instead of the embedded one")
	f.StringVar(&cf.External.Username, "redis-user", "", "ACL user of an existing cluster (or "+compose.EnvRedisUsername+")")
	f.StringVar(&cf.External.Password, "redis-password", "", "password of an existing cluster; prefer "+compose.EnvRedisPassword+" (a flag shows in ps)")
	f.StringVar(&cf.External.CAFile, "tls-ca", "", "rediss://: CA certificate file")
	f.StringVar(&cf.External.CertFile, "tls-cert", "", "rediss://: client certificate file")
	f.StringVar(&cf.External.KeyFile, "tls-key", "", "rediss://: client key file")
	f.StringVar(&cf.External.ServerName, "tls-server-name", "", "rediss://: server name to verify")
	f.BoolVar(&cf.External.InsecureSkipVerify, "tls-insecure", false, "rediss://: do not verify the server certificate")
}

// Given maps the flags set on the command line to their values, as
// scenarios.Flags.Given wants them.
func Given(fs *pflag.FlagSet) map[string]string {
	given := map[string]string{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = f.Value.String() })
	return given
}

// AdapterFlag registers --adapter (run, compare, capacity): a contract
// adapter file that puts a team's own reserve script under test
// (runner/planner passes it on as Overrides.Adapter).
func AdapterFlag(f *pflag.FlagSet, file *string) {
	f.StringVar(file, "adapter", "", "contract adapter file (YAML, docs/ADAPTERS.md): run a team's own reserve script instead of the reference (check it first with 'seckill-harness adapter validate FILE'; not with --path, --lua-dir, --pipeline or --generator)")
}

// StrictPreflightFlag registers --strict-preflight (run): every finding
// of the adapter file's pre-flight refuses the load, as the file's
// preflight: strict (runner/planner passes it on as
// Overrides.StrictPreflight).
func StrictPreflightFlag(f *pflag.FlagSet, strict *bool) {
	f.BoolVar(strict, "strict-preflight", false, "with --adapter: refuse the load on every pre-flight finding (check A1), as the file's 'preflight: strict'; without it the load is refused only for what Redis itself refused on a sample call (CROSSSLOT, a key on another node, a script error)")
}

// ServiceChild is what --service-cmd and --service-ready say (runner/planner
// passes them on as Overrides.ServiceCmd and ServiceReady).
type ServiceChild struct{ Cmd, Ready string }

// ServiceChildFlags registers --service-cmd and --service-ready (run): the
// access service under test started as a child of the run.
func ServiceChildFlags(f *pflag.FlagSet, s *ServiceChild) {
	f.StringVar(&s.Cmd, "service-cmd", "", "start the access service under test as a child: sh -c CMD in its own process group, with SECKILL_LISTEN (a free 127.0.0.1 port), SECKILL_REDIS_ADDRS (the nodes' proxies: its Redis traffic goes through the faults), SECKILL_SECRET, the run's sale (SECKILL_ACTIVITY, SECKILL_SKU, SECKILL_STOCK, SECKILL_BUCKETS) and, with the pipeline, SECKILL_PG_URL; the mapping's setup: calls are sent once it is ready; stopped by its process group at the end; faults service-kill|pause|restart act on it (overrides a scenario's service_cmd; local cluster only, docs/SERVICE_ROUTING.md)")
	f.StringVar(&s.Ready, "service-ready", "", "with --service-cmd: the URL polled until it answers 200 before the load (default http://SECKILL_LISTEN/healthz)")
}

// ServiceFlags are run's --service and --service-mapping.
type ServiceFlags struct{ URL, Mapping string }

// ServiceFlag registers --service URL and --service-mapping FILE (run): a
// running access service put under test over HTTP (runner/planner passes
// them on as Overrides.Service and Overrides.ServiceMapping).
func ServiceFlag(f *pflag.FlagSet, s *ServiceFlags) {
	f.StringVar(&s.URL, "service", "", "base URL of a running access service to put under test over HTTP, e.g. http://127.0.0.1:8080 (docs/SERVICE.md; not with --path, --adapter, --lua-dir or --generator)")
	f.StringVar(&s.Mapping, "service-mapping", "", "with --service: the service mapping file (YAML, docs/SERVICE.md): its endpoints, answer fields, codes, timeout, retry policy, state: reference, and the setup: and teardown: calls that create and remove the run's sale through the service's API (default: the HTTP contract)")
}
