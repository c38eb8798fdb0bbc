package compose

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresDBOptions configure OpenPostgres.
type PostgresDBOptions struct {
	// MaxConns is the pool size; 0 means 16.
	MaxConns int32
	// Keep leaves the run's schema in the database at Close (for a look
	// with psql afterwards); by default it is dropped.
	Keep bool
	// ConnectTimeout bounds the first connection; 0 means 10s.
	ConnectTimeout time.Duration
}

// PostgresDB is one run's own schema in a PostgreSQL database: OpenPostgres
// creates the schema seckill_run_<id> and a pool whose connections have it as
// search_path (every table the run creates lands there); Close drops it
// (CASCADE) unless Keep, and closes the pool. The database is somebody
// else's or a LocalPostgres: the harness never touches other schemas.
type PostgresDB struct {
	pool     *pgxpool.Pool
	schema   string
	redacted string
	keep     bool
	local    *LocalPostgres  // owned: closed after the schema is dropped
	docker   *DockerPostgres // owned: removed after the schema is dropped
}

// OpenPostgres connects to the database conn names (a postgres:// URL or a
// key=value string; "" means the PG* environment variables: PGHOST, PGPORT,
// PGDATABASE, PGUSER, PGPASSWORD, PGSSLMODE…, and ~/.pgpass), creates the
// run's schema and returns the pool. Credentials come from conn or the
// environment and are never printed: errors and Redacted name only user,
// host, port and database.
func OpenPostgres(ctx context.Context, conn string, opt PostgresDBOptions) (*PostgresDB, error) {
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		// pgx's parse errors may quote the string: never repeat it.
		return nil, fmt.Errorf("compose: PostgreSQL connection string %s is malformed: want postgres://user@host:port/db or key=value pairs (a password goes in PGPASSWORD or ~/.pgpass)", redactConn(conn))
	}
	cc := cfg.ConnConfig
	red := fmt.Sprintf("postgres://%s@%s/%s", cc.User, net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))), cc.Database)
	if opt.MaxConns <= 0 {
		opt.MaxConns = 16
	}
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = 10 * time.Second
	}
	cfg.MaxConns = opt.MaxConns
	schema := "seckill_run_" + strconv.FormatInt(time.Now().Unix(), 36) + "_" + randomHex(4)
	cc.RuntimeParams["search_path"] = schema
	cctx, cancel := context.WithTimeout(ctx, opt.ConnectTimeout)
	defer cancel()
	// Create the schema on a plain connection first: the pool's
	// connections name it in search_path from their first query on.
	c, err := pgx.ConnectConfig(cctx, cc.Copy())
	if err != nil {
		return nil, fmt.Errorf("compose: connecting to PostgreSQL %s: %s", red, scrub(err.Error(), cc.Password))
	}
	_, err = c.Exec(cctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	_ = c.Close(context.WithoutCancel(cctx))
	if err != nil {
		return nil, fmt.Errorf("compose: CREATE SCHEMA %s on %s: %s (the user needs CREATE on the database)", schema, red, scrub(err.Error(), cc.Password))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		if err = pool.Ping(cctx); err != nil {
			pool.Close()
		}
	}
	if err != nil {
		err = fmt.Errorf("compose: PostgreSQL pool on %s: %s", red, scrub(err.Error(), cc.Password))
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer dcancel()
		if c, cerr := pgx.ConnectConfig(dctx, cc.Copy()); cerr == nil {
			_, _ = c.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			_ = c.Close(dctx)
		}
		return nil, err
	}
	return &PostgresDB{pool: pool, schema: schema, redacted: red, keep: opt.Keep}, nil
}

// StartPostgresDB starts a LocalPostgres and opens a run schema in it; Close
// drops the schema and stops the server (no process, no directory left).
func StartPostgresDB(ctx context.Context, local PostgresOptions, opt PostgresDBOptions) (*PostgresDB, error) {
	lp, err := StartLocalPostgres(ctx, local)
	if err != nil {
		return nil, err
	}
	db, err := OpenPostgres(ctx, lp.URL(), opt)
	if err != nil {
		return nil, errors.Join(err, lp.Close())
	}
	db.local = lp
	return db, nil
}

// StartDockerPostgresDB starts a DockerPostgres and opens a run schema in
// it; Close drops the schema and removes the container.
func StartDockerPostgresDB(ctx context.Context, docker DockerPostgresOptions, opt PostgresDBOptions) (*PostgresDB, error) {
	dp, err := StartDockerPostgres(ctx, docker)
	if err != nil {
		return nil, err
	}
	db, err := OpenPostgres(ctx, dp.URL(), opt)
	if err != nil {
		return nil, errors.Join(err, dp.Close())
	}
	db.docker = dp
	return db, nil
}

// Docker is the container the harness started for this database (nil
// otherwise).
func (d *PostgresDB) Docker() *DockerPostgres { return d.docker }

// Pool is the run's connection pool (search_path = Schema).
func (d *PostgresDB) Pool() *pgxpool.Pool { return d.pool }

// Schema is the run's schema name.
func (d *PostgresDB) Schema() string { return d.schema }

// Redacted names the database without credentials:
// postgres://user@host:port/db.
func (d *PostgresDB) Redacted() string { return d.redacted }

// Local is the server the harness started for this database (nil for an
// existing database).
func (d *PostgresDB) Local() *LocalPostgres { return d.local }

// Close drops the run's schema (unless Keep), closes the pool and, for a
// database the harness started, stops the server and removes its files.
func (d *PostgresDB) Close() error {
	var errs []error
	if d.pool != nil {
		if !d.keep {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if _, err := d.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{d.schema}.Sanitize()+" CASCADE"); err != nil {
				errs = append(errs, fmt.Errorf("compose: DROP SCHEMA %s on %s: %w", d.schema, d.redacted, err))
			}
			cancel()
		}
		d.pool.Close()
		d.pool = nil
	}
	if d.local != nil {
		errs = append(errs, d.local.Close())
		d.local = nil
	}
	if d.docker != nil {
		errs = append(errs, d.docker.Close())
		d.docker = nil
	}
	return errors.Join(errs...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return strconv.Itoa(os.Getpid())
	}
	return hex.EncodeToString(b)
}

// scrub removes a password from an error text (pgx does not print it, but a
// server or a wrapper might).
func scrub(s, password string) string {
	if password != "" {
		s = strings.ReplaceAll(s, password, "xxxxx")
	}
	return s
}

// redactConn is a printable form of a connection string that could not be
// parsed: a URL with its password replaced, or only the keys of key=value.
func redactConn(conn string) string {
	if conn == "" {
		return `"" (the PG* environment)`
	}
	if i := strings.Index(conn, "://"); i >= 0 {
		rest := conn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user, _, _ := strings.Cut(rest[:at], ":")
			rest = user + ":xxxxx@" + rest[at+1:]
			if !strings.Contains(conn[i+3:at+i+3], ":") {
				rest = user + "@" + conn[i+3+at+1:]
			}
		}
		return strconv.Quote(conn[:i+3] + rest)
	}
	var keys []string
	for _, f := range strings.Fields(conn) {
		k, _, _ := strings.Cut(f, "=")
		keys = append(keys, k+"=…")
	}
	return strconv.Quote(strings.Join(keys, " "))
}
