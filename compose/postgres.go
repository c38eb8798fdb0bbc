package compose

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgresOptions configure a throwaway local PostgreSQL (StartLocalPostgres).
type PostgresOptions struct {
	// BinDir holds initdb and postgres. Empty: the newest
	// /usr/lib/postgresql/<version>/bin (Debian's layout), else PATH.
	BinDir string
	// RunAs is the OS user initdb and postgres run as when the harness runs
	// as root (initdb refuses root); empty means "postgres". Ignored when
	// the harness is not root: the servers then run as the harness's user.
	RunAs string
	// DBUser is the database superuser initdb creates; empty means "seckill".
	DBUser string
	// Settings are extra server settings (-c name=value), e.g.
	// {"synchronous_commit": "off"}. listen_addresses, port and the socket
	// directory are the harness's and cannot be overridden.
	Settings map[string]string
	// ReadyTimeout bounds the wait for the server to accept connections; 0
	// means 30s.
	ReadyTimeout time.Duration
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// LocalPostgres is a PostgreSQL server the harness started: a fresh cluster
// (initdb) in a temporary directory, listening on 127.0.0.1 on a free port,
// trust authentication for DBUser, its Unix socket in the same directory.
//
// The postmaster is a direct child of the harness (no pg_ctl in between)
// started with Pdeathsig=SIGINT: if the harness dies, the kernel asks the
// postmaster for a fast shutdown and it ends its backends. Close stops it
// (SIGINT, then SIGKILL after a grace period — only this PID is signalled)
// and removes the directory. Safe for concurrent use.
type LocalPostgres struct {
	dir     string
	dataDir string
	logPath string
	port    int
	dbUser  string
	version string
	logf    func(string, ...any)

	cmd  *exec.Cmd
	pid  int
	done chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// ErrPostgresMissing is wrapped by StartLocalPostgres's error when the
// PostgreSQL server binaries are not installed.
var ErrPostgresMissing = errors.New("compose: PostgreSQL server binaries (initdb, postgres) not found: install postgresql (apt-get install -y postgresql, or make deps)")

// postgresBinDir finds the directory holding initdb and postgres.
func postgresBinDir(want string) (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if want != "" {
		if !has(want) {
			return "", fmt.Errorf("%w (looked in %s)", ErrPostgresMissing, want)
		}
		return want, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { // newest major version first
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("%w (looked in /usr/lib/postgresql/*/bin and PATH)", ErrPostgresMissing)
}

// runAsCredential returns the credential to run the servers with when the
// harness is root, and the uid/gid to own the directory (-1 when not root).
func runAsCredential(name string) (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, -1, -1, fmt.Errorf("compose: initdb cannot run as root and the user %q to run it as does not exist (%v): install postgresql (it creates the postgres user) or set PostgresOptions.RunAs", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, -1, -1, fmt.Errorf("compose: user %q has a non-numeric uid/gid %s/%s", name, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, uid, gid, nil
}

// StartLocalPostgres initialises and starts a throwaway PostgreSQL server.
// It takes a few seconds (initdb is most of it). A port taken between the
// probe and the bind is retried with another port. On error nothing is
// left behind.
func StartLocalPostgres(ctx context.Context, opt PostgresOptions) (*LocalPostgres, error) {
	bin, err := postgresBinDir(opt.BinDir)
	if err != nil {
		return nil, err
	}
	cred, uid, gid, err := runAsCredential(opt.RunAs)
	if err != nil {
		return nil, err
	}
	if err := defaultPostgresOptions(&opt); err != nil {
		return nil, err
	}
	logf := opt.Logf
	for _, d := range RemoveLeftovers("", "seckill-pg-") {
		logf("compose: removed %s, left behind by a harness that no longer runs", d)
	}
	dir, err := makeOwnedTempDir("", "seckill-pg-")
	if err != nil {
		return nil, fmt.Errorf("compose: temp dir for PostgreSQL: %w", err)
	}
	p := &LocalPostgres{dir: dir, dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "postgres.log"),
		dbUser: opt.DBUser, logf: logf}
	fail := func(err error) (*LocalPostgres, error) {
		if cerr := p.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	if uid >= 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			return fail(fmt.Errorf("compose: chown %s to the postgres user: %w", dir, err))
		}
	}
	t0 := time.Now()
	if err := p.initdb(ctx, bin, cred); err != nil {
		return fail(err)
	}
	logf("compose: initdb done in %v (%s)", time.Since(t0).Round(time.Millisecond), bin)
	if err := p.listen(ctx, bin, cred, opt, t0); err != nil {
		return fail(err)
	}
	return p, nil
}

// defaultPostgresOptions fills in the database user ("seckill"), the ready
// timeout (30 s) and a no-op Logf, and refuses Settings the harness sets
// itself (listen_addresses, port, unix_socket_directories).
func defaultPostgresOptions(opt *PostgresOptions) error {
	if opt.DBUser == "" {
		opt.DBUser = "seckill"
	}
	if opt.ReadyTimeout <= 0 {
		opt.ReadyTimeout = 30 * time.Second
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	for k := range opt.Settings {
		switch k {
		case "listen_addresses", "port", "unix_socket_directories":
			return fmt.Errorf("compose: PostgresOptions.Settings[%q] is set by the harness (127.0.0.1, a free port, the temp dir): remove it", k)
		}
	}
	return nil
}

// initdb creates the data directory (trust authentication for p.dbUser,
// UTF8, C locale, no fsync) as cred, and records the server's version.
func (p *LocalPostgres) initdb(ctx context.Context, bin string, cred *syscall.Credential) error {
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", p.dataDir, "-A", "trust", "-U", p.dbUser,
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = p.dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("compose: initdb -D %s: %w; output:\n%s", p.dataDir, err, indent(tailString(string(out), 15)))
	}
	if out, err := exec.Command(filepath.Join(bin, "postgres"), "--version").Output(); err == nil {
		p.version = strings.TrimSpace(string(out))
	}
	return nil
}

// listen starts the server on a free port and waits until it is ready;
// when the port was taken in the meantime it stops the server and tries
// another, up to maxPortAttempts times. t0 is when the start began (for
// the log line).
func (p *LocalPostgres) listen(ctx context.Context, bin string, cred *syscall.Credential, opt PostgresOptions, t0 time.Time) error {
	var lastErr error
	for attempt := 0; attempt < maxPortAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("compose: picking a port for PostgreSQL: %w", err)
		}
		p.port = port
		if err := p.spawn(bin, cred, opt.Settings); err != nil {
			return err
		}
		err = p.waitReady(ctx, opt.ReadyTimeout)
		if err == nil {
			p.logf("compose: PostgreSQL up on 127.0.0.1:%d (pid %d, dir %s) in %v", p.port, p.pid, p.dir, time.Since(t0).Round(time.Millisecond))
			return nil
		}
		lastErr = err
		p.stop()
		if !errors.Is(err, errPortInUse) {
			return err
		}
		p.logf("compose: PostgreSQL port %d taken, retrying with another", port)
	}
	return fmt.Errorf("compose: PostgreSQL: giving up after %d attempts: %w", maxPortAttempts, lastErr)
}

// spawn starts the postmaster as a direct child.
func (p *LocalPostgres) spawn(bin string, cred *syscall.Credential, settings map[string]string) error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("compose: PostgreSQL log: %w", err)
	}
	defer logf.Close()
	if cred != nil {
		_ = os.Chown(p.logPath, int(cred.Uid), int(cred.Gid))
	}
	args := []string{"-D", p.dataDir, "-p", strconv.Itoa(p.port), "-k", p.dir, "-c", "listen_addresses=127.0.0.1"}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+settings[k])
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// SIGINT is PostgreSQL's fast shutdown: a dying harness leaves no server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGINT}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("compose: starting postgres: %w", err)
	}
	p.cmd, p.pid, p.done = cmd, cmd.Process.Pid, make(chan struct{})
	done := p.done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return nil
}

