package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// Outcome is the answer an operation ended with: for reserve operations a
// lua.ReserveCode, for release operations a lua.CompensateCode, for status
// queries the lua.ReserveCode cached for the request, or one of the
// negative values below.
type Outcome int16

// Outcomes that are not business codes.
const (
	OutcomeUnknown Outcome = -1 // the reply was lost on every send: the script may have run
	OutcomeError   Outcome = -2 // Redis refused (ErrClass says why) or the client failed before sending
	OutcomeDropped Outcome = -3 // never sent: the in-flight cap was reached, or the load's tail was cut (Config.Tail)
	// OutcomeLocalSoldOut: the reserve path's local sold-out flag answered
	// SOLD_OUT without asking Redis (LocalSoldOut). No script ran and no
	// reservation was made: the checks count it as no answer from Redis,
	// never as Redis' SOLD_OUT.
	OutcomeLocalSoldOut Outcome = -4
	// OutcomeNotFound: a status query (KindQuery) found no answer cached
	// for the request: by the contract, no execution of it ran.
	OutcomeNotFound Outcome = -5
)

// notFoundName is OutcomeNotFound's name.
const notFoundName = "NOT_FOUND"

// Op flags.
const (
	FlagReplay        uint8 = 1 << iota // reserve.lua answered replay=1
	FlagHadUnknown                      // at least one send lost its reply (then retried with the same ids)
	FlagEvalFallback                    // a node answered NOSCRIPT and the source was sent
	FlagWaitSent                        // WAIT followed the ACCEPTED answer on its connection (see WaitPolicy)
	FlagWaitConfirmed                   // ... and the replicas it asked for acknowledged the write
	// FlagRemaining: Remaining holds the count the answer carried (bit 6;
	// bit 5 is the checks' FlagPipelineRelease).
	FlagRemaining uint8 = 1 << 6
	flagRecorded  uint8 = 1 << 7 // internal: the slot of Store holds an operation
)

// Op is one operation of the history. It is kept compact (72 bytes plus
// the answered reservation id) so that a run of a million operations
// fits in memory; ids are rebuilt from indexes (UserID, RequestID).
type Op struct {
	Intended time.Duration // offsets from the run's start (one monotonic base)
	Start    time.Duration // actual first send
	End      time.Duration // answer of the last send
	RID      string        // reservation id in the answer ("" when none)
	ID       uint32
	User     uint32
	Req      uint32
	Bucket   uint16
	Outcome  Outcome
	Kind     Kind
	Flags    uint8
	Attempts uint8 // script commands on the wire (saturates at 255)
	Sends    uint8 // harness sends: 1 + re-sends with the same ids
	ErrClass ErrClass
	TryAgain uint8 // TRYAGAIN answers seen on the wire (saturates)
	Redirs   uint8 // MOVED and ASK answers go-redis followed (saturates)
	// WaitUs is WAIT's round trip in microseconds (saturates at 2^32-1)
	// when FlagWaitSent; End includes it: the client's latency counts the
	// WAIT, which is what a user of the path waits for.
	WaitUs uint32
	// Remaining is the bucket's available units the answer reported
	// (reserve.lua's remaining, compensate.lua's available) when
	// FlagRemaining is set: only a system whose answers carry the
	// reference contract's count sets it. It fills the struct's padding.
	Remaining int32
}

// RemainingOf returns the count the answer carried and whether it did.
func (o *Op) RemainingOf() (int32, bool) { return o.Remaining, o.Flags&FlagRemaining != 0 }

// WaitSent reports whether WAIT followed the operation's ACCEPTED answer.
func (o *Op) WaitSent() bool { return o.Flags&FlagWaitSent != 0 }

// WaitConfirmed reports whether the replicas confirmed the operation's
// ACCEPTED answer (WAIT answered at least the replicas asked for).
func (o *Op) WaitConfirmed() bool { return o.Flags&FlagWaitConfirmed != 0 }

// Replay reports the replay flag of the answer.
func (o *Op) Replay() bool { return o.Flags&FlagReplay != 0 }

// HadUnknown reports whether some send of the operation lost its reply.
func (o *Op) HadUnknown() bool { return o.Flags&FlagHadUnknown != 0 }

// UserID is the operation's user id.
func (o *Op) UserID() string { return UserID(o.User) }

// RequestID is the operation's request id.
func (o *Op) RequestID() string { return RequestID(o.Req) }

// OutcomeName is the answer's name: a business code name, UNKNOWN, ERROR or DROPPED.
func (o *Op) OutcomeName() string {
	switch o.Outcome {
	case OutcomeUnknown:
		return "UNKNOWN"
	case OutcomeError:
		return "ERROR"
	case OutcomeDropped:
		return "DROPPED"
	case OutcomeLocalSoldOut:
		return sut.LocalSoldOutName
	case OutcomeNotFound:
		return notFoundName
	}
	if o.Kind == KindRelease {
		return lua.CompensateCode(o.Outcome).String()
	}
	return lua.ReserveCode(o.Outcome).String()
}

