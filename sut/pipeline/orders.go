package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"seckill-harness/lua"
	"seckill-harness/reports"
)

// Orders is the order service's database: PostgreSQL, the final defence.
// Its schema is the one a team would have (tables in Orders.Schema):
//
//	stock   (activity_id, sku_id) primary key, total, sold — the final stock row; an order takes a
//	        unit with UPDATE stock SET sold = sold + 1 WHERE activity_id = $1 AND sku_id = $2 AND sold < total
//	orders  one row per order: order_id, activity, sku, user, reservation_id, message_id, bucket, status
//	        (CREATED); unique: one CREATED order per (activity, sku, user), one order per reservation_id,
//	        one per message_id, one per order_id
//	inbox   message_id primary key (consumer dedupe): the decision taken for the message (created,
//	        no_stock, user_already_ordered, duplicate_reservation, rejected, refused) and why
//	ledger  the stock ledger (库存流水): one row per change of stock.sold (delta, sold_after, reason,
//	        reservation_id, order_id), for reconciliation: sold == Σ delta == #CREATED orders
//
// One order message is one transaction (see the order stage). The tables
// are created by the first pipeline Start that uses the store; two
// pipelines (activities) may share one store.
type Orders struct {
	pool   *pgxpool.Pool
	schema string
	owned  bool // Close drops the schema

	mu      sync.Mutex
	variant string // the schema variant created ("" before setup)

	hmu     sync.Mutex
	txHist  *hdrhistogram.Histogram // µs per order transaction (begin → commit or rollback)
	rowHist *hdrhistogram.Histogram // µs in the stock-row UPDATE (the hot row's lock wait shows here)
	first   time.Time               // first created order's commit
	last    time.Time               // last created order's commit
	created int64
}

var schemaSeq atomic.Int64

// OrdersOptions configure OpenOrders.
type OrdersOptions struct {
	// Schema holds the tables. "" means the pool's current schema (e.g. the
	// run schema of compose.OpenPostgres). With NewSchema a fresh schema
	// orders_<random> is created and dropped at Close.
	Schema    string
	NewSchema bool
}

// OpenOrders binds an order store to pool. The tables are created at the
// first pipeline Start (their constraints depend on the pipeline's defects).
func OpenOrders(ctx context.Context, pool *pgxpool.Pool, opt OrdersOptions) (*Orders, error) {
	if pool == nil {
		return nil, errors.New("pipeline: OpenOrders needs a PostgreSQL pool (compose.OpenPostgres or compose.StartPostgresDB)")
	}
	o := &Orders{pool: pool, schema: opt.Schema,
		txHist: hdrhistogram.New(1, 60_000_000, 3), rowHist: hdrhistogram.New(1, 60_000_000, 3)}
	switch {
	case opt.NewSchema:
		o.schema = fmt.Sprintf("orders_%x_%d", time.Now().UnixNano(), schemaSeq.Add(1))
		if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{o.schema}.Sanitize()); err != nil {
			return nil, fmt.Errorf("pipeline: CREATE SCHEMA %s: %w", o.schema, err)
		}
		o.owned = true
	case o.schema == "":
		if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&o.schema); err != nil {
			return nil, fmt.Errorf("pipeline: reading the current schema: %w", err)
		}
	}
	return o, nil
}

// Schema is the schema holding the tables.
func (o *Orders) Schema() string { return o.schema }

// Pool is the connection pool.
func (o *Orders) Pool() *pgxpool.Pool { return o.pool }

// Close drops the schema when OpenOrders created it (NewSchema); the pool
// is the caller's.
func (o *Orders) Close() error {
	if o == nil || !o.owned {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := o.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{o.schema}.Sanitize()+" CASCADE")
	return err
}

// t qualifies a table name with the schema.
func (o *Orders) t(name string) string { return pgx.Identifier{o.schema, name}.Sanitize() }

// Constraint names (the order stage maps unique violations to results by them).
const (
	ConstraintOneValidOrderPerUser = "orders_one_valid_per_user"
	ConstraintOneOrderPerResv      = "orders_one_per_reservation"
	ConstraintOneOrderPerMessage   = "orders_one_per_message"
	ConstraintOrderID              = "orders_order_id_key"
)

