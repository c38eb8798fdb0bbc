package compose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrRedisServerMissing is returned (wrapped) by [Start] when the redis-server
// binary cannot be found: neither Options.RedisServer nor $PATH yields an
// executable.
var ErrRedisServerMissing = errors.New("compose: redis-server binary not found: install it with `apt-get install -y redis-server` (Debian/Ubuntu) or give its path (--redis-server PATH, Options.RedisServer)")

// ErrClosed is returned by operations on a [Cluster] after Close.
var ErrClosed = errors.New("compose: cluster is closed")

// ErrNotRunning is returned (wrapped) by operations that need a running
// node process, e.g. [LocalCluster.Pause] on a killed node.
var ErrNotRunning = errors.New("compose: node is not running")

// NoReplicas is the value of Options.ReplicasPerMaster that asks for a cluster
// without replicas (the zero value means "default", i.e. 1 replica).
const NoReplicas = -1

// Options configures [Start]. The zero value is a valid configuration: 3
// masters with 1 replica each, cluster-node-timeout 2000ms, no AOF.
type Options struct {
	// Masters is the number of master nodes; 0 means 3.
	Masters int
	// ReplicasPerMaster is the number of replicas of each master; 0 means
	// the default of 1. Use NoReplicas (any negative value) for none.
	ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout; 0 means 2000ms. It drives failure
	// detection and therefore how fast an automatic failover happens.
	NodeTimeout time.Duration
	// AppendOnly sets "appendonly yes" (with appendfsync everysec) instead of
	// the default "appendonly no". RDB snapshots are always off (save "").
	AppendOnly bool
	// RedisServer is the path (or a name looked up in $PATH) of the
	// redis-server binary; "" means exec.LookPath("redis-server"). Redis >=
	// 7.0 is required (cluster-port, CLUSTER ADDSLOTSRANGE).
	RedisServer string
	// BaseDir is the parent of the per-node temporary directories; ""
	// means os.TempDir().
	BaseDir string
	// ReadyTimeout bounds the forming of the cluster once all processes are
	// up (MEET, slot assignment, replication, convergence); 0 means 20s. It
	// is also the default bound of WaitHealthy when its ctx has no deadline.
	ReadyTimeout time.Duration
	// ExtraConfig lines are appended verbatim to every node's redis.conf
	// (after the generated lines, so they win for single-valued options).
	// Overriding port, cluster-port, bind, dir, logfile, cluster-enabled or
	// daemonize breaks the harness.
	ExtraConfig []string
	// ReplicationProxies routes every node's replication stream through a
	// proxy of its own (an embedded toxiproxy owned by the cluster): each
	// node, master or replica (a replica may be promoted), is started with
	// cluster-announce-port set to its proxy's port and
	// cluster-announce-bus-port to its real bus port, so a replica
	// replicates through its master's proxy while the cluster bus stays
	// direct. Faults on that proxy (ReplicationToxics) act on the
	// master→replica stream only. Clients then see the proxy ports in
	// CLUSTER SLOTS, MOVED and ASK: dial them through the client Toxics'
	// Dialer (which maps them back) or AnnouncedDialer; Addrs, Nodes and
	// Admin keep using the real ports.
	ReplicationProxies bool
	// AnnounceClientProxies routes every client through the toxiproxy
	// proxies without the client's cooperation: each node is started with
	// cluster-announce-port set to the port of a proxy of its own (an
	// embedded toxiproxy owned by the cluster, see ClientToxics) and
	// cluster-announce-bus-port to its real bus port, so any cluster
	// client seeded with the proxies' addresses (a service under test
	// that knows nothing of the harness) learns only proxied addresses
	// from CLUSTER SLOTS, MOVED and ASK. Replicas replicate from the
	// announced address too: the master→replica stream passes the same
	// proxies, so a toxic on a node's proxy acts on its clients and on its
	// replicas (docs/SERVICE_ROUTING.md measures it), and ReplicationToxics
	// reports none. Exclusive with ReplicationProxies (a node announces
	// one port). Admin, Addrs and Nodes keep using the real ports.
	AnnounceClientProxies bool
	// Logf, if set, receives progress messages (starts, signals, unexpected
	// exits). It is called from several goroutines, also after Start
	// returned, until Close.
	Logf func(format string, args ...any)

	hooks *testHooks // test-only hooks; nil in production
}

