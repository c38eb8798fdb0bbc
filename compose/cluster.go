package compose

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Providers, as returned by Cluster.Provider and reported in
// report.json's topology.provider.
const (
	ProviderLocal    = "local"    // child redis-server processes (Start)
	ProviderDocker   = "docker"   // containers started with testcontainers-go (StartDocker)
	ProviderExternal = "external" // a cluster the harness did not create (ConnectExternal)
)

// ErrNoProcessControl is wrapped by the refusals of process-level faults
// on a cluster without [ProcessController] (its node processes are not the
// harness's).
var ErrNoProcessControl = errors.New("the harness did not start this node's process: " +
	"process-level faults need a cluster it started (--cluster local)")

// ErrNotOwned marks refusals to change a cluster the harness does not own.
var ErrNotOwned = errors.New("the cluster is not owned by the harness")

// Cluster is what the faults and the CLI need of the Redis Cluster a run
// stands on, whoever created it: [LocalCluster] (child processes),
// [DockerCluster] (containers) or [ExternalCluster] (someone else's).
//
// Node addresses are the ones the cluster itself announces (CLUSTER NODES),
// which is also what a go-redis ClusterClient dials.
type Cluster interface {
	// Provider is ProviderLocal, ProviderDocker or ProviderExternal.
	Provider() string
	// Owned reports whether the harness created the cluster: only then may
	// it flush data, change configuration freely and tear everything down.
	Owned() bool

	// Addrs returns the seed addresses of every known node (a fresh slice).
	Addrs() []string
	// Nodes returns the current topology, as one reachable node sees it.
	Nodes(ctx context.Context) ([]Node, error)
	// NodeByAddr returns the node at addr (fresh view if possible, else the
	// last known one) and whether addr belongs to the cluster.
	NodeByAddr(addr string) (Node, bool)
	// NodeByID returns the node with the given cluster node id.
	NodeByID(ctx context.Context, id string) (Node, error)
	// MasterOfSlot returns the master that currently owns slot.
	MasterOfSlot(ctx context.Context, slot int) (Node, error)
	// ReplicasOf returns the replicas of the master with id masterID.
	ReplicasOf(ctx context.Context, masterID string) ([]Node, error)
	// SlotOwners maps every reachable node's address to the id of the master
	// it believes owns slot.
	SlotOwners(ctx context.Context, slot int) (map[string]string, error)
	// WaitSlotOwner waits until every reachable node names ownerID as the
	// owner of slot.
	WaitSlotOwner(ctx context.Context, slot int, ownerID string) error
	// OpenSlots lists the MIGRATING/IMPORTING marks of every reachable node.
	OpenSlots(ctx context.Context) ([]OpenSlot, error)
	// Admin returns a direct (never proxied) single-node client for
	// administrative commands, with the cluster's credentials and TLS
	// settings. It is owned by the cluster: do not Close it. It fails
	// (wrapping ErrNotRunning) when the harness knows the node is down or
	// paused.
	Admin(addr string) (*redis.Client, error)
	// WaitHealthy waits until the cluster is healthy (cluster_state:ok, all
	// slots covered, all reachable nodes agree on the topology, replicas
	// linked).
	WaitHealthy(ctx context.Context) error
	// Close releases what the harness holds: for an owned cluster it tears
	// the cluster down; for an external one it only closes the admin
	// clients. Idempotent.
	Close() error
}

// ProcessController is implemented by clusters whose node processes the
// harness started ([LocalCluster], [DockerCluster]): it can signal, stop
// and restart them. A cluster without it ([ExternalCluster]) offers only
// what Cluster does; find it with [ProcessControl].
type ProcessController interface {
	// Kill ends the node's process at once (SIGKILL). Idempotent.
	Kill(addr string) error
	// Stop shuts the node down gracefully. Idempotent.
	Stop(addr string) error
	// Pause freezes the node (SIGSTOP or a frozen container).
	Pause(addr string) error
	// Resume undoes Pause. Idempotent.
	Resume(addr string) error
	// Restart starts the node again with its identity (nodes.conf) kept.
	Restart(ctx context.Context, addr string) error
}

// ProcessControl returns c's process control and true, or nil and false
// when the harness cannot act on c's node processes (then a process-level
// fault refuses with an error wrapping ErrNoProcessControl).
func ProcessControl(c Cluster) (ProcessController, bool) {
	pc, ok := c.(ProcessController)
	return pc, ok
}

// HasProcessControl reports whether c has a [ProcessController].
func HasProcessControl(c Cluster) bool {
	_, ok := ProcessControl(c)
	return ok
}

// LogTailer is implemented by clusters that can show a node's log.
type LogTailer interface {
	NodeLogTail(addr string, n int) string
}

// MigrateAuther is implemented by clusters whose nodes need credentials:
// MigrateAuth returns the AUTH / AUTH2 arguments of MIGRATE (nil when no
// authentication is configured). The result holds the password: never log it.
type MigrateAuther interface {
	MigrateAuth() []any
}

// Compile-time checks.
var (
	_ Cluster           = (*LocalCluster)(nil)
	_ LogTailer         = (*LocalCluster)(nil)
	_ ProcessController = (*LocalCluster)(nil)
	_ Cluster           = (*ExternalCluster)(nil)
	_ Cluster           = (*DockerCluster)(nil)
	_ LogTailer         = (*DockerCluster)(nil)
	_ ProcessController = (*DockerCluster)(nil)
)

// Provider implements Cluster: "local".
func (c *LocalCluster) Provider() string { return ProviderLocal }

// Owned implements Cluster: the harness started every process.
func (c *LocalCluster) Owned() bool { return true }

// nodesMasterOfSlot, nodesReplicasOf and nodesByID are the topology queries
// shared by the cluster kinds, over a Nodes view.
func nodesMasterOfSlot(nodes []Node, slot int) (Node, error) {
	for _, n := range nodes {
		if n.Role == "master" && n.HasSlot(slot) {
			return n, nil
		}
	}
	return Node{}, errNoMasterOwns(slot)
}

func nodesReplicasOf(nodes []Node, masterID string) []Node {
	var out []Node
	for _, n := range nodes {
		if n.Role == "replica" && n.MasterID == masterID {
			out = append(out, n)
		}
	}
	return out
}

func nodesByID(nodes []Node, id string) (Node, error) {
	for _, n := range nodes {
		if n.ID == id {
			return n, nil
		}
	}
	return Node{}, errors.New("compose: no node with id " + id)
}

func errNoMasterOwns(slot int) error { return fmt.Errorf("compose: no master owns slot %d", slot) }
