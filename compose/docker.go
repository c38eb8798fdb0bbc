package compose

// DockerCluster: a Redis Cluster in containers (official redis image),
// started and owned by the harness through testcontainers-go. The nodes run
// on the host network, bound to 127.0.0.1 on free ports, so that the
// address every node announces (127.0.0.1:port) is the same for the
// harness, for the other nodes (cluster bus, replication, MIGRATE) and for
// an embedded or remote toxiproxy. That needs a Linux Docker engine (or
// Docker Desktop with host networking enabled).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/wait"
)

// ErrNoDocker is returned (wrapped) by StartDocker and DockerAvailable
// when no Docker engine answers.
var ErrNoDocker = errors.New("compose: no Docker engine answers (is dockerd running, DOCKER_HOST set?): " +
	"use --cluster local (the default) on machines without Docker")

// DefaultDockerImage is the image of the nodes: Redis 7.0, the version the
// harness's facts were verified on (DEBUG AOF-FLUSH-SLEEP, CLUSTER SHARDS).
const DefaultDockerImage = "redis:7.0"

// RedisImageEnv names the environment variable that sets the nodes' image
// when DockerOptions.Image is "" (e.g. a locally built image on machines
// that reach no registry); unset means DefaultDockerImage.
const RedisImageEnv = "SECKILL_REDIS_IMAGE"

// ResolveDockerImage returns the nodes' image of a docker cluster and
// where it came from, first match wins: image itself (the --redis-image
// flag, DockerOptions.Image) "flag", then $SECKILL_REDIS_IMAGE "env", then
// DefaultDockerImage "default". Blank values count as unset.
func ResolveDockerImage(image string) (resolved, source string) {
	if s := strings.TrimSpace(image); s != "" {
		return s, "flag"
	}
	if s := strings.TrimSpace(os.Getenv(RedisImageEnv)); s != "" {
		return s, "env"
	}
	return DefaultDockerImage, "default"
}

// DockerOptions configures StartDocker. The zero value is 3 masters × 1
// replica of redis:7.0.
type DockerOptions struct {
	// Image of the nodes; "" means $SECKILL_REDIS_IMAGE, or
	// DefaultDockerImage when that is unset. It needs redis-server and
	// redis-cli on PATH and a /data directory.
	Image string
	// Masters (0 means 3; redis-cli --cluster create needs at least 3) and
	// ReplicasPerMaster (0 means 1, NoReplicas for none), as in Options.
	Masters, ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout; 0 means 2000ms.
	NodeTimeout time.Duration
	// AppendOnly starts the nodes with appendonly yes.
	AppendOnly bool
	// ExtraArgs are appended to every node's redis-server command line
	// (e.g. "--requirepass", "x" is NOT supported: the harness's admin
	// clients of a DockerCluster use no credentials).
	ExtraArgs []string
	// StartTimeout bounds each container's start (image pull included);
	// 0 means 3 minutes.
	StartTimeout time.Duration
	// ReadyTimeout bounds the forming of the cluster and is the default
	// bound of WaitHealthy; 0 means 30s.
	ReadyTimeout time.Duration
	// Logf, if set, receives progress messages (and testcontainers' own).
	Logf func(format string, args ...any)
}

// disableReaperUnlessAsked sets TESTCONTAINERS_RYUK_DISABLED=true unless
// the environment already says otherwise, before testcontainers reads its
// configuration (once per process). The harness removes its containers
// itself (Close); the reaper is an image pulled from a registry, which
// machines without one cannot start. TESTCONTAINERS_RYUK_DISABLED=false
// keeps it (a CI runner with a registry that wants crash-proof cleanup).
func disableReaperUnlessAsked() {
	reaperOnce.Do(func() {
		if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
	})
}

var reaperOnce sync.Once

