// Package compose provides what the run stands on: the infrastructure the
// seckill harness runs against.
//
// Today that is a local Redis Cluster made of real child redis-server
// processes (see [Start] and [LocalCluster]); later a toxiproxy layer in front
// of those nodes and testcontainers-based variants are meant to live here too.
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
package compose
