package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
)

// --pg points the pipeline's orders at an existing database: the run
// creates its own schema there, its orders match report.json, and the
// schema is gone afterwards (nothing else in the database is touched).
func TestRunWithPipelineOnAnExistingDatabase(t *testing.T) {
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pg, err := compose.StartLocalPostgres(ctx, compose.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE team_data (id int); INSERT INTO team_data VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	code, text := cli(t, "run", "--pipeline", "--pg", pg.URL(), "--drain", "10s", "--duration", "2s", "--rate", "300",
		"--users", "3000", "--stock", "100", "--buckets", "1", "--out", out)
	if code != exitPass {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Pipeline map[string]any `json:"pipeline"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Pipeline == nil || !strings.Contains(text, "orders in PostgreSQL") {
		t.Fatalf("no pipeline in the report, or the database not named:\n%s", text)
	}
	var schemas int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'seckill_run_%'").Scan(&schemas); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM team_data").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 || rows != 1 {
		t.Fatalf("after the run: %d run schemas left (want 0), team_data has %d rows (want 1)", schemas, rows)
	}
}

// An unreachable database is bad input: exit 2 naming it, nothing left running.
func TestRunWithAnUnreachableDatabaseExitsTwo(t *testing.T) {
	clustertest.Need(t)
	before := redisServers(t)
	code, text := cli(t, "run", "--pipeline", "--pg", "postgres://seckill:secret@127.0.0.1:1/nope", "--duration", "1s", "--out", t.TempDir())
	if code != exitHarnessError || !strings.Contains(text, "127.0.0.1") || strings.Contains(text, "secret") {
		t.Fatalf("exit %d, want 2 naming the database without its password:\n%s", code, text)
	}
	if after := redisServers(t); after != before {
		t.Fatalf("redis-server processes left: before %q after %q", before, after)
	}
	code, text = cli(t, "run", "--pg", "postgres://127.0.0.1:1/nope", "--duration", "1s", "--out", t.TempDir())
	if code != exitHarnessError || !strings.Contains(text, "--pipeline") {
		t.Fatalf("--pg without a pipeline: exit %d:\n%s", code, text)
	}
	code, text = cli(t, "run", "--pipeline", "--pg-keep", "--duration", "1s", "--out", t.TempDir())
	if code != exitHarnessError || !strings.Contains(text, "add --pg postgres://") {
		t.Fatalf("--pg-keep without --pg: exit %d:\n%s", code, text)
	}
}