// TallyName is the name the answer is counted under in the reports'
// outcome tallies (report.json's outcomes, a fault window's, the live
// metrics' labels): OutcomeName, prefixed "query:" for a status query, so
// that a query that read ACCEPTED is never counted as a reservation.
func (o *Op) TallyName() string {
	if o.Kind == KindQuery {
		return "query:" + o.OutcomeName()
	}
	return o.OutcomeName()
}

// Accepted reports a reserve operation answered ACCEPTED (a query that
// read ACCEPTED is not one: it made nothing).
func (o *Op) Accepted() bool { return o.Kind.IsReserve() && o.Outcome == Outcome(lua.Accepted) }

// History is every operation of a run that was sent, in Op.ID order. Ids
// are numbered from 0 in schedule order; a dropped operation's id is
// skipped (drops are counted in Result.Drops, not kept); a closed-loop
// phase sends every id it claims, so its ids have no gaps.
//
// A history is held in memory (Ops) or, for a run with WithHistorySpool,
// streamed to disk during the run and read back from there; Ops then holds
// only operations added after the run (WithPipelineReleases). Read every
// history with All and Len: they cover both.
type History struct {
	Ops   []Op
	spool *spool // the run's operations, before Ops; nil when held in memory
}

// Len is the number of operations.
func (h *History) Len() int {
	if h.spool != nil {
		return h.spool.n + len(h.Ops)
	}
	return len(h.Ops)
}

// Spooled reports whether the history's operations are on disk.
func (h *History) Spooled() bool { return h.spool != nil }

// All yields every operation in order with its index. The *Op of a
// spooled history is one buffer decoded again at every step: copy the Op
// to keep it. A spool that cannot be read back ends the iteration early
// and Err says why.
func (h *History) All() iter.Seq2[int, *Op] {
	return func(yield func(int, *Op) bool) {
		i := 0
		if h.spool != nil {
			more := h.spool.each(func(o *Op) bool {
				ok := yield(i, o)
				i++
				return ok
			})
			if !more {
				return
			}
		}
		for j := range h.Ops {
			if !yield(i, &h.Ops[j]) {
				return
			}
			i++
		}
	}
}

// Err is the error that cut an iteration of a spooled history short (a
// read of the spool failed); nil for a history held in memory.
func (h *History) Err() error {
	if h.spool == nil {
		return nil
	}
	return h.spool.Err()
}

// Store keeps the sent operations by slot (their index among the run's
// sent operations, which follows id order) in fixed chunks written in
// place, so the hot path neither appends nor copies, and the final history
// is built with one exact allocation (a million operations fit in about
// 64 MB). Slots, not ids: dropped operations skip ids, and the chunks stay
// dense however many were dropped.
//
// With a spool, each chunk is handed to the spool's writer as soon as every
// slot of it is recorded and every earlier chunk was handed over, and its
// memory is reused: the store holds the few chunks still being filled.
type Store struct {
	mu      sync.Mutex
	chunks  [][]Op
	spool   *spool // nil: keep every chunk until flatten
	filled  []int  // per chunk, the slots recorded (with a spool)
	flushed int    // chunks handed to the spool so far
}

const opChunk = 1 << 16

func (s *Store) Put(slot uint64, o Op) {
	o.Flags |= flagRecorded
	ci := int(slot / opChunk)
	s.mu.Lock()
	s.chunkLocked(ci)[slot%opChunk] = o
	if s.spool != nil {
		s.filled[ci]++
		s.flushLocked()
	}
	s.mu.Unlock()
}

// grow allocates the chunk that holds slot, when needed.
// Grow allocates the chunk that holds slot ahead of its Put (the engine
// grows slot 0 before the load's clock starts).
func (s *Store) Grow(slot uint64) {
	s.mu.Lock()
	s.chunkLocked(int(slot / opChunk))
	s.mu.Unlock()
}

func (s *Store) chunkLocked(ci int) []Op {
	for len(s.chunks) <= ci {
		s.chunks = append(s.chunks, nil)
		s.filled = append(s.filled, 0)
	}
	c := s.chunks[ci]
	if c == nil {
		if s.spool != nil {
			select {
			case c = <-s.spool.free:
			default:
			}
		}
		if c == nil {
			c = make([]Op, opChunk)
		}
		s.chunks[ci] = c
	}
	return c
}

// flushLocked hands the spool every full chunk that follows the ones
// already handed over, in order.
func (s *Store) flushLocked() {
	for s.flushed < len(s.chunks) && s.filled[s.flushed] == opChunk {
		s.spool.chunks <- s.chunks[s.flushed]
		s.chunks[s.flushed] = nil
		s.flushed++
	}
}

