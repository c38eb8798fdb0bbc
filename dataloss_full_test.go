package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"seckill-harness/compose"
	"seckill-harness/reports"
)

// The built-in failover-data-loss-full demonstration against the real
// cluster and a PostgreSQL the test reads itself (--pg, --pg-keep): Redis
// loses acknowledged reservations and resells their units while the
// pipeline runs; PostgreSQL's conditional decrement keeps the orders
// within the stock, and reconciliation names every lost reservation by id.
func TestFailoverDataLossFullPostgresRefusesTheOversell(t *testing.T) {
	if testing.Short() {
		t.Skip("a 16 s run against a real cluster and PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pg, err := compose.StartLocalPostgres(ctx, compose.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	out := t.TempDir()
	code, text := cli(t, "run", "failover-data-loss-full", "--pg", pg.URL(), "--pg-keep", "--out", out)
	if code != exitPass {
		t.Fatalf("exit %d, want 0 (the window reproduced, PostgreSQL within the stock):\n%s", code, text)
	}
	schema := regexp.MustCompile(`schema (seckill_run_[a-z0-9_]+) \(kept`).FindStringSubmatch(text)
	if schema == nil {
		t.Fatalf("the log does not name the kept schema:\n%s", text)
	}
	rep := readReport(t, out)

	// Redis lost acknowledged reservations.
	i6 := reportInvariant(rep, "I6")
	if i6 == nil || i6.Status != reports.StatusFail || i6.Expected == nil || !i6.Expected.Met || rep.LostAcks < 1 {
		t.Fatalf("I6 = %+v, lost_acks %d: want lost acknowledged reservations", i6, rep.LostAcks)
	}
	lost := map[string]bool{}
	named, _ := i6.Evidence["lost_acks"].([]any)
	for _, n := range named {
		if m, _ := n.(map[string]any); m != nil {
			lost[m["reservation_id"].(string)] = true
		}
	}
	if int64(len(lost)) != rep.LostAcks {
		t.Fatalf("I6 names %d lost acks, report.lost_acks %d", len(lost), rep.LostAcks)
	}

	// PostgreSQL, read directly: the orders never exceed the stock.
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	s := pgx.Identifier{schema[1]}.Sanitize()
	var total, sold, created, ledger int64
	if err := conn.QueryRow(ctx, `SELECT total, sold, (SELECT count(*) FROM `+s+`.orders WHERE status = 'CREATED'),
		(SELECT coalesce(sum(delta), 0) FROM `+s+`.ledger) FROM `+s+`.stock`).Scan(&total, &sold, &created, &ledger); err != nil {
		t.Fatal(err)
	}
	if created > total || sold > total || created != sold || ledger != sold {
		t.Fatalf("PostgreSQL: %d CREATED orders, sold %d, ledger %d, stock %d: want orders = sold = ledger <= stock", created, sold, ledger, total)
	}
	var refusedResale int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+s+`.inbox WHERE result IN ('no_stock', 'user_already_ordered', 'duplicate_reservation')`).Scan(&refusedResale); err != nil {
		t.Fatal(err)
	}
	if e1 := reportInvariant(rep, "E1"); e1 == nil || e1.Status != reports.StatusPass {
		t.Errorf("E1 = %+v, want pass", e1)
	}

	// Reconciliation names every lost reservation, with its class.
	var recon struct {
		Final struct {
			Counts      map[string]int `json:"counts"`
			Divergences []struct {
				Class string `json:"class"`
				RID   string `json:"reservation_id"`
			} `json:"divergences"`
		} `json:"final"`
	}
	raw, _ := json.Marshal(rep.Pipeline["reconciliation"])
	if err := json.Unmarshal(raw, &recon); err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, d := range recon.Final.Divergences {
		listed[d.RID] = d.Class
	}
	var withOrder int
	for rid := range lost {
		switch listed[rid] {
		case "order_reservation_lost":
			withOrder++
		case "accepted_reservation_lost":
		default:
			t.Errorf("lost reservation %s: reconciliation says %q, want order_reservation_lost or accepted_reservation_lost", rid, listed[rid])
		}
	}
	t.Logf("lost acks %d (%d with an order in PostgreSQL); PostgreSQL: stock %d, sold %d, %d CREATED orders, ledger %d, %d resold units refused; reconciliation %v",
		rep.LostAcks, withOrder, total, sold, created, ledger, refusedResale, recon.Final.Counts)
}