// testHooks lets the package's tests steer internals.
type testHooks struct {
	// pickPort returns the client port to try for node idx on the given
	// start attempt (0-based); 0 means "pick a free one".
	pickPort func(idx, attempt int) int
	// onSpawn is called with the PID and dir of every process started.
	onSpawn func(pid int, dir string)
}

// Node describes one cluster node: its identity and role as seen by the
// cluster plus the harness's own process bookkeeping.
type Node struct {
	ID       string   // cluster node id (40 hex chars)
	Addr     string   // "127.0.0.1:port"
	Port     int      // client port
	Role     string   // "master" | "replica"
	MasterID string   // for replicas: the ID of the master they replicate
	PID      int      // 0 if not running (stopped/killed and not restarted) or not a local process
	Slots    [][2]int // inclusive slot ranges owned (masters)
	Dir      string   // the node's directory (redis.conf, nodes.conf, redis.log)
	Paused   bool     // SIGSTOPped (or its container frozen) by Pause and not yet resumed
	// Down is true when the harness knows the node's process (or container)
	// is not running: killed or stopped and not restarted. Always false on
	// clusters without process control (an unreachable external node shows
	// in Flags as fail?/fail instead).
	Down bool
	// Flags are the raw CLUSTER NODES flags other than myself/master/slave,
	// e.g. "fail", "fail?", "handshake", "noaddr", "nofailover".
	Flags []string
}

// HasSlot reports whether n owns slot.
func (n Node) HasSlot(slot int) bool {
	for _, r := range n.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// LocalCluster is a Redis Cluster of child redis-server processes started by
// [Start]. All methods are safe for concurrent use. Lifecycle operations on
// the same node are serialised.
type LocalCluster struct {
	opt         Options
	redisServer string

	mu     sync.Mutex // guards the mutable fields of procs and closed
	procs  []*proc    // creation order: masters first, then replicas
	byAddr map[string]*proc
	closed bool
	// reserved holds every port (client and bus) handed out to a node of
	// this cluster, including ports of failed start attempts.
	reserved map[int]bool

	// repl fronts every node's announced port (Options.ReplicationProxies
	// or Options.AnnounceClientProxies); nil otherwise.
	repl *Proxies
	// clientsAnnounced: repl are the client proxies
	// (Options.AnnounceClientProxies), not replication-only ones.
	clientsAnnounced bool

	closeOnce sync.Once
	closeErr  error
}

// Start launches and forms a local Redis Cluster according to opt and
// returns once it is healthy (see WaitHealthy). ctx bounds the whole start;
// Options.ReadyTimeout additionally bounds the forming phase.
//
// Errors: a missing redis-server yields an error wrapping
// ErrRedisServerMissing; a cluster that does not converge yields an error
// that includes the last lines of every node's log. On any error everything
// started so far has been torn down (processes ended, dirs removed) and the
// returned *LocalCluster is nil.
//
// Timing: Redis refuses to report cluster_state:ok on a master during its
// first 2s (CLUSTER_WRITABLE_DELAY, compiled in), so Start takes a little
// over 2s whatever the size; 3 masters x 1 replica take ~2.1s on 2 cores.
func Start(ctx context.Context, opt Options) (*LocalCluster, error) {
	t0 := time.Now()
	defaultShape(&opt.Masters, &opt.ReplicasPerMaster, &opt.NodeTimeout, &opt.ReadyTimeout, 20*time.Second)
	if opt.Masters < 0 {
		return nil, fmt.Errorf("compose: Options.Masters must be >= 1, got %d", opt.Masters)
	}
	if opt.BaseDir == "" {
		opt.BaseDir = os.TempDir()
	}
	bin, err := findRedisServer(opt.RedisServer)
	if err != nil {
		return nil, err
	}

	c := &LocalCluster{opt: opt, redisServer: bin, byAddr: map[string]*proc{}, reserved: map[int]bool{}}
	if err := c.openAnnouncedProxies(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			if cerr := c.Close(); cerr != nil {
				c.logf("compose: cleanup after failed start: %v", cerr)
			}
		}
	}()

	for _, d := range RemoveLeftovers(opt.BaseDir, "seckill-node-") {
		c.logf("compose: removed %s, left behind by a harness that no longer runs", d)
	}
	n := opt.Masters * (1 + opt.ReplicasPerMaster)
	for i := 0; i < n; i++ {
		dir, err := makeOwnedTempDir(opt.BaseDir, "seckill-node-*")
		if err != nil {
			return nil, fmt.Errorf("compose: creating node dir: %w", err)
		}
		p := &proc{
			idx:      i,
			dir:      dir,
			confPath: filepath.Join(dir, "redis.conf"),
			logPath:  filepath.Join(dir, "redis.log"),
		}
		c.mu.Lock()
		c.procs = append(c.procs, p)
		c.mu.Unlock()
	}

	// Start all processes in parallel.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range c.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.startFresh(ctx, p)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.mu.Lock()
	for _, p := range c.procs {
		c.byAddr[p.addr] = p
	}
	c.mu.Unlock()
	c.logf("compose: %d redis-server processes up in %v", n, time.Since(t0).Round(time.Millisecond))

	fctx, cancel := context.WithTimeout(ctx, opt.ReadyTimeout)
	defer cancel()
	if err := c.form(fctx); err != nil {
		return nil, fmt.Errorf("compose: cluster did not become ready (ReadyTimeout %v): %w\n%s", opt.ReadyTimeout, err, c.allLogTails(10))
	}
	c.bindAnnouncedProxies()
	ok = true
	c.logf("compose: cluster of %d masters x %d replicas ready in %v", opt.Masters, opt.ReplicasPerMaster, time.Since(t0).Round(time.Millisecond))
	return c, nil
}