// setup creates the tables (idempotent for the same variant). Defects
// OrderNoDedupe (no inbox dedupe, no unique index on orders) and
// OrderNoUserUnique (no one-valid-order-per-user index) change the schema,
// so a store serves one variant only.
func (o *Orders) setup(ctx context.Context, d Defects) error {
	variant := "correct"
	switch {
	case d.OrderNoDedupe:
		variant = "no-unique-constraints"
	case d.OrderNoUserUnique:
		variant = "no-user-unique"
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.variant != "" {
		if o.variant != variant {
			return fmt.Errorf("pipeline: order store %s already holds the %s schema, the pipeline wants %s: open another store (OrdersOptions.NewSchema)", o.schema, o.variant, variant)
		}
		return nil
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + o.t("stock") + ` (
			activity_id text NOT NULL, sku_id text NOT NULL,
			total bigint NOT NULL CHECK (total >= 0), sold bigint NOT NULL DEFAULT 0 CHECK (sold >= 0),
			PRIMARY KEY (activity_id, sku_id))`,
		`CREATE TABLE IF NOT EXISTS ` + o.t("orders") + ` (
			id bigserial PRIMARY KEY, order_id text NOT NULL,
			activity_id text NOT NULL, sku_id text NOT NULL, user_id text NOT NULL,
			reservation_id text NOT NULL, message_id text NOT NULL, bucket int NOT NULL,
			status text NOT NULL DEFAULT 'CREATED', created_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`CREATE TABLE IF NOT EXISTS ` + o.t("inbox") + ` (
			message_id text PRIMARY KEY, reservation_id text NOT NULL, activity_id text NOT NULL,
			result text NOT NULL, reason text NOT NULL DEFAULT '', order_id text NOT NULL DEFAULT '',
			delivery bigint NOT NULL, handled_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`CREATE TABLE IF NOT EXISTS ` + o.t("ledger") + ` (
			id bigserial PRIMARY KEY, activity_id text NOT NULL, sku_id text NOT NULL,
			reservation_id text NOT NULL, order_id text NOT NULL, delta bigint NOT NULL, sold_after bigint NOT NULL,
			reason text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
	}
	if variant != "no-unique-constraints" {
		stmts = append(stmts,
			`CREATE UNIQUE INDEX IF NOT EXISTS `+ConstraintOrderID+` ON `+o.t("orders")+` (order_id)`,
			`CREATE UNIQUE INDEX IF NOT EXISTS `+ConstraintOneOrderPerResv+` ON `+o.t("orders")+` (reservation_id)`,
			`CREATE UNIQUE INDEX IF NOT EXISTS `+ConstraintOneOrderPerMessage+` ON `+o.t("orders")+` (message_id)`)
		if variant != "no-user-unique" {
			stmts = append(stmts, `CREATE UNIQUE INDEX IF NOT EXISTS `+ConstraintOneValidOrderPerUser+` ON `+o.t("orders")+
				` (activity_id, sku_id, user_id) WHERE status = 'CREATED'`)
		}
	}
	for _, s := range stmts {
		if _, err := o.pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("pipeline: order schema in %s: %w", o.schema, err)
		}
	}
	o.variant = variant
	return nil
}

// prepareActivity puts the activity's stock row in place: total = the
// activity's whole stock (all buckets). An existing row is left alone.
func (o *Orders) prepareActivity(ctx context.Context, a *lua.Activity) error {
	_, err := o.pool.Exec(ctx, `INSERT INTO `+o.t("stock")+` (activity_id, sku_id, total) VALUES ($1, $2, $3)
		ON CONFLICT (activity_id, sku_id) DO NOTHING`, a.ID, a.SKU, a.Stock)
	if err != nil {
		return fmt.Errorf("pipeline: stock row for %s/%s: %w", a.ID, a.SKU, err)
	}
	return nil
}

// Order decisions (inbox.result and OrderRow.Result).
const (
	OrderCreated             = "created"
	OrderRejected            = "rejected"              // the business said no (Config.Order.Reject)
	OrderNoStock             = "no_stock"              // the conditional decrement found sold = total
	OrderUserAlreadyOrdered  = "user_already_ordered"  // the one-valid-order-per-user index refused
	OrderDuplicateResv       = "duplicate_reservation" // the reservation (or message) already has an order
	OrderRefused             = "refused"               // the Redis fence refused: no order
	orderDuplicateMessageTag = "duplicate_message"     // inbox hit: not a row, only a counter
)

// IsRejection reports whether result is a recorded rejection (the
// reservation goes REJECTED -> RELEASE_PENDING -> RELEASED).
func IsRejection(result string) bool {
	switch result {
	case OrderRejected, OrderNoStock, OrderUserAlreadyOrdered, OrderDuplicateResv:
		return true
	}
	return false
}

// errorCode is transition.lua's error_code for a rejection.
func errorCode(result string) string { return strings.ToUpper(result) }

// orderTx is one order message's transaction, as the order stage runs it.
type orderTx struct {
	act        *lua.Activity
	m          message
	delivery   uint64
	businessNo bool // Config.Order.Reject drew "reject"
	defects    Defects
	fence      func(result string) (fenced bool, reason string, err error)
	// precheck reads the reservation before the decision: refuse is true
	// (with the reason) when its status can no longer take the fence
	// (released, being released, rejected, or gone), so that a late copy
	// takes no unit, not even for a moment.
	precheck     func() (refuse bool, reason string, err error)
	orderID      string
	duplicateMsg bool
	fencedNow    bool         // the fence answered UPDATED or IDEMPOTENT in this delivery
	hooks        *commitHooks // a test's failure injection (nil in production)
}

// handle decides the message in PostgreSQL first and fences Redis after:
// one transaction claims the inbox row (dedupe on message_id), takes the
// decision (business reject, or the conditional stock decrement + the order
// insert + a ledger row, under a savepoint), records it in the inbox and
// COMMITs; only then is the Redis fence (ORDER_CREATED or REJECTED) written.
// The order of the dual write is the one whose failure reconciliation can
// explain and repair: a fence that fails or never runs after the commit
// leaves an order whose reservation is still ENQUEUED (order_not_fenced,
// repaired from PostgreSQL), never an ORDER_CREATED reservation without an
// order. A Go error before the commit rolls everything back and the
// delivery comes again; a Go error after it (the fence) also brings the
// delivery again, and a delivery whose message the inbox already decided
// re-applies the recorded decision's fence (x.duplicateMsg). A fence the
// state machine refuses after the commit cancels the order in a second
// transaction (status CANCELLED, the unit given back to stock.sold with a
// ledger row) and records "refused" — unless Defects.OrderIgnoresFence.
func (o *Orders) handle(ctx context.Context, x *orderTx) (row OrderRow, err error) {
	began := time.Now()
	row = OrderRow{MessageID: x.m.ID, RID: x.m.RID, Bucket: x.m.Bucket, User: x.m.User, Delivery: x.delivery}
	committed := false
	defer func() {
		o.observeTx(time.Since(began), committed && row.Result == OrderCreated && err == nil && !x.duplicateMsg)
	}()
	result, reason, orderID, err := o.decideAndCommit(ctx, x)
	if err != nil {
		return row, err
	}
	committed = true
	row.Result, row.Reason, row.OrderID = result, reason, orderID
	if x.hooks != nil && x.hooks.after != nil && !x.duplicateMsg {
		x.hooks.after(x.m.ID)
	}
	if result == OrderRefused {
		return row, nil // refused before the decision (or a duplicate of such a message): nothing to fence
	}
	fenced, fenceReason, err := x.fence(result)
	if err != nil {
		return row, fmt.Errorf("redis fence after commit (the decision %s stands; the delivery comes again to fence it): %w", result, err)
	}
	switch {
	case fenced:
		x.fencedNow = true
	case x.duplicateMsg:
		// The decision was fenced (or refused) by an earlier delivery and
		// Redis has moved on (a rejection already released): nothing to do.
	case x.defects.OrderIgnoresFence && result == OrderCreated:
		row.Reason = "defect order-ignores-fence: fence refused (" + fenceReason + ")"
	default:
		if err := o.refuse(context.WithoutCancel(ctx), x, result, fenceReason); err != nil {
			return row, fmt.Errorf("recording the refused fence: %w", err)
		}
		row.Result, row.Reason, row.OrderID = OrderRefused, fenceReason, ""
	}
	row.At = time.Now()
	return row, nil
}

// decideAndCommit is the PostgreSQL half: it returns the decision taken now
// or, for a message the inbox already holds (x.duplicateMsg), the one
// recorded. The commit runs without the caller's cancellation so that a
// stopping pipeline does not cut it in half; an error means nothing was
// committed or the outcome is unknown (the redelivery reads the inbox).
func (o *Orders) decideAndCommit(ctx context.Context, x *orderTx) (result, reason, orderID string, err error) {
	tx, err := o.pool.Begin(ctx)
	if err != nil {
		return "", "", "", fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after COMMIT
	noDedupe := x.defects.OrderNoDedupe
	if !noDedupe {
		tag, err := tx.Exec(ctx, `INSERT INTO `+o.t("inbox")+` (message_id, reservation_id, activity_id, result, delivery)
			VALUES ($1, $2, $3, 'handling', $4) ON CONFLICT (message_id) DO NOTHING`, x.m.ID, x.m.RID, x.act.ID, int64(x.delivery))
		if err != nil {
			return "", "", "", fmt.Errorf("inbox: %w", err)
		}
		if tag.RowsAffected() == 0 {
			x.duplicateMsg = true
			err := tx.QueryRow(ctx, `SELECT result, reason, order_id FROM `+o.t("inbox")+` WHERE message_id = $1`, x.m.ID).Scan(&result, &reason, &orderID)
			if err != nil {
				return "", "", "", fmt.Errorf("inbox read of a decided message: %w", err)
			}
			return result, reason, orderID, nil
		}
	}
	result, reason = OrderRejected, "business rule (order.reject)"
	if x.precheck != nil && !x.defects.OrderIgnoresFence {
		refuse, why, err := x.precheck()
		if err != nil {
			return "", "", "", fmt.Errorf("redis precheck: %w", err)
		}
		if refuse {
			result, reason = OrderRefused, why
		}
	}
	if !x.businessNo && result != OrderRefused {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return "", "", "", fmt.Errorf("savepoint: %w", err)
		}
		result, reason, err = o.decide(ctx, sp, x)
		if err != nil {
			return "", "", "", err
		}
		if result == OrderCreated {
			err = sp.Commit(ctx)
		} else {
			err = sp.Rollback(ctx)
		}
		if err != nil {
			return "", "", "", fmt.Errorf("savepoint end: %w", err)
		}
	}
	if result == OrderCreated {
		orderID = x.orderID
	}
	if !noDedupe {
		if _, err := tx.Exec(ctx, `UPDATE `+o.t("inbox")+` SET result = $2, reason = $3, order_id = $4, handled_at = clock_timestamp() WHERE message_id = $1`,
			x.m.ID, result, reason, orderID); err != nil {
			return "", "", "", fmt.Errorf("inbox result: %w", err)
		}
	}
	if x.hooks != nil && x.hooks.before != nil {
		if err := x.hooks.before(x.m.ID); err != nil {
			return "", "", "", fmt.Errorf("commit: %w", err)
		}
	}
	if err := tx.Commit(context.WithoutCancel(ctx)); err != nil {
		return "", "", "", fmt.Errorf("commit: %w", err)
	}
	return result, reason, orderID, nil
}

// refuse records, in one transaction, that the Redis fence refused the
// committed decision: a CREATED order is cancelled (status CANCELLED,
// stock.sold - 1, a ledger row with delta -1) and the inbox says "refused".
// It is idempotent (a redelivery may run it again).
func (o *Orders) refuse(ctx context.Context, x *orderTx, result, why string) error {
	return pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		if result == OrderCreated {
			tag, err := tx.Exec(ctx, `UPDATE `+o.t("orders")+` SET status = 'CANCELLED' WHERE order_id = $1 AND status = 'CREATED'`, x.orderID)
			if err != nil {
				return fmt.Errorf("cancel order: %w", err)
			}
			if tag.RowsAffected() > 0 {
				var sold int64
				if err := tx.QueryRow(ctx, `UPDATE `+o.t("stock")+` SET sold = sold - 1 WHERE activity_id = $1 AND sku_id = $2 RETURNING sold`,
					x.act.ID, x.act.SKU).Scan(&sold); err != nil {
					return fmt.Errorf("stock give-back: %w", err)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO `+o.t("ledger")+` (activity_id, sku_id, reservation_id, order_id, delta, sold_after, reason)
					VALUES ($1, $2, $3, $4, -1, $5, 'order-cancelled-fence-refused')`, x.act.ID, x.act.SKU, x.m.RID, x.orderID, sold); err != nil {
					return fmt.Errorf("ledger insert: %w", err)
				}
			}
		}
		if x.defects.OrderNoDedupe {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE `+o.t("inbox")+` SET result = $2, reason = $3, order_id = '', handled_at = clock_timestamp() WHERE message_id = $1`,
			x.m.ID, OrderRefused, why); err != nil {
			return fmt.Errorf("inbox result: %w", err)
		}
		return nil
	})
}

// decide takes a unit and writes the order and its ledger row inside the
// savepoint sp; a result other than created means sp must be rolled back.
func (o *Orders) decide(ctx context.Context, sp pgx.Tx, x *orderTx) (result, reason string, err error) {
	cond := " AND sold < total"
	if x.defects.OrderNoStockCondition {
		cond = ""
	}
	t0 := time.Now()
	var sold int64
	err = sp.QueryRow(ctx, `UPDATE `+o.t("stock")+` SET sold = sold + 1 WHERE activity_id = $1 AND sku_id = $2`+cond+` RETURNING sold`,
		x.act.ID, x.act.SKU).Scan(&sold)
	o.observeRow(time.Since(t0))
	if errors.Is(err, pgx.ErrNoRows) {
		return OrderNoStock, "stock row: sold = total", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("stock decrement: %w", err)
	}
	_, err = sp.Exec(ctx, `INSERT INTO `+o.t("orders")+` (order_id, activity_id, sku_id, user_id, reservation_id, message_id, bucket)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, x.orderID, x.act.ID, x.act.SKU, x.m.User, x.m.RID, x.m.ID, int(x.m.Bucket))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		switch pe.ConstraintName {
		case ConstraintOneValidOrderPerUser:
			return OrderUserAlreadyOrdered, "unique " + pe.ConstraintName, nil
		default:
			return OrderDuplicateResv, "unique " + pe.ConstraintName, nil
		}
	}
	if err != nil {
		return "", "", fmt.Errorf("order insert: %w", err)
	}
	if _, err := sp.Exec(ctx, `INSERT INTO `+o.t("ledger")+` (activity_id, sku_id, reservation_id, order_id, delta, sold_after, reason)
		VALUES ($1, $2, $3, $4, 1, $5, 'order-created')`, x.act.ID, x.act.SKU, x.m.RID, x.orderID, sold); err != nil {
		return "", "", fmt.Errorf("ledger insert: %w", err)
	}
	return OrderCreated, "", nil
}

