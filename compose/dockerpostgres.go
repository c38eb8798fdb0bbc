package compose

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// DefaultPostgresImage is the image of a Docker PostgreSQL when neither
// DockerPostgresOptions.Image nor $SECKILL_POSTGRES_IMAGE names one.
const DefaultPostgresImage = "postgres:15"

// PostgresImageEnv names the environment variable that sets the image of a
// Docker PostgreSQL when DockerPostgresOptions.Image is "" (e.g. the image
// compose/testdata/build-images.sh builds locally from Debian's postgresql
// package on machines that reach no registry); unset means
// DefaultPostgresImage.
const PostgresImageEnv = "SECKILL_POSTGRES_IMAGE"

// DockerPostgresLabel is the label every Docker PostgreSQL container
// carries (its value: the address it serves), so a test or an operator can
// list what the harness started.
const DockerPostgresLabel = "seckill-harness.postgres"

// DockerPostgresOptions configure StartDockerPostgres.
type DockerPostgresOptions struct {
	// Image; "" means $SECKILL_POSTGRES_IMAGE, else DefaultPostgresImage.
	// The image follows the official postgres image's conventions:
	// POSTGRES_USER and POSTGRES_HOST_AUTH_METHOD=trust in the environment,
	// CMD ["postgres", server options…]; PGPORT is set too.
	Image string
	// DBUser is the database superuser; "" means "seckill".
	DBUser string
	// StartTimeout bounds the container's start until it accepts
	// connections (image pull included); 0 means 2 minutes.
	StartTimeout time.Duration
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// DockerPostgres is a PostgreSQL server in a container the harness started
// with testcontainers-go: on the host network (no bridge network is
// created), listening on 127.0.0.1 only, on a free port, trust
// authentication for DBUser, no Ryuk reaper (Close removes the container).
type DockerPostgres struct {
	ctr    *testcontainers.DockerContainer
	image  string
	port   int
	dbUser string
	ready  time.Duration

	closeOnce sync.Once
	closeErr  error
}

// StartDockerPostgres starts the container and returns once a connection
// to the server succeeds. Without a Docker engine the error wraps
// ErrNoDocker. Nothing is left running when it fails.
func StartDockerPostgres(ctx context.Context, opt DockerPostgresOptions) (*DockerPostgres, error) {
	disableReaperUnlessAsked()
	if opt.Image == "" {
		opt.Image = os.Getenv(PostgresImageEnv)
	}
	if opt.Image == "" {
		opt.Image = DefaultPostgresImage
	}
	if opt.DBUser == "" {
		opt.DBUser = "seckill"
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = 2 * time.Minute
	}
	if err := DockerAvailable(ctx); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	sctx, cancel := context.WithTimeout(ctx, opt.StartTimeout)
	defer cancel()
	prov, err := testcontainers.NewDockerProvider(
		testcontainers.WithDefaultBridgeNetwork(string(container.NetworkMode("host"))),
		testcontainers.WithLogger(tcLogger{opt.Logf}),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	req := testcontainers.ContainerRequest{
		Image: opt.Image,
		Env: map[string]string{"POSTGRES_USER": opt.DBUser, "POSTGRES_HOST_AUTH_METHOD": "trust",
			"PGPORT": strconv.Itoa(port), "PGDATA": "/tmp/pgdata"},
		Cmd:                []string{"postgres", "-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(port)},
		HostConfigModifier: func(hc *container.HostConfig) { hc.NetworkMode = "host" },
		Labels:             map[string]string{DockerPostgresLabel: addr},
		WaitingFor:         wait.ForLog("database system is ready to accept connections").WithStartupTimeout(opt.StartTimeout),
	}
	gc, err := prov.RunContainer(sctx, req)
	ctr, _ := gc.(*testcontainers.DockerContainer)
	if gc != nil && ctr == nil {
		_ = gc.Terminate(context.Background())
		return nil, fmt.Errorf("compose: starting a PostgreSQL container (%s): unexpected container type %T", opt.Image, gc)
	}
	d := &DockerPostgres{ctr: ctr, image: opt.Image, port: port, dbUser: opt.DBUser}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("compose: starting a PostgreSQL container (%s) on %s: %w (no registry here? build it: sh compose/testdata/build-images.sh postgres, then %s=<its tag>)",
			opt.Image, addr, err, PostgresImageEnv), d.Close())
	}
	// The official image logs "ready" once for its init server too: ready
	// means a connection to the final server's port succeeds.
	for {
		c, cerr := pgconn.Connect(sctx, d.URL())
		if cerr == nil {
			_ = c.Close(sctx)
			break
		}
		if sctx.Err() != nil {
			return nil, errors.Join(fmt.Errorf("compose: PostgreSQL container (%s) on %s did not accept connections within %s: %v", opt.Image, addr, opt.StartTimeout, cerr), d.Close())
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.ready = time.Since(t0)
	if opt.Logf != nil {
		opt.Logf("compose: PostgreSQL container %.12s (%s) on %s ready in %v", ctr.GetContainerID(), opt.Image, addr, d.ready.Round(time.Millisecond))
	}
	return d, nil
}

// URL is the server's connection string (database postgres, no password).
func (d *DockerPostgres) URL() string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", d.dbUser, d.port)
}

// ContainerID is the container's id.
func (d *DockerPostgres) ContainerID() string { return d.ctr.GetContainerID() }

// Image is the container's image.
func (d *DockerPostgres) Image() string { return d.image }

// Ready is how long the start took, until the server accepted a connection.
func (d *DockerPostgres) Ready() time.Duration { return d.ready }

// Close removes the container (and its data). Idempotent.
func (d *DockerPostgres) Close() error {
	if d == nil || d.ctr == nil {
		return nil
	}
	d.closeOnce.Do(func() {
		ctx, cancel := dockerCtx()
		defer cancel()
		if err := d.ctr.Terminate(ctx); err != nil {
			d.closeErr = fmt.Errorf("compose: removing the PostgreSQL container %.12s: %w", d.ctr.GetContainerID(), err)
		}
	})
	return d.closeErr
}