// defaultShape applies the defaults the cluster kinds share: 3 masters,
// 1 replica per master (NoReplicas, or any negative value, means none),
// cluster-node-timeout 2000ms and readyDefault as the forming bound.
func defaultShape(masters, replicasPerMaster *int, nodeTimeout, readyTimeout *time.Duration, readyDefault time.Duration) {
	if *masters == 0 {
		*masters = 3
	}
	switch {
	case *replicasPerMaster == 0:
		*replicasPerMaster = 1
	case *replicasPerMaster < 0:
		*replicasPerMaster = 0
	}
	if *nodeTimeout <= 0 {
		*nodeTimeout = 2000 * time.Millisecond
	}
	if *readyTimeout <= 0 {
		*readyTimeout = readyDefault
	}
}

// findRedisServer resolves the redis-server binary.
func findRedisServer(path string) (string, error) {
	name := path
	if name == "" {
		name = "redis-server"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w (looked for %q: %v)", ErrRedisServerMissing, name, cause(err))
	}
	return bin, nil
}

// cause is why LookPath failed, without the path it repeats ("exec:
// \"x\": stat x: "): "no such file or directory", "executable file not
// found in $PATH".
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

func (c *LocalCluster) logf(format string, args ...any) {
	if c.opt.Logf != nil {
		c.opt.Logf(format, args...)
	}
}

// allLogTails renders the last n lines of every node's log.
func (c *LocalCluster) allLogTails(n int) string {
	c.mu.Lock()
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "--- node %d %s (%s) last %d log lines:\n%s\n", p.idx, p.addr, p.logPath, n, indent(tailFile(p.logPath, n)))
	}
	return b.String()
}

// Addrs returns the "127.0.0.1:port" seed addresses of all nodes, masters
// first (in the order they were created), then replicas. The list is fixed
// at Start: it includes nodes that are currently down. A fresh slice is
// returned on every call.
func (c *LocalCluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.procs))
	for _, p := range c.procs {
		out = append(out, p.addr)
	}
	return out
}