// DockerAvailable reports whether a Docker engine answers, within ctx (and
// at most 5 s): nil if it does, an error wrapping ErrNoDocker if not. It
// never hangs on a missing engine and recovers from the panics some
// testcontainers versions raise when no Docker host is configured.
func DockerAvailable(ctx context.Context) (err error) {
	disableReaperUnlessAsked()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrNoDocker, r)
		}
	}()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v", r)
			}
		}()
		cli, err := testcontainers.NewDockerClientWithOpts(ctx)
		if err != nil {
			done <- err
			return
		}
		defer cli.Close()
		_, err = cli.Ping(ctx, client.PingOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNoDocker, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrNoDocker, ctx.Err())
	}
}

// DockerCluster is a Redis Cluster of containers started by StartDocker.
// It implements Cluster with Owned() true and process control through the
// Docker API: Kill = docker kill (SIGKILL), Stop = docker stop, Pause =
// docker pause (the cgroup freezer: like SIGSTOP, the kernel still accepts
// connections), Resume = docker unpause, Restart = docker start of the same
// container (same port and /data/nodes.conf, so the node keeps its id).
type DockerCluster struct {
	*netCluster
	opt DockerOptions
	cli *testcontainers.DockerClient

	mu    sync.Mutex
	nodes []*dockerNode
	by    map[string]*dockerNode

	closeOnce sync.Once
	closeErr  error
}

type dockerNode struct {
	addr  string
	port  int
	cport int
	ctr   *testcontainers.DockerContainer
	life  sync.Mutex // serialises lifecycle operations on this node
	// guarded by DockerCluster.mu
	down, paused bool
}

// tcLogger adapts Logf to testcontainers' logger.
type tcLogger struct{ logf func(string, ...any) }

func (l tcLogger) Printf(format string, v ...any) {
	if l.logf != nil {
		l.logf("testcontainers: "+format, v...)
	}
}