// holds reports whether the order service decided message id (an inbox
// row, or with OrderNoDedupe an order row) with anything but "refused": its
// reservation must not be released by the expiry checker. A database error
// answers true (never release on doubt).
func (o *Orders) holds(ctx context.Context, id string, noDedupe bool) bool {
	var n int
	var err error
	if noDedupe {
		err = o.pool.QueryRow(ctx, `SELECT count(*) FROM `+o.t("orders")+` WHERE message_id = $1`, id).Scan(&n)
	} else {
		err = o.pool.QueryRow(ctx, `SELECT count(*) FROM `+o.t("inbox")+` WHERE message_id = $1 AND result <> $2`, id, OrderRefused).Scan(&n)
	}
	return err != nil || n > 0
}

func (o *Orders) observeTx(d time.Duration, created bool) {
	o.hmu.Lock()
	defer o.hmu.Unlock()
	_ = o.txHist.RecordValue(max(1, d.Microseconds()))
	if created {
		now := time.Now()
		if o.created == 0 {
			o.first = now
		}
		o.last = now
		o.created++
	}
}

func (o *Orders) observeRow(d time.Duration) {
	o.hmu.Lock()
	_ = o.rowHist.RecordValue(max(1, d.Microseconds()))
	o.hmu.Unlock()
}