// proc returns the bookkeeping of the node at addr.
func (c *LocalCluster) proc(addr string) (*proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.byAddr[addr]
	if !ok {
		return nil, fmt.Errorf("compose: no node with address %q in this cluster", addr)
	}
	return p, nil
}

// current returns p's current incarnation if it is running (nil otherwise)
// and whether the cluster is closed.
func (c *LocalCluster) current(p *proc) (r *run, closed bool) {
	c.mu.Lock()
	r, closed = p.cur, c.closed
	c.mu.Unlock()
	if r.exited() {
		return nil, closed
	}
	return r, closed
}

// Kill sends SIGKILL to the node's process and waits until it has been
// reaped. It is idempotent: killing a node that is not running returns nil.
// A paused node is killed as well. The node's dir is kept, so Restart can
// bring it back.
func (c *LocalCluster) Kill(addr string) error {
	p, err := c.proc(addr)
	if err != nil {
		return err
	}
	p.life.Lock()
	defer p.life.Unlock()
	r, _ := c.current(p)
	if r == nil {
		return nil
	}
	c.logf("compose: SIGKILL %s (pid %d)", addr, r.pid)
	return c.killRun(p, r)
}

// Stop shuts the node down gracefully (SIGCONT if paused, then SIGTERM) and
// waits for it to exit. If it has not exited after ~12s it is SIGKILLed and
// an error says so (the node is down either way). Idempotent: stopping a
// node that is not running returns nil.
func (c *LocalCluster) Stop(addr string) error {
	p, err := c.proc(addr)
	if err != nil {
		return err
	}
	p.life.Lock()
	defer p.life.Unlock()
	return c.stopLocked(p)
}

func (c *LocalCluster) stopLocked(p *proc) error {
	r, _ := c.current(p)
	if r == nil {
		return nil
	}
	c.logf("compose: SIGTERM %s (pid %d)", p.addr, r.pid)
	graceful, err := c.termRun(p, r, stopGrace)
	if err != nil {
		return err
	}
	if !graceful {
		return fmt.Errorf("compose: %s (pid %d) did not exit within %v of SIGTERM and was SIGKILLed", p.addr, r.pid, stopGrace)
	}
	return nil
}

// Pause freezes the node's process with SIGSTOP: it keeps its sockets but
// answers nothing, like a hung or partitioned node. It returns once the
// kernel reports the process as stopped (/proc/<pid>/stat state T, bounded
// to ~2s). Peers will flag the node pfail/fail after cluster-node-timeout and
// fail a paused master over to its replica. Pausing an already paused
// node returns nil; pausing a node that is not running returns an error
// wrapping ErrNotRunning.
func (c *LocalCluster) Pause(addr string) error {
	p, err := c.proc(addr)
	if err != nil {
		return err
	}
	p.life.Lock()
	defer p.life.Unlock()
	r, closed := c.current(p)
	if closed {
		return ErrClosed
	}
	if r == nil {
		return fmt.Errorf("%w: %s", ErrNotRunning, addr)
	}
	c.mu.Lock()
	already := p.paused
	c.mu.Unlock()
	if already {
		return nil
	}
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("compose: SIGSTOP %s (pid %d): %w", addr, r.pid, err)
	}
	c.mu.Lock()
	p.paused = true
	c.mu.Unlock()
	c.logf("compose: SIGSTOP %s (pid %d)", addr, r.pid)
	waitProcState(r, true)
	return nil
}

// Resume continues a paused node with SIGCONT and returns once the process
// is no longer in the stopped state (bounded to ~2s). Idempotent: resuming a node
// that is not paused (or not running) returns nil.
func (c *LocalCluster) Resume(addr string) error {
	p, err := c.proc(addr)
	if err != nil {
		return err
	}
	p.life.Lock()
	defer p.life.Unlock()
	r, _ := c.current(p)
	c.mu.Lock()
	paused := p.paused
	c.mu.Unlock()
	if r == nil || !paused {
		return nil
	}
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("compose: SIGCONT %s (pid %d): %w", addr, r.pid, err)
	}
	c.mu.Lock()
	p.paused = false
	c.mu.Unlock()
	c.logf("compose: SIGCONT %s (pid %d)", addr, r.pid)
	waitProcState(r, false)
	return nil
}