// StartDocker starts Masters×(1+ReplicasPerMaster) redis containers on the
// host network, forms the cluster with redis-cli --cluster create (run in
// the first container) and returns once it is healthy. Without a Docker
// engine it fails at once with an error wrapping ErrNoDocker. On any error
// every container started so far is removed.
func StartDocker(ctx context.Context, opt DockerOptions) (*DockerCluster, error) {
	t0 := time.Now()
	opt.Image, _ = ResolveDockerImage(opt.Image)
	defaultShape(&opt.Masters, &opt.ReplicasPerMaster, &opt.NodeTimeout, &opt.ReadyTimeout, 30*time.Second)
	if opt.Masters < 3 {
		return nil, fmt.Errorf("compose: docker cluster: Masters must be at least 3 (redis-cli --cluster create), got %d", opt.Masters)
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = 3 * time.Minute
	}
	if err := DockerAvailable(ctx); err != nil {
		return nil, err
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	c := &DockerCluster{opt: opt, cli: cli, by: map[string]*dockerNode{}}
	c.netCluster = newNetCluster(ProviderDocker, redis.Options{DialTimeout: time.Second}, opt.ReadyTimeout, false, opt.Logf, c.procState)
	ok := false
	defer func() {
		if !ok {
			if cerr := c.Close(); cerr != nil {
				c.log("compose: cleanup after failed docker start: %v", cerr)
			}
		}
	}()

	n := opt.Masters * (1 + opt.ReplicasPerMaster)
	addrs, err := c.placeNodes(n)
	if err != nil {
		return nil, err
	}
	if err := c.startContainers(ctx); err != nil {
		return nil, err
	}
	c.log("compose: %d redis containers up in %v", n, time.Since(t0).Round(time.Millisecond))
	if err := c.createCluster(ctx, addrs); err != nil {
		return nil, err
	}
	ok = true
	c.log("compose: docker cluster of %d masters x %d replicas (%s) ready in %v", opt.Masters, opt.ReplicasPerMaster, opt.Image, time.Since(t0).Round(time.Millisecond))
	return c, nil
}

// placeNodes gives each of the n nodes a free loopback port (with its bus
// port, +10000, free too), records them in c and in the network view's
// node order, and returns their addresses in that order.
func (c *DockerCluster) placeNodes(n int) ([]string, error) {
	reserved := map[int]bool{}
	for i := 0; i < n; i++ {
		port, err := freeDockerPort(reserved)
		if err != nil {
			return nil, err
		}
		nd := &dockerNode{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port, cport: port + 10000}
		c.nodes = append(c.nodes, nd)
		c.by[nd.addr] = nd
	}
	var addrs []string
	for _, nd := range c.nodes {
		addrs = append(addrs, nd.addr)
	}
	c.netCluster.mu.Lock()
	c.netCluster.order = append([]string(nil), addrs...)
	c.netCluster.mu.Unlock()
	return addrs, nil
}

// startContainers starts every node's container in parallel and returns
// all their errors joined.
func (c *DockerCluster) startContainers(ctx context.Context) error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.startContainer(ctx, nd)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createCluster runs redis-cli --cluster create over addrs inside the
// first container and waits until the cluster is healthy, both within
// ReadyTimeout. A failing redis-cli is reported with its last lines.
func (c *DockerCluster) createCluster(ctx context.Context, addrs []string) error {
	// redis-cli --cluster create, inside the first container (host network:
	// it reaches every node at 127.0.0.1).
	cmd := append([]string{"redis-cli", "--cluster", "create"}, addrs...)
	cmd = append(cmd, "--cluster-replicas", strconv.Itoa(c.opt.ReplicasPerMaster), "--cluster-yes")
	fctx, cancel := context.WithTimeout(ctx, c.opt.ReadyTimeout)
	defer cancel()
	code, out, err := c.nodes[0].ctr.Exec(fctx, cmd, tcexec.Multiplexed())
	if err != nil {
		return fmt.Errorf("compose: docker cluster: %s: %w", strings.Join(cmd, " "), err)
	}
	if code != 0 {
		b, _ := io.ReadAll(out)
		return fmt.Errorf("compose: docker cluster: %s exited %d:\n%s", strings.Join(cmd, " "), code, indent(lastLines(string(b), 15)))
	}
	return c.WaitHealthy(fctx)
}

// freeDockerPort picks a loopback port p with p+10000 (the bus port) free
// too, not reserved yet.
func freeDockerPort(reserved map[int]bool) (int, error) {
	for i := 0; i < 200; i++ {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		if p+10000 > 65535 || reserved[p] || reserved[p+10000] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		_ = l.Close()
		reserved[p], reserved[p+10000] = true, true
		return p, nil
	}
	return 0, errors.New("compose: no free port pair (port, port+10000) found for a docker node")
}

// redisArgs is a node's redis-server command line.
func (c *DockerCluster) redisArgs(nd *dockerNode) []string {
	yn := "no"
	if c.opt.AppendOnly {
		yn = "yes"
	}
	args := []string{
		"redis-server",
		"--port", strconv.Itoa(nd.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--cluster-enabled", "yes",
		"--cluster-port", strconv.Itoa(nd.cport),
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(c.opt.NodeTimeout.Milliseconds(), 10),
		"--cluster-announce-ip", "127.0.0.1",
		"--cluster-require-full-coverage", "yes",
		"--enable-debug-command", "yes",
		"--appendonly", yn,
		"--appendfsync", "everysec",
		"--save", "",
		"--dir", "/data",
		"--maxmemory-policy", "noeviction",
		"--repl-diskless-sync", "yes",
		"--repl-diskless-sync-delay", "0",
	}
	return append(args, c.opt.ExtraArgs...)
}

func (c *DockerCluster) startContainer(ctx context.Context, nd *dockerNode) error {
	sctx, cancel := context.WithTimeout(ctx, c.opt.StartTimeout)
	defer cancel()
	// A provider whose default network is the host network: testcontainers
	// then attaches the container to no other network and never creates
	// its own ("reaper_default", a bridge), which an engine started with
	// --bridge=none could not give it anyway.
	prov, err := testcontainers.NewDockerProvider(
		testcontainers.WithDefaultBridgeNetwork(string(container.NetworkMode("host"))),
		testcontainers.WithLogger(tcLogger{c.opt.Logf}),
	)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	req := testcontainers.ContainerRequest{
		Image:              c.opt.Image,
		Cmd:                c.redisArgs(nd),
		HostConfigModifier: func(hc *container.HostConfig) { hc.NetworkMode = "host" },
		Labels:             map[string]string{"seckill-harness.node": nd.addr},
		WaitingFor:         wait.ForLog("Ready to accept connections").WithStartupTimeout(c.opt.StartTimeout),
	}
	gc, err := prov.RunContainer(sctx, req)
	ctr, _ := gc.(*testcontainers.DockerContainer)
	if gc != nil && ctr == nil {
		_ = gc.Terminate(context.Background())
		return fmt.Errorf("compose: starting a %s container for %s: unexpected container type %T", c.opt.Image, nd.addr, gc)
	}
	if ctr != nil {
		c.mu.Lock()
		nd.ctr = ctr
		c.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("compose: starting a %s container for %s: %w", c.opt.Image, nd.addr, err)
	}
	c.log("compose: node %s started (container %.12s)", nd.addr, ctr.GetContainerID())
	return nil
}

// procState tells netCluster what the harness did to a node.
func (c *DockerCluster) procState(addr string) (down, paused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nd := c.by[addr]
	if nd == nil {
		return false, false
	}
	return nd.down, nd.paused
}

func (c *DockerCluster) node(addr string) (*dockerNode, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nd := c.by[addr]
	if nd == nil || nd.ctr == nil {
		return nil, fmt.Errorf("compose: no node with address %q in this docker cluster", addr)
	}
	return nd, nil
}

// Provider implements Cluster: "docker".
func (c *DockerCluster) Provider() string { return ProviderDocker }

// Image is the image the nodes run (after ResolveDockerImage).
func (c *DockerCluster) Image() string { return c.opt.Image }

// Owned implements Cluster: the harness created the containers.
func (c *DockerCluster) Owned() bool { return true }

// ContainerID returns the id of the container of the node at addr.
func (c *DockerCluster) ContainerID(addr string) string {
	nd, err := c.node(addr)
	if err != nil {
		return ""
	}
	return nd.ctr.GetContainerID()
}

func dockerCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// Kill implements ProcessController: docker kill (SIGKILL); idempotent.
func (c *DockerCluster) Kill(addr string) error {
	nd, err := c.node(addr)
	if err != nil {
		return err
	}
	nd.life.Lock()
	defer nd.life.Unlock()
	if down, _ := c.procState(addr); down {
		return nil
	}
	ctx, cancel := dockerCtx()
	defer cancel()
	if _, err := c.cli.ContainerKill(ctx, nd.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return fmt.Errorf("compose: docker kill %s: %w", addr, err)
	}
	c.markDown(nd)
	c.log("compose: docker kill %s", addr)
	return nil
}

// Stop implements ProcessController: docker stop (SIGTERM, SIGKILL after 12 s); idempotent.
func (c *DockerCluster) Stop(addr string) error {
	nd, err := c.node(addr)
	if err != nil {
		return err
	}
	nd.life.Lock()
	defer nd.life.Unlock()
	return c.stopLocked(nd)
}

func (c *DockerCluster) stopLocked(nd *dockerNode) error {
	if down, _ := c.procState(nd.addr); down {
		return nil
	}
	ctx, cancel := dockerCtx()
	defer cancel()
	id := nd.ctr.GetContainerID()
	if _, paused := c.procState(nd.addr); paused {
		_, _ = c.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	}
	grace := 12
	if _, err := c.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &grace}); err != nil {
		return fmt.Errorf("compose: docker stop %s: %w", nd.addr, err)
	}
	c.markDown(nd)
	c.log("compose: docker stop %s", nd.addr)
	return nil
}

