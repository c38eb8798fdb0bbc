// Package servicechild runs the access service under test as a child of
// the harness (--service-cmd): started with `sh -c CMD` in a process group
// of its own, with the environment of the service contract
// (docs/SERVICE.md: SECKILL_LISTEN, SECKILL_REDIS_ADDRS, SECKILL_SECRET,
// SECKILL_PG_URL, and the run's sale: SECKILL_ACTIVITY, SECKILL_SKU,
// SECKILL_STOCK, SECKILL_BUCKETS), awaited on its readiness URL, its output
// captured, and stopped by its process group id — the group the harness
// created — and by its tree mark (EnvTreeMark, inherited by every
// descendant, also one in a session of its own), so stopping it ends what
// the harness started and nothing else. The faults
// service-kill, service-pause and service-restart act through Child.
package servicechild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The environment variables of the service contract.
const (
	EnvListen     = "SECKILL_LISTEN"
	EnvRedisAddrs = "SECKILL_REDIS_ADDRS"
	EnvSecret     = "SECKILL_SECRET"
	EnvPGURL      = "SECKILL_PG_URL"
	// The run's sale (Options.Sale): its activity id, SKU, whole stock and
	// bucket count, the figures the harness judges the run by.
	EnvActivity = "SECKILL_ACTIVITY"
	EnvSKU      = "SECKILL_SKU"
	EnvStock    = "SECKILL_STOCK"
	EnvBuckets  = "SECKILL_BUCKETS"
)

// waitDelay bounds Wait after the child exited while a descendant still
// holds its output pipe.
const waitDelay = time.Second

// Sale is the run's sale as the child's environment gives it.
type Sale struct {
	Activity, SKU string
	Stock         int64
	Buckets       uint32
}

// Defaults of Options' zero values.
const (
	DefaultReadyTimeout = 30 * time.Second
	DefaultGrace        = 5 * time.Second
)

// Output files in Options.Dir.
const (
	StdoutFile = "service-stdout.log"
	StderrFile = "service-stderr.log"
)

// Options configures Start.
type Options struct {
	// Cmd is the service's command line, run with `sh -c`.
	Cmd string
	// Ready is the readiness URL polled until it answers 200; "" means
	// http://<listen>/healthz.
	Ready string
	// Listen is the address given as SECKILL_LISTEN; "" means a free
	// 127.0.0.1 port picked at Start (FreeListen).
	Listen string
	// RedisAddrs are SECKILL_REDIS_ADDRS: the cluster's seed addresses the
	// service must use (the proxied ones).
	RedisAddrs []string
	// Secret is SECKILL_SECRET, the run's reservation-id secret.
	Secret string
	// PGURL is SECKILL_PG_URL, set only when not "" (the pipeline is on).
	PGURL string
	// Sale is SECKILL_ACTIVITY, SECKILL_SKU, SECKILL_STOCK and
	// SECKILL_BUCKETS, set only when Sale.Activity is not "".
	Sale Sale
	// Dir receives the child's stdout and stderr (StdoutFile, StderrFile,
	// appended across restarts); "" means a temporary directory removed
	// by Stop.
	Dir string
	// ReadyTimeout bounds each wait for readiness (0: DefaultReadyTimeout);
	// Grace is how long a SIGTERM is given before SIGKILL (0: DefaultGrace).
	ReadyTimeout, Grace time.Duration
	// Logf, when set, receives the child's starts, signals and exits.
	Logf func(format string, args ...any)
}

// Child is a running (or stopped) service child. Methods are safe for
// concurrent use.
type Child struct {
	opt     Options
	tmpDir  string // Dir made by Start, removed by Stop
	life    sync.Mutex
	mu      sync.Mutex
	cur     *incarnation
	starts  int
	stopped bool
	tail    *tailBuffer
	mark    string // EnvTreeMark's value: finds descendants that left the group
}

// incarnation is one start of the command.
type incarnation struct {
	cmd    *exec.Cmd
	pgid   int
	done   chan struct{} // closed once reaped
	err    error         // Wait's result, once done
	paused bool
	files  []*os.File
}

