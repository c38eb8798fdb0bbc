// Package compose provides what the run stands on: the Redis Cluster the
// seckill harness runs against and the toxiproxy layer in front of it.
//
// # Clusters
//
// Everything the faults and the CLI need of a cluster is the [Cluster]
// interface: topology (Addrs, Nodes, MasterOfSlot, ReplicasOf, NodeByAddr,
// NodeByID, SlotOwners, WaitSlotOwner, OpenSlots), direct admin clients
// (Admin), WaitHealthy, Close, Owned and Provider. Process control (Kill,
// Stop, Pause, Resume, Restart) is the optional [ProcessController], found
// with [ProcessControl] (a type assertion, as [LogTailer] is): a cluster
// without it makes process-level faults refuse with [ErrNoProcessControl].
// Three kinds implement Cluster:
//
//   - [LocalCluster] ([Start], provider "local", the default): child
//     redis-server processes on 127.0.0.1, owned, with process control by
//     signals.
//   - [DockerCluster] ([StartDocker], provider "docker"): redis containers
//     started with testcontainers-go on the host network, owned, with process
//     control through the Docker API. Needs a Docker engine ([DockerAvailable]).
//   - [ExternalCluster] ([ConnectExternal], provider "external"): somebody
//     else's cluster named by a redis:// or rediss:// spec (credentials, TLS),
//     not owned, no process control. [ExternalCluster.ClientOptions] gives the
//     CLI its client options; [ExternalCluster.Redacted] is the printable name.
//
// The faults package's CheckAllowed refuses destructive faults against a
// cluster that is not Owned (unless allowed) and process-level faults where
// there is no process control.
//
// # Toxiproxy
//
// [Toxics] is what faults use of toxiproxy: [Proxies] embeds a toxiproxy
// server in the harness ([NewProxies]); [RemoteProxies] drives an existing
// toxiproxy server over its HTTP API ([NewRemoteProxies]). Either way only
// the harness's client connections are proxied (via the Dialer; wrap it with
// [ProxiedDialer] for TLS); the cluster bus never is.
//
// # Replication through proxies
//
// A local cluster started with Options.ReplicationProxies routes every
// replica's replication stream through a proxy of its master's own: each
// node announces its proxy's port (cluster-announce-port) and its real bus
// port, so replicas replicate through the proxy and the bus stays direct.
// [LocalCluster.ReplicationToxics] exposes those proxies (keyed by the real
// address of the node that sends the stream) for faults on the stream only.
// Clients see the announced ports in CLUSTER SLOTS, MOVED and ASK: a
// [Toxics] Dialer maps them to the node's client proxy
// ([AnnouncedAddrs]), [AnnouncedDialer] to the real port; Addrs, Nodes and
// Admin always use the real addresses. [ReadReplicationLag] and
// [SampleReplicationLag] measure each replica's offset lag and link status.
//
// # Local cluster
//
// [Start] launches Masters×(1+ReplicasPerMaster) redis-server processes, each
// with its own temporary directory (redis.conf, nodes.conf, redis.log, AOF),
// listening on 127.0.0.1 only, on free ports picked at start time. The cluster
// is formed without redis-cli, with plain go-redis clients: CLUSTER
// SET-CONFIG-EPOCH, CLUSTER ADDSLOTSRANGE (16384 slots split evenly, the way
// redis-cli does), CLUSTER MEET, CLUSTER REPLICATE, then
// [LocalCluster.WaitHealthy].
//
// The processes are children of the harness: they are started with
// Pdeathsig=SIGKILL so they die with the harness, every one of them is waited
// for by a goroutine (no zombies; exits are noticed), and only these PIDs are
// ever signalled. Faults are injected per node address with
// [LocalCluster.Kill] (SIGKILL), [LocalCluster.Stop] (SIGTERM),
// [LocalCluster.Pause] (SIGSTOP), [LocalCluster.Resume] (SIGCONT) and
// [LocalCluster.Restart] (same port, dir and nodes.conf, so the node keeps its
// cluster identity and rejoins). [LocalCluster.Close] ends everything it
// started and removes the directories.
//
// All methods of [LocalCluster] are safe for concurrent use.
//
// # PostgreSQL
//
// The order stage's database. [StartLocalPostgres] is a throwaway server:
// initdb (as the postgres user when the harness is root: initdb refuses
// root) into a temporary directory, the postmaster started directly (no
// pg_ctl) with Pdeathsig=SIGINT so it shuts down with a dying harness,
// listening on 127.0.0.1 on a free port with its socket in the directory;
// [LocalPostgres.Close] stops it (SIGINT, SIGKILL after 10 s, by PID only)
// and removes the directory. Missing binaries are [ErrPostgresMissing],
// naming the fix (apt-get install -y postgresql, make deps).
// [OpenPostgres] opens an existing database (postgres:// URL, key=value, or
// the PG* environment) and creates the run's own schema seckill_run_<id>,
// dropped at [PostgresDB.Close]; credentials are never printed
// ([PostgresDB.Redacted]). [StartPostgresDB] is both: a local server and a
// run schema in it, closed together.
//
// compose/docker-compose.yml is a ready 3×1 cluster plus a toxiproxy server
// for `--cluster redis://127.0.0.1:7001 --toxiproxy http://127.0.0.1:8474`;
// see compose/README.md.
package compose