func (c *DockerCluster) markDown(nd *dockerNode) {
	c.mu.Lock()
	nd.down, nd.paused = true, false
	c.mu.Unlock()
	c.dropAdmin(nd.addr)
}

// Pause implements ProcessController: docker pause. Pausing a paused node returns
// nil; a node that is down gives ErrNotRunning.
func (c *DockerCluster) Pause(addr string) error {
	nd, err := c.node(addr)
	if err != nil {
		return err
	}
	nd.life.Lock()
	defer nd.life.Unlock()
	down, paused := c.procState(addr)
	if down {
		return fmt.Errorf("%w: %s", ErrNotRunning, addr)
	}
	if paused {
		return nil
	}
	ctx, cancel := dockerCtx()
	defer cancel()
	if _, err := c.cli.ContainerPause(ctx, nd.ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("compose: docker pause %s: %w", addr, err)
	}
	c.mu.Lock()
	nd.paused = true
	c.mu.Unlock()
	c.log("compose: docker pause %s", addr)
	return nil
}

// Resume implements ProcessController: docker unpause; idempotent.
func (c *DockerCluster) Resume(addr string) error {
	nd, err := c.node(addr)
	if err != nil {
		return err
	}
	nd.life.Lock()
	defer nd.life.Unlock()
	if _, paused := c.procState(addr); !paused {
		return nil
	}
	ctx, cancel := dockerCtx()
	defer cancel()
	if _, err := c.cli.ContainerUnpause(ctx, nd.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("compose: docker unpause %s: %w", addr, err)
	}
	c.mu.Lock()
	nd.paused = false
	c.mu.Unlock()
	c.log("compose: docker unpause %s", addr)
	return nil
}

