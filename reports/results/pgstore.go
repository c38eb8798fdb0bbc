package results

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Table is the PostgreSQL table of the results history (created if
// missing, in the connection's search_path): one row per record, the
// record itself as jsonb.
const Table = "seckill_harness_results"

// PGStore is the results history in PostgreSQL (--results-db URL).
type PGStore struct {
	conn  *pgx.Conn
	where string
	keep  int
	warn  func(string)
}

// OpenPG connects to o.DBURL (a password from PGPASSWORD or ~/.pgpass,
// never printed) and creates Table when missing.
func OpenPG(ctx context.Context, o Options) (*PGStore, error) {
	cfg, err := pgx.ParseConfig(o.DBURL)
	if err != nil {
		return nil, fmt.Errorf("--results-db: the PostgreSQL URL is malformed: want postgres://user@host:port/db (a password goes in PGPASSWORD or ~/.pgpass)")
	}
	where := fmt.Sprintf("postgres://%s@%s/%s", cfg.User, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), cfg.Database)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("--results-db %s: connecting: %s (is the server up, and the URL right?)", where, scrub(err.Error(), cfg.Password))
	}
	ddl := `CREATE TABLE IF NOT EXISTS ` + Table + ` (
		id bigserial PRIMARY KEY,
		scenario text NOT NULL,
		at timestamptz NOT NULL,
		record jsonb NOT NULL)`
	if _, err = conn.Exec(cctx, ddl); err == nil {
		_, err = conn.Exec(cctx, `CREATE INDEX IF NOT EXISTS `+Table+`_scenario_at ON `+Table+` (scenario, at)`)
	}
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("--results-db %s: creating table %s: %s (the user needs CREATE on the schema)", where, Table, scrub(err.Error(), cfg.Password))
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	return &PGStore{conn: conn, where: where, keep: o.Keep, warn: o.Warn}, nil
}

func scrub(msg, password string) string {
	if password == "" {
		return msg
	}
	return strings.ReplaceAll(msg, password, "xxxxx")
}

// Where is the database URL without its password, and the table.
func (s *PGStore) Where() string { return s.where + " table " + Table }

// Close closes the connection.
func (s *PGStore) Close() error { return s.conn.Close(context.Background()) }

// Append inserts r and deletes the scenario's rows beyond the newest Keep,
// in one transaction.
func (s *PGStore) Append(ctx context.Context, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("results history: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO `+Table+` (scenario, at, record) VALUES ($1, $2, $3)`, r.Scenario, r.At, b); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM `+Table+` WHERE scenario = $1 AND id NOT IN
			(SELECT id FROM `+Table+` WHERE scenario = $1 ORDER BY at DESC, id DESC LIMIT $2)`, r.Scenario, s.keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("--results-db %s: append: %w", s.where, err)
	}
	return nil
}

// Records reads the scenario's rows ("" : every row), oldest first; a row
// whose record does not parse is skipped with a warning naming its id.
func (s *PGStore) Records(ctx context.Context, scenario string) ([]Record, error) {
	rows, err := s.conn.Query(ctx, `SELECT id, record::text FROM `+Table+` WHERE $1 = '' OR scenario = $1 ORDER BY at, id`, scenario)
	if err != nil {
		return nil, fmt.Errorf("--results-db %s: read: %w", s.where, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var id int64
		var text string
		if err := rows.Scan(&id, &text); err != nil {
			return nil, fmt.Errorf("--results-db %s: read: %w", s.where, err)
		}
		var r Record
		if err := json.Unmarshal([]byte(text), &r); err != nil || r.Scenario == "" || r.At.IsZero() {
			s.warn(fmt.Sprintf("%s row id %d: skipped, not a record", Table, id))
			continue
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("--results-db %s: read: %w", s.where, err)
	}
	return out, nil
}