// OrderThroughput is the final stage's speed, in report.json's shape.
type OrderThroughput = reports.OrderThroughput

// Throughput returns the figures so far.
func (o *Orders) Throughput() OrderThroughput {
	o.hmu.Lock()
	defer o.hmu.Unlock()
	ms := func(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	t := OrderThroughput{Transactions: o.txHist.TotalCount(), TxP50Ms: ms(o.txHist, 50), TxP99Ms: ms(o.txHist, 99),
		TxMaxMs: float64(o.txHist.Max()) / 1000, StockRowP50Ms: ms(o.rowHist, 50), StockRowP99Ms: ms(o.rowHist, 99),
		OrdersCreated: o.created}
	if w := o.last.Sub(o.first).Seconds(); o.created > 1 && w > 0 {
		t.CreatingWindow = w
		t.OrdersPerSec = float64(o.created-1) / w
	}
	return t
}

// PGOrder is one row of the orders table.
type PGOrder struct {
	OrderID, User, RID, MessageID, Status string
	Bucket                                uint32
	CreatedAt                             time.Time
}

// InboxRow is one row of the inbox: the decision taken for one message.
type InboxRow struct {
	MessageID, RID, Result, Reason, OrderID string
}

// LedgerRow is one row of the stock ledger.
type LedgerRow struct {
	RID, OrderID, Reason string
	Delta, SoldAfter     int64
}

// OrderFacts is what PostgreSQL holds for one activity, read in one
// REPEATABLE READ transaction (a consistent snapshot).
type OrderFacts struct {
	Schema     string
	StockFound bool
	Total      int64 // stock.total
	Sold       int64 // stock.sold
	Orders     []PGOrder
	Inbox      []InboxRow
	Ledger     []LedgerRow
}

// Facts reads the activity's rows.
func (o *Orders) Facts(ctx context.Context, a *lua.Activity) (*OrderFacts, error) {
	f := &OrderFacts{Schema: o.schema}
	err := pgx.BeginTxFunc(ctx, o.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT total, sold FROM `+o.t("stock")+` WHERE activity_id = $1 AND sku_id = $2`, a.ID, a.SKU).Scan(&f.Total, &f.Sold)
		switch {
		case err == nil:
			f.StockFound = true
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("stock: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT order_id, user_id, reservation_id, message_id, status, bucket, created_at FROM `+o.t("orders")+
			` WHERE activity_id = $1 AND sku_id = $2 ORDER BY id`, a.ID, a.SKU)
		if err != nil {
			return fmt.Errorf("orders: %w", err)
		}
		for rows.Next() {
			var r PGOrder
			var b int32
			if err := rows.Scan(&r.OrderID, &r.User, &r.RID, &r.MessageID, &r.Status, &b, &r.CreatedAt); err != nil {
				return err
			}
			r.Bucket = uint32(b)
			f.Orders = append(f.Orders, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("orders: %w", err)
		}
		rows, err = tx.Query(ctx, `SELECT message_id, reservation_id, result, reason, order_id FROM `+o.t("inbox")+` WHERE activity_id = $1 ORDER BY message_id`, a.ID)
		if err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		for rows.Next() {
			var r InboxRow
			if err := rows.Scan(&r.MessageID, &r.RID, &r.Result, &r.Reason, &r.OrderID); err != nil {
				return err
			}
			f.Inbox = append(f.Inbox, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		rows, err = tx.Query(ctx, `SELECT reservation_id, order_id, reason, delta, sold_after FROM `+o.t("ledger")+
			` WHERE activity_id = $1 AND sku_id = $2 ORDER BY id`, a.ID, a.SKU)
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		for rows.Next() {
			var r LedgerRow
			if err := rows.Scan(&r.RID, &r.OrderID, &r.Reason, &r.Delta, &r.SoldAfter); err != nil {
				return err
			}
			f.Ledger = append(f.Ledger, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: reading the order database (%s): %w", o.schema, err)
	}
	return f, nil
}

// ValidOrders counts the CREATED orders.
func (f *OrderFacts) ValidOrders() int64 {
	var n int64
	for _, r := range f.Orders {
		if r.Status == "CREATED" {
			n++
		}
	}
	return n
}

// LedgerSold is Σ delta of the ledger.
func (f *OrderFacts) LedgerSold() int64 {
	var n int64
	for _, r := range f.Ledger {
		n += r.Delta
	}
	return n
}
