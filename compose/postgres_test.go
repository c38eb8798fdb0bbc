package compose

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needPostgres skips nothing: the tests run against the real server, and a
// missing installation is a failure naming the fix.
func needPostgres(t *testing.T) {
	t.Helper()
	integration(t, "PostgreSQL")
	if _, err := postgresBinDir(""); err != nil {
		t.Fatal(err)
	}
}

// alive reports whether pid exists (signal 0).
func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// backendPIDs lists the PIDs whose parent is the postmaster.
func backendPIDs(t *testing.T, postmaster int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		var ppid, pid int
		if len(f) > 1 {
			ppid = atoiOr0(f[1])
			pid = atoiOr0(e.Name())
		}
		if ppid == postmaster {
			out = append(out, pid)
		}
	}
	return out
}

func atoiOr0(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestLocalPostgresServesAndLeavesNothing(t *testing.T) {
	needPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := StartPostgresDB(ctx, PostgresOptions{Logf: t.Logf}, PostgresDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lp := db.Local()
	pid, dir := lp.PID(), lp.Dir()
	if !strings.HasPrefix(lp.URL(), "postgres://seckill@127.0.0.1:") {
		t.Errorf("URL %s: want the seckill user on 127.0.0.1", lp.URL())
	}
	var sp, addr string
	if err := db.Pool().QueryRow(ctx, "SELECT current_schema(), host(inet_server_addr())").Scan(&sp, &addr); err != nil {
		t.Fatal(err)
	}
	if sp != db.Schema() || addr != "127.0.0.1" {
		t.Errorf("current_schema %q on %s, want %q on 127.0.0.1", sp, addr, db.Schema())
	}
	if _, err := db.Pool().Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	backends := backendPIDs(t, pid)
	if len(backends) == 0 {
		t.Fatalf("no backend processes under postmaster %d", pid)
	}
	t.Logf("postmaster %d with %d children, %s, dir %s", pid, len(backends), lp.Version(), dir)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("postmaster %d still alive after Close", pid)
	}
	for _, b := range backends {
		if alive(b) {
			t.Errorf("postgres child %d still alive after Close", b)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", dir, err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// An existing database: the run's schema is created, its tables land in
// it, another schema is untouched, and Close drops only the run's schema.
func TestOpenPostgresOwnSchemaDroppedAtClose(t *testing.T) {
	needPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lp, err := StartLocalPostgres(ctx, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	a, err := OpenPostgres(ctx, lp.URL(), PostgresDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenPostgres(ctx, lp.URL(), PostgresDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Schema() == b.Schema() || !strings.HasPrefix(a.Schema(), "seckill_run_") {
		t.Fatalf("schemas %q and %q: want two distinct seckill_run_*", a.Schema(), b.Schema())
	}
	for _, d := range []*PostgresDB{a, b} {
		if _, err := d.Pool().Exec(ctx, "CREATE TABLE orders (id int)"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	var n int
	q := "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1"
	if err := b.Pool().QueryRow(ctx, q, a.Schema()).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s after Close: count %d, err %v (want dropped)", a.Schema(), n, err)
	}
	if err := b.Pool().QueryRow(ctx, q, b.Schema()).Scan(&n); err != nil || n != 1 {
		t.Errorf("the other run's schema %s: count %d, err %v (want untouched)", b.Schema(), n, err)
	}
	if !strings.HasPrefix(b.Redacted(), "postgres://seckill@127.0.0.1:") {
		t.Errorf("Redacted %q", b.Redacted())
	}
}

// Credentials never appear in errors or in Redacted.
func TestOpenPostgresNeverPrintsThePassword(t *testing.T) {
	needPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lp, err := StartLocalPostgres(ctx, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	const secret = "s3cr3t-Pa55"
	// A wrong database: the server refuses after authentication.
	u := strings.Replace(lp.URL(), "seckill@", "seckill:"+secret+"@", 1)
	u = strings.Replace(u, "/postgres?", "/no_such_db?", 1)
	_, err = OpenPostgres(ctx, u, PostgresDBOptions{ConnectTimeout: 5 * time.Second})
	if err == nil {
		t.Fatal("connected to a database that does not exist")
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("error prints the password: %v", err)
	}
	t.Logf("error: %v", err)
	// The password from the environment works and is not printed either.
	t.Setenv("PGPASSWORD", secret)
	db, err := OpenPostgres(ctx, lp.URL(), PostgresDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if strings.Contains(db.Redacted(), secret) {
		t.Fatalf("Redacted prints the password: %s", db.Redacted())
	}
	_, err = OpenPostgres(ctx, "postgres://u:"+secret+"@127.0.0.1:notaport/db", PostgresDBOptions{})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("malformed URL: %v", err)
	}
	t.Logf("malformed: %v", err)
}

func TestStartLocalPostgresMissingBinariesNamesTheFix(t *testing.T) {
	_, err := StartLocalPostgres(context.Background(), PostgresOptions{BinDir: t.TempDir()})
	if !errors.Is(err, ErrPostgresMissing) || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Fatalf("err %v: want ErrPostgresMissing naming apt-get install postgresql", err)
	}
	_, err = StartLocalPostgres(context.Background(), PostgresOptions{Settings: map[string]string{"port": "1"}})
	if err == nil || !strings.Contains(err.Error(), "port") {
		t.Fatalf("a port setting was accepted: %v", err)
	}
}

// helperEnv makes the test binary a stand-in harness that starts a
// LocalPostgres, prints its postmaster PID and directory, and waits to be
// killed.
const helperEnv = "SECKILL_PG_KILLED_HARNESS"

// runKilledHarnessHelper is called first by TestMain: in the helper
// process it never returns.
func runKilledHarnessHelper() {
	if os.Getenv(helperEnv) == "1" {
		lp, err := StartLocalPostgres(context.Background(), PostgresOptions{})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Printf("PID %d %s\n", lp.PID(), lp.Dir())
		select {}
	}
}

// A harness killed with SIGKILL (no Close) leaves no server behind: the
// postmaster gets SIGINT from the kernel (Pdeathsig) and shuts down fast
// with its backends. Its directory stays: nothing runs to remove it.
func TestLocalPostgresDiesWithAKilledHarness(t *testing.T) {
	needPostgres(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper: %v (%q)", err, line)
	}
	var pid int
	var dir string
	if _, err := fmt.Sscanf(line, "PID %d %s", &pid, &dir); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper said %q", line)
	}
	defer os.RemoveAll(dir)
	backends := backendPIDs(t, pid)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL) // ours: the helper's child
		t.Fatalf("postmaster %d outlived the killed harness", pid)
	}
	time.Sleep(500 * time.Millisecond)
	for _, b := range backends {
		if alive(b) {
			t.Errorf("postgres child %d outlived the killed harness", b)
		}
	}
	t.Logf("postmaster %d and its %d children gone after the harness was SIGKILLed", pid, len(backends))
}
