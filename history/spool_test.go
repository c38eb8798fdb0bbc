package history

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// spoolOf streams ops through an Store with a spool, put in a shuffled
// order (workers finish out of order) across several chunks, as a run does.
func spoolOf(t *testing.T, ops []Op) *History {
	t.Helper()
	sp, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := Store{spool: sp}
	order := rand.New(rand.NewPCG(1, 2)).Perm(len(ops))
	for _, i := range order {
		s.Put(uint64(i), ops[i])
	}
	if _, err := s.finishSpool(); err != nil {
		t.Fatal(err)
	}
	return &History{spool: sp}
}

// A spooled history reads back exactly the operations put in it, in slot
// order, every field included (a record that lost one fails here), with
// slots never recorded skipped.
func TestSpoolReadsBackEveryField(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ops := make([]Op, 3*opChunk+17)
	for i := range ops {
		ops[i] = Op{Intended: time.Duration(r.Int64()), Start: time.Duration(-r.Int64N(1e9)), End: time.Duration(r.Int64()),
			ID: r.Uint32(), User: r.Uint32(), Req: r.Uint32(), Bucket: uint16(r.Uint32()), Outcome: Outcome(int16(r.Uint32())),
			Kind: Kind(r.Uint32()), Flags: uint8(r.Uint32()) &^ flagRecorded, Attempts: uint8(r.Uint32()), Sends: uint8(r.Uint32()),
			ErrClass: ErrClass(r.Uint32()), TryAgain: uint8(r.Uint32()), Redirs: uint8(r.Uint32()), WaitUs: r.Uint32()}
		if i%3 == 0 {
			ops[i].RID = "x" + itoa(i) + string(make([]byte, i%40))
		}
	}
	h := spoolOf(t, ops)
	if h.Len() != len(ops) {
		t.Fatalf("Len %d, want %d", h.Len(), len(ops))
	}
	n := 0
	for i, o := range h.All() {
		if i != n || *o != ops[i] {
			t.Fatalf("op %d (index %d): read back %+v, want %+v", n, i, *o, ops[i])
		}
		n++
	}
	if n != len(ops) || h.Err() != nil {
		t.Fatalf("%d ops read back (err %v), want %d", n, h.Err(), len(ops))
	}

	// Holes: a closed loop's claimed but unrun ids leave slots unrecorded.
	sp, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := Store{spool: sp}
	for _, slot := range []uint64{0, 5, opChunk + 1} {
		s.Put(slot, Op{ID: uint32(slot)})
	}
	if _, err := s.finishSpool(); err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	for _, o := range (&History{spool: sp}).All() {
		ids = append(ids, o.ID)
	}
	if !reflect.DeepEqual(ids, []uint32{0, 5, opChunk + 1}) {
		t.Fatalf("ids %v", ids)
	}
}
