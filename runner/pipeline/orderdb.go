package pipeline

import "sync"

// orderDB is the simulated order database. With dedupe on (the correct
// implementation) message_id is a unique index: a message is claimed before
// it is handled, and a second claim of the same id fails. Without dedupe
// (Defects.OrderNoDedupe) every row is appended.
type orderDB struct {
	mu      sync.Mutex
	rows    []OrderRow
	byMsg   map[string]int // message_id -> index of its first row
	claimed map[string]bool
}

func newOrderDB() *orderDB {
	return &orderDB{byMsg: map[string]int{}, claimed: map[string]bool{}}
}

// claim takes the unique-index slot of id; false when a row exists or
// another consumer is handling the same id.
func (db *orderDB) claim(id string) bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.byMsg[id]; ok || db.claimed[id] {
		return false
	}
	db.claimed[id] = true
	return true
}

// unclaim gives the slot back after a failure (the transaction rolled back).
func (db *orderDB) unclaim(id string) {
	db.mu.Lock()
	delete(db.claimed, id)
	db.mu.Unlock()
}

// insert commits a row (and releases the claim).
func (db *orderDB) insert(r OrderRow) {
	db.mu.Lock()
	defer db.mu.Unlock()
	delete(db.claimed, r.MessageID)
	if _, ok := db.byMsg[r.MessageID]; !ok {
		db.byMsg[r.MessageID] = len(db.rows)
	}
	db.rows = append(db.rows, r)
}

// holds reports whether the order service has decided (created or
// rejected) or is deciding the order of message id: such a reservation must
// not be released by the expiry checker.
func (db *orderDB) holds(id string) bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.claimed[id] {
		return true
	}
	i, ok := db.byMsg[id]
	return ok && db.rows[i].Result != OrderRefused
}

func (db *orderDB) snapshot() []OrderRow {
	db.mu.Lock()
	defer db.mu.Unlock()
	return append([]OrderRow(nil), db.rows...)
}