// Start starts the child and waits for its readiness. On error nothing is
// left running, and the error names the command, what went wrong, the
// child's last stderr lines and the fix.
func Start(ctx context.Context, opt Options) (*Child, error) {
	if strings.TrimSpace(opt.Cmd) == "" {
		return nil, errors.New("--service-cmd is empty: give the command that starts your access service, e.g. --service-cmd 'seckill-harness serve'")
	}
	if opt.ReadyTimeout <= 0 {
		opt.ReadyTimeout = DefaultReadyTimeout
	}
	if opt.Grace <= 0 {
		opt.Grace = DefaultGrace
	}
	if opt.Listen == "" {
		l, err := FreeListen()
		if err != nil {
			return nil, err
		}
		opt.Listen = l
	}
	if opt.Ready == "" {
		opt.Ready = "http://" + opt.Listen + "/healthz"
	}
	c := &Child{opt: opt, tail: newTailBuffer(20), mark: newTreeMark()}
	if c.opt.Dir == "" {
		d, err := os.MkdirTemp("", "seckill-service-*")
		if err != nil {
			return nil, fmt.Errorf("service child: output directory: %w", err)
		}
		c.opt.Dir, c.tmpDir = d, d
	}
	if err := c.startAndAwait(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// FreeListen picks a free 127.0.0.1 port (host:port) for SECKILL_LISTEN.
func FreeListen() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("service child: picking a free port for %s: %w", EnvListen, err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// URL is the service's base URL, http://<listen>.
func (c *Child) URL() string { return "http://" + c.opt.Listen }

// Listen is the address the service was told to listen on.
func (c *Child) Listen() string { return c.opt.Listen }

// Dir is where the child's output is written.
func (c *Child) Dir() string { return c.opt.Dir }

// Starts counts the child's starts (1 + restarts).
func (c *Child) Starts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts
}

// PGID is the process group of the current incarnation (0: not running).
func (c *Child) PGID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || c.cur.exited() {
		return 0
	}
	return c.cur.pgid
}

func (c *Child) logf(format string, args ...any) {
	if c.opt.Logf != nil {
		c.opt.Logf(format, args...)
	}
}

func (r *incarnation) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// environ is the child's environment: the harness's own, with the
// contract's variables set.
func (c *Child) environ() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SECKILL_") {
			env = append(env, kv)
		}
	}
	env = append(env, EnvListen+"="+c.opt.Listen, EnvRedisAddrs+"="+strings.Join(c.opt.RedisAddrs, ","), EnvSecret+"="+c.opt.Secret,
		EnvTreeMark+"="+c.mark)
	if c.opt.PGURL != "" {
		env = append(env, EnvPGURL+"="+c.opt.PGURL)
	}
	if sl := c.opt.Sale; sl.Activity != "" {
		env = append(env, EnvActivity+"="+sl.Activity, EnvSKU+"="+sl.SKU,
			EnvStock+"="+strconv.FormatInt(sl.Stock, 10), EnvBuckets+"="+strconv.FormatUint(uint64(sl.Buckets), 10))
	}
	return env
}

// spawn starts one incarnation in a new process group.
func (c *Child) spawn() (*incarnation, error) {
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(c.opt.Dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	out, err := open(StdoutFile)
	if err != nil {
		return nil, fmt.Errorf("service child: %w", err)
	}
	errf, err := open(StderrFile)
	if err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("service child: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", c.opt.Cmd)
	cmd.Env = c.environ()
	cmd.Stdout, cmd.Stderr = out, io.MultiWriter(errf, c.tail)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A descendant that outlives the child (setsid, a daemon) may hold the
	// stderr pipe open: Wait returns this long after the child's exit
	// whatever it holds, and the tree is ended by its mark.
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		_, _ = out.Close(), errf.Close()
		return nil, fmt.Errorf("--service-cmd %q: starting it: %w", c.opt.Cmd, err)
	}
	r := &incarnation{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{}), files: []*os.File{out, errf}}
	go func() {
		r.err = cmd.Wait()
		for _, f := range r.files {
			_ = f.Close()
		}
		close(r.done)
	}()
	c.mu.Lock()
	c.cur = r
	c.starts++
	n := c.starts
	c.mu.Unlock()
	c.logf("service: started %q (pid %d, process group %d, start %d), listening on %s", c.opt.Cmd, r.pgid, r.pgid, n, c.opt.Listen)
	return r, nil
}

// startAndAwait spawns an incarnation and waits for its readiness; on
// failure the incarnation is killed and the error says why and what to do.
func (c *Child) startAndAwait(ctx context.Context) error {
	r, err := c.spawn()
	if err != nil {
		return err
	}
	if err := c.awaitReady(ctx, r); err != nil {
		c.kill(r)
		return fmt.Errorf("%w\n%s", err, c.stderrTail())
	}
	return nil
}

// awaitReady polls the readiness URL until 200, the child exits, ctx ends
// or ReadyTimeout passes.
func (c *Child) awaitReady(ctx context.Context, r *incarnation) error {
	t0 := time.Now()
	deadline := t0.Add(c.opt.ReadyTimeout)
	hc := &http.Client{Timeout: time.Second}
	fix := fmt.Sprintf("fix: the service must listen on $%s and answer 200 on %s once it reaches the cluster at $%s (or give --service-ready URL)", EnvListen, c.opt.Ready, EnvRedisAddrs)
	last := "no answer yet"
	for {
		if r.exited() {
			return fmt.Errorf("--service-cmd %q exited (%v) before it was ready at %s; %s", c.opt.Cmd, r.err, c.opt.Ready, fix)
		}
		if resp, err := hc.Get(c.opt.Ready); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				c.logf("service: ready at %s after %s", c.opt.Ready, time.Since(t0).Round(time.Millisecond))
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("--service-cmd %q was not ready at %s within %s (last answer: %s); %s", c.opt.Cmd, c.opt.Ready, c.opt.ReadyTimeout, last, fix)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("--service-cmd %q: waiting for readiness at %s: %w", c.opt.Cmd, c.opt.Ready, ctx.Err())
		case <-r.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stderrTail renders the last stderr lines for an error.
func (c *Child) stderrTail() string {
	lines := c.tail.Lines()
	if len(lines) == 0 {
		return "(the service wrote nothing to stderr; its output is in " + c.opt.Dir + ")"
	}
	return "last stderr lines of the service (all of it in " + filepath.Join(c.opt.Dir, StderrFile) + "):\n  " + strings.Join(lines, "\n  ")
}