// Restart starts the node again with the same port, dir, redis.conf and
// nodes.conf, so it keeps its cluster node id and rejoins the cluster on its
// own; a master that was failed over while it was down comes back as a
// replica of its successor (Redis does this when it learns its slots moved).
// If the node is still running it is first stopped gracefully (see Stop).
//
// Restart returns once the new process answers on its port; it does not wait
// for the cluster to converge: call WaitHealthy for that. Without AOF
// (Options.AppendOnly false) the node comes back empty. It fails if the port
// has been taken by another process meanwhile.
func (c *LocalCluster) Restart(ctx context.Context, addr string) error {
	p, err := c.proc(addr)
	if err != nil {
		return err
	}
	p.life.Lock()
	defer p.life.Unlock()
	if _, closed := c.current(p); closed {
		return ErrClosed
	}
	if err := c.stopLocked(p); err != nil {
		return err
	}
	r, err := c.spawn(p)
	if err != nil {
		return err
	}
	if err := c.waitReady(ctx, p, r); err != nil {
		_ = c.killRun(p, r)
		return fmt.Errorf("compose: restarting %s: %w", addr, err)
	}
	return nil
}

// NodeLogTail returns the last n lines of the node's redis.log ("" if the
// address is unknown or the log is gone, e.g. after Close).
func (c *LocalCluster) NodeLogTail(addr string, n int) string {
	p, err := c.proc(addr)
	if err != nil {
		return ""
	}
	return tailFile(p.logPath, n)
}

// Close ends every process this cluster started (by PID: SIGCONT first if
// paused, then SIGTERM, SIGKILL after ~2s; all nodes in parallel), waits for
// them to be reaped and removes the node directories. It is idempotent (later
// calls return the first call's result), safe on a nil *LocalCluster and safe
// after a failed Start. Afterwards Kill/Stop/Resume return nil and
// Pause/Restart return ErrClosed.
func (c *LocalCluster) Close() error {
	if c == nil {
		return nil
	}
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		procs := append([]*proc(nil), c.procs...)
		c.mu.Unlock()

		errs := make([]error, len(procs))
		var wg sync.WaitGroup
		for i, p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.life.Lock()
				defer p.life.Unlock()
				if r, _ := c.current(p); r != nil {
					if _, err := c.termRun(p, r, closeGrace); err != nil {
						errs[i] = err
					}
				}
				c.mu.Lock()
				client := p.client
				p.client = nil
				c.mu.Unlock()
				if client != nil {
					_ = client.Close()
				}
				if err := os.RemoveAll(p.dir); err != nil {
					errs[i] = errors.Join(errs[i], fmt.Errorf("compose: removing %s: %w", p.dir, err))
				}
			}()
		}
		wg.Wait()
		if c.repl != nil {
			errs = append(errs, c.repl.Close())
		}
		c.closeErr = errors.Join(errs...)
		c.logf("compose: cluster closed (%d nodes)", len(procs))
	})
	return c.closeErr
}

// client returns the admin client of a node that is running and not paused,
// or nil.
func (c *LocalCluster) client(p *proc) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || p.paused || p.cur.exited() {
		return nil
	}
	return p.client
}

// Admin returns a direct (unproxied) admin client of the node at addr, owned
// by the cluster: do not Close it. It fails with ErrNotRunning when the node
// is stopped, killed or paused.
func (c *LocalCluster) Admin(addr string) (*redis.Client, error) {
	p, err := c.proc(addr)
	if err != nil {
		return nil, err
	}
	if cl := c.client(p); cl != nil {
		return cl, nil
	}
	return nil, fmt.Errorf("node %s: %w", addr, ErrNotRunning)
}
