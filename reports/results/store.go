package results

import (
	"context"
	"fmt"
)

// DefaultKeep is how many records per scenario a store keeps (the newest).
const DefaultKeep = 400

// Store is where records are kept: DirStore or PGStore.
type Store interface {
	// Append adds one record; it is durable when Append returns nil.
	Append(ctx context.Context, r Record) error
	// Records returns the scenario's records ("" : every scenario's),
	// oldest first. Unreadable entries are skipped with a warning.
	Records(ctx context.Context, scenario string) ([]Record, error)
	// Where names the store for logs and reports (a database URL without
	// its password).
	Where() string
	Close() error
}

// Options open a store.
type Options struct {
	Dir   string // a directory of JSON lines (--results-history)
	DBURL string // a PostgreSQL URL (--results-db); wins over Dir
	// Keep bounds the records kept per scenario; 0: DefaultKeep.
	Keep int
	// Warn receives a warning per skipped entry ("file:line: …"); nil: dropped.
	Warn func(msg string)
}

// Open opens the store the options name: PostgreSQL with DBURL, else the
// directory Dir (created if missing). Neither: an error naming both flags.
func Open(ctx context.Context, o Options) (Store, error) {
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	switch {
	case o.DBURL != "":
		return OpenPG(ctx, o)
	case o.Dir != "":
		return OpenDir(o)
	}
	return nil, fmt.Errorf("no results history: give --results-history DIR or --results-db URL")
}