// finishSpool hands the spool the chunks left (their unrecorded slots are
// skipped) and waits until everything is on disk. Call it once every
// writer is done.
func (s *Store) finishSpool() (*spool, error) {
	for ; s.flushed < len(s.chunks); s.flushed++ {
		if c := s.chunks[s.flushed]; c != nil {
			s.spool.chunks <- c
			s.chunks[s.flushed] = nil
		}
	}
	s.chunks = nil
	return s.spool, s.spool.finish()
}

// flatten returns the recorded operations in ID order and frees the chunks.
// Call it once every writer is done.
func (s *Store) flatten() []Op {
	n := 0
	for _, c := range s.chunks {
		for i := range c {
			if c[i].Flags&flagRecorded != 0 {
				n++
			}
		}
	}
	out := make([]Op, 0, n)
	for ci, c := range s.chunks {
		for i := range c {
			if c[i].Flags&flagRecorded != 0 {
				o := c[i]
				o.Flags &^= flagRecorded
				out = append(out, o)
			}
		}
		s.chunks[ci] = nil
	}
	s.chunks = nil
	return out
}

type jsonOp struct {
	ID         uint32  `json:"op"`
	Kind       string  `json:"kind"`
	User       string  `json:"user"`
	Request    string  `json:"request_id"`
	RID        string  `json:"reservation_id,omitempty"`
	Bucket     uint16  `json:"bucket"`
	IntendedMs float64 `json:"intended_ms"`
	StartMs    float64 `json:"start_ms"`
	EndMs      float64 `json:"end_ms"`
	Attempts   uint8   `json:"wire_attempts"`
	Sends      uint8   `json:"sends"`
	Outcome    string  `json:"outcome"`
	ErrClass   string  `json:"error_class,omitempty"`
	Replay     bool    `json:"replay,omitempty"`
	TryAgain   uint8   `json:"tryagain,omitempty"`
	Redirects  uint8   `json:"redirects,omitempty"`
	HadUnknown bool    `json:"had_unknown,omitempty"`
	// WAIT after an ACCEPTED answer (runs with a WaitPolicy): sent,
	// confirmed by the replicas asked for, and its round trip.
	WaitSent      bool    `json:"wait_sent,omitempty"`
	WaitConfirmed bool    `json:"wait_confirmed,omitempty"`
	WaitMs        float64 `json:"wait_ms,omitempty"`
	// Remaining is the bucket's available units the answer reported, when
	// the system's answers carry it (reserve's remaining, release's
	// available).
	Remaining *int32 `json:"remaining,omitempty"`
}

// WriteJSONL streams the history as one JSON object per line, in op order.
// Times are milliseconds from the run's start.
func (h *History) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, o := range h.All() {
		j := jsonOp{ID: o.ID, Kind: o.Kind.String(), User: o.UserID(), Request: o.RequestID(), RID: o.RID,
			Bucket: o.Bucket, IntendedMs: ms(o.Intended), StartMs: ms(o.Start), EndMs: ms(o.End),
			Attempts: o.Attempts, Sends: o.Sends, Outcome: o.OutcomeName(), Replay: o.Replay(), HadUnknown: o.HadUnknown(),
			TryAgain: o.TryAgain, Redirects: o.Redirs, WaitSent: o.WaitSent(), WaitConfirmed: o.WaitConfirmed()}
		if o.WaitSent() {
			j.WaitMs = float64(o.WaitUs) / 1000
		}
		if n, ok := o.RemainingOf(); ok {
			j.Remaining = &n
		}
		if o.Outcome == OutcomeError {
			j.ErrClass = o.ErrClass.String()
		}
		if o.Outcome == OutcomeDropped {
			j.StartMs, j.EndMs = 0, 0
		}
		if err := enc.Encode(&j); err != nil {
			return err
		}
	}
	if err := h.Err(); err != nil {
		return err
	}
	return bw.Flush()
}

// Sat8 is n clamped to 0..255, for the Op fields that saturate.
func Sat8(n int) uint8 {
	if n > 255 {
		return 255
	}
	if n < 0 {
		return 0
	}
	return uint8(n)
}

// itoa is strconv.Itoa, short.
func itoa(n int) string { return strconv.Itoa(n) }

// ReadJSONL reads back a history written by WriteJSONL, in file order.
// Times come back to the microsecond WriteJSONL kept; the EvalFallback flag,
// which it does not write, is lost. Ids must be "u<n>"/"r<n>". An error
// names the line.
func ReadJSONL(r io.Reader) (*History, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	h := &History{}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var j jsonOp
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		o, err := j.op()
		if err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		h.Ops = append(h.Ops, o)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("history line %d: longer than 1 MiB, far longer than an operation's record: the file is not a history a run wrote; give the history.jsonl of a run (--history)", line+1)
	} else if err != nil {
		return nil, fmt.Errorf("history line %d: %w", line+1, err)
	}
	return h, nil
}