// waitReady waits until the server accepts a connection and runs a query.
func (p *LocalPostgres) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-p.done:
			tail := tailFile(p.logPath, 15)
			if strings.Contains(tail, "Address already in use") || strings.Contains(tail, "could not bind") {
				return fmt.Errorf("%w: PostgreSQL on port %d, log:\n%s", errPortInUse, p.port, indent(tail))
			}
			return fmt.Errorf("compose: postgres exited during start-up; log tail:\n%s", indent(tail))
		case <-ctx.Done():
			return fmt.Errorf("compose: PostgreSQL (pid %d) not accepting connections on 127.0.0.1:%d: %v (last error: %v); log tail:\n%s",
				p.pid, p.port, ctx.Err(), lastErr, indent(tailFile(p.logPath, 15)))
		case <-tick.C:
		}
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgconn.Connect(cctx, p.URL())
		if err == nil {
			_, err = conn.Exec(cctx, "SELECT 1").ReadAll()
			_ = conn.Close(cctx)
		}
		ccancel()
		if err == nil {
			return nil
		}
		lastErr = err
	}
}

// stop ends the postmaster: SIGINT (fast shutdown), SIGKILL after a grace.
func (p *LocalPostgres) stop() error {
	if p.cmd == nil {
		return nil
	}
	defer func() { p.cmd = nil }()
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("compose: SIGINT postgres (pid %d): %w", p.pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
	}
	p.logf("compose: postgres (pid %d) did not stop within 10s of SIGINT: SIGKILL", p.pid)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("compose: SIGKILL postgres (pid %d): %w", p.pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(reapTimeout):
		return fmt.Errorf("compose: postgres (pid %d) not reaped %v after SIGKILL", p.pid, reapTimeout)
	}
}

// Close stops the server (fast shutdown; its backends end with it) and
// removes its directory. Idempotent.
func (p *LocalPostgres) Close() error {
	p.closeOnce.Do(func() {
		err := p.stop()
		if rerr := os.RemoveAll(p.dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("compose: removing %s: %w", p.dir, rerr))
		}
		p.closeErr = err
	})
	return p.closeErr
}

// URL is the connection string of the server's postgres database (trust
// authentication: no password).
func (p *LocalPostgres) URL() string {
	u := url.URL{Scheme: "postgres", User: url.User(p.dbUser), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)),
		Path: "/postgres", RawQuery: "sslmode=disable"}
	return u.String()
}

// PID is the postmaster's process id (0 before the start).
func (p *LocalPostgres) PID() int { return p.pid }

// Port is the TCP port on 127.0.0.1.
func (p *LocalPostgres) Port() int { return p.port }

// Dir is the temporary directory (data/, postgres.log, the socket).
func (p *LocalPostgres) Dir() string { return p.dir }

// Version is `postgres --version` ("" when it could not be read).
func (p *LocalPostgres) Version() string { return p.version }

// LogTail returns the last n lines of the server log.
func (p *LocalPostgres) LogTail(n int) string { return tailFile(p.logPath, n) }

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