// Restart implements ProcessController: the same container is started again (same
// port, same /data/nodes.conf: the node keeps its id and rejoins; a master
// failed over meanwhile comes back as a replica). It returns once the node
// answers PING; call WaitHealthy for the cluster to converge.
func (c *DockerCluster) Restart(ctx context.Context, addr string) error {
	nd, err := c.node(addr)
	if err != nil {
		return err
	}
	nd.life.Lock()
	defer nd.life.Unlock()
	if err := c.stopLocked(nd); err != nil {
		return err
	}
	dctx, cancel := dockerCtx()
	defer cancel()
	if _, err := c.cli.ContainerStart(dctx, nd.ctr.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("compose: docker start %s: %w", addr, err)
	}
	c.mu.Lock()
	nd.down, nd.paused = false, false
	c.mu.Unlock()
	c.dropAdmin(addr)
	rctx, rcancel := context.WithTimeout(ctx, procReadyTimeout)
	defer rcancel()
	var last error
	for {
		cl, err := c.Admin(addr)
		if err == nil {
			if err = cl.Ping(rctx).Err(); err == nil {
				c.log("compose: docker start %s: answering", addr)
				return nil
			}
		}
		last = err
		select {
		case <-rctx.Done():
			return fmt.Errorf("compose: restarted %s does not answer: %v: %w", addr, last, rctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// NodeLogTail implements LogTailer: the last n lines of the container's log.
func (c *DockerCluster) NodeLogTail(addr string, n int) string {
	nd, err := c.node(addr)
	if err != nil {
		return ""
	}
	ctx, cancel := dockerCtx()
	defer cancel()
	rc, err := nd.ctr.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return lastLines(string(b), n)
}

// Close removes every container this cluster started (in parallel) and
// closes the clients. Idempotent; safe after a failed StartDocker.
func (c *DockerCluster) Close() error {
	if c == nil {
		return nil
	}
	c.closeOnce.Do(func() {
		errs := []error{c.netCluster.close()}
		c.mu.Lock()
		nodes := append([]*dockerNode(nil), c.nodes...)
		c.mu.Unlock()
		var wg sync.WaitGroup
		var emu sync.Mutex
		for _, nd := range nodes {
			if nd.ctr == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := dockerCtx()
				defer cancel()
				if err := nd.ctr.Terminate(ctx); err != nil {
					emu.Lock()
					errs = append(errs, fmt.Errorf("compose: removing the container of %s: %w", nd.addr, err))
					emu.Unlock()
				}
			}()
		}
		wg.Wait()
		if c.cli != nil {
			_ = c.cli.Close()
		}
		c.closeErr = errors.Join(errs...)
		c.log("compose: docker cluster closed (%d containers)", len(nodes))
	})
	return c.closeErr
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