func (j *jsonOp) op() (Op, error) {
	o := Op{ID: j.ID, RID: j.RID, Bucket: j.Bucket, Attempts: j.Attempts, Sends: j.Sends, TryAgain: j.TryAgain, Redirs: j.Redirects}
	k, ok := kindByName[j.Kind]
	if !ok {
		return o, fmt.Errorf("kind %q: want one of %v", j.Kind, kindNames)
	}
	o.Kind = k
	var err error
	if o.User, err = parseIndex("u", j.User); err != nil {
		return o, err
	}
	if o.Req, err = parseIndex("r", j.Request); err != nil {
		return o, err
	}
	if o.Outcome, err = outcomeOf(k, j.Outcome); err != nil {
		return o, err
	}
	if o.Outcome == OutcomeError {
		c, ok := errClassByName[j.ErrClass]
		if !ok {
			c = ErrOther
		}
		o.ErrClass = c
	}
	us := func(ms float64) time.Duration { return time.Duration(math.Round(ms*1000)) * time.Microsecond }
	o.Intended, o.Start, o.End = us(j.IntendedMs), us(j.StartMs), us(j.EndMs)
	if j.Replay {
		o.Flags |= FlagReplay
	}
	if j.HadUnknown {
		o.Flags |= FlagHadUnknown
	}
	if j.WaitSent {
		o.Flags |= FlagWaitSent
		o.WaitUs = uint32(min(math.Round(j.WaitMs*1000), math.MaxUint32))
	}
	if j.WaitConfirmed {
		o.Flags |= FlagWaitConfirmed
	}
	if j.Remaining != nil {
		o.Flags |= FlagRemaining
		o.Remaining = *j.Remaining
	}
	return o, nil
}

// kindByName and errClassByName invert kindNames and errClassNames: a
// history line names its kind and error class.
var (
	kindByName     = byName[Kind](kindNames[:])
	errClassByName = byName[ErrClass](errClassNames[:])
)

// byName maps each of names to its index.
func byName[T ~uint8](names []string) map[string]T {
	m := make(map[string]T, len(names))
	for i, n := range names {
		m[n] = T(i)
	}
	return m
}

// parseIndex parses prefix<n> ("u17", "r4").
func parseIndex(prefix, id string) (uint32, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(id, prefix), 10, 32)
	if err != nil || !strings.HasPrefix(id, prefix) {
		return 0, fmt.Errorf("id %q: want %s<n>", id, prefix)
	}
	return uint32(n), nil
}

// outcomeOf is the inverse of Op.OutcomeName for an operation of kind k.
func outcomeOf(k Kind, name string) (Outcome, error) {
	switch name {
	case "UNKNOWN":
		return OutcomeUnknown, nil
	case "ERROR":
		return OutcomeError, nil
	case "DROPPED":
		return OutcomeDropped, nil
	case sut.LocalSoldOutName:
		return OutcomeLocalSoldOut, nil
	}
	if k == KindQuery && name == notFoundName {
		return OutcomeNotFound, nil
	}
	if s, ok := strings.CutPrefix(name, "CODE_"); ok {
		if n, err := strconv.ParseInt(s, 10, 16); err == nil && n >= 0 {
			return Outcome(n), nil
		}
	}
	if k != KindRelease { // a query answers the request's reserve code
		for _, c := range lua.ReserveCodes() {
			if c.String() == name {
				return Outcome(c), nil
			}
		}
	} else {
		for c := lua.CompensateReleased; c <= lua.CompensateIDConflict; c++ {
			if c.String() == name {
				return Outcome(c), nil
			}
		}
	}
	return 0, fmt.Errorf("outcome %q is not a %s answer", name, k)
}

// Extended returns a copy of h with extra operations after its own (a
// spooled history's file is shared, not copied).
func (h *History) Extended(extra []Op) *History {
	return &History{Ops: append(append([]Op(nil), h.Ops...), extra...), spool: h.spool}
}

// SpoolTo streams the store's operations to a file in dir as its chunks
// fill, instead of holding them in memory. Call it before the first Put.
// A spool that cannot be created fails here; one that cannot be written
// fails History.
func (s *Store) SpoolTo(dir string) error {
	sp, err := newSpool(dir)
	if err != nil {
		return err
	}
	s.spool = sp
	return nil
}

// History is the recorded operations in ID order: read back from the
// spool when there is one, else the chunks flattened (and freed). Call it
// once, when every writer is done.
func (s *Store) History() (*History, error) {
	if s.spool == nil {
		return &History{Ops: s.flatten()}, nil
	}
	sp, err := s.finishSpool()
	if err != nil {
		return nil, err
	}
	return &History{spool: sp}, nil
}
