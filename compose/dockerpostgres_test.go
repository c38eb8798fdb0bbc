package compose

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDockerPostgres starts the locally built PostgreSQL image (Debian's
// postgresql, never pulled) through testcontainers on the host network,
// runs a run schema's round trip in it, and removes it: no container,
// network or volume left, the port closed.
func TestDockerPostgres(t *testing.T) {
	image := localPostgresImage(t)
	leavesDockerAsFound(t)
	own := removesItsContainers(t)
	ctx := ctxT(t, 3*time.Minute)
	t0 := time.Now()
	db, err := StartDockerPostgresDB(ctx, DockerPostgresOptions{Image: image, Logf: tlogf(t)}, PostgresDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Since(t0)
	dp := db.Docker()
	if dp == nil || !strings.HasPrefix(dp.URL(), "postgres://seckill@127.0.0.1:") {
		t.Fatalf("docker %+v", dp)
	}
	own(dp.ContainerID())
	out, err := exec.Command("docker", "inspect", "-f", "{{.HostConfig.NetworkMode}} {{index .Config.Labels \""+DockerPostgresLabel+"\"}}", dp.ContainerID()).Output()
	if err != nil || !strings.HasPrefix(string(out), "host 127.0.0.1:") {
		t.Fatalf("docker inspect: %q %v, want the host network and the label", out, err)
	}
	if _, err := db.Pool().Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	var n int
	var version string
	if err := db.Pool().QueryRow(ctx, "SELECT count(*), version() FROM t").Scan(&n, &version); err != nil || n != 2 {
		t.Fatalf("count %d: %v", n, err)
	}
	url := dp.URL()
	t1 := time.Now()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: started and ready in %v (server ready %v), removed in %v", strings.Fields(version)[1], started.Round(time.Millisecond),
		dp.Ready().Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if c, err := pgx.Connect(cctx, url); err == nil {
		_ = c.Close(cctx)
		t.Fatal("the server still answers after Close")
	}
}
