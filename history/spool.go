package history

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// A spool is a history streamed to disk during the run: the operations in
// slot order, as fixed binary records (57 bytes plus the reservation id),
// in a file that is unlinked as soon as it is created. Nothing is left on
// disk whatever happens to the process: the file lives as long as its
// descriptor. A run at 2,000 ops/s for an hour (7.2 M operations) then
// holds a few chunks in memory instead of ~460 MB of operations, and
// every reader of the history (the checks, the report, history.jsonl)
// streams it back with History.All.
//
// Writes happen on one goroutine (the spool's writer); reads use ReadAt,
// so several iterations may run at once, once the run has ended.
type spool struct {
	f    *os.File
	n    int   // records written
	size int64 // bytes written
	err  error // the first write or read error

	chunks chan []Op
	free   chan []Op
	done   chan struct{}
	mu     sync.Mutex // guards err for readers
}

// spoolRecord is the fixed part of one record: Intended, Start, End (8
// bytes each), ID, User, Req (4 each), Bucket, Outcome (2 each), Kind,
// Flags, Attempts, Sends, ErrClass, TryAgain, Redirs (1 each), WaitUs (4),
// the reservation id's length (2) and Remaining (4); the id's bytes follow.
const spoolRecord = 3*8 + 3*4 + 2*2 + 7 + 4 + 2 + 4

// newSpool creates the spool's file in dir (the system's temporary
// directory when empty), unlinks it, and starts its writer.
func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, "seckill-history-*.spool")
	if err != nil {
		return nil, fmt.Errorf("history spool: %w (set the spool directory to a writable one)", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("history spool: %w", err)
	}
	s := &spool{f: f, chunks: make(chan []Op, 4), free: make(chan []Op, 4), done: make(chan struct{})}
	go s.write()
	return s, nil
}

// write encodes every chunk handed over, in order, skipping the slots no
// operation was recorded in, and hands each chunk back for reuse.
func (s *spool) write() {
	defer close(s.done)
	bw := bufio.NewWriterSize(s.f, 1<<20)
	var buf [spoolRecord + 1<<16]byte
	for c := range s.chunks {
		for i := range c {
			o := &c[i]
			if o.Flags&flagRecorded == 0 || s.err != nil {
				continue
			}
			n := encodeOp(buf[:], o)
			if _, err := bw.Write(buf[:n]); err != nil {
				s.setErr(fmt.Errorf("history spool: write: %w", err))
			}
			s.n++
			s.size += int64(n)
		}
		clear(c)
		select {
		case s.free <- c:
		default:
		}
	}
	if err := bw.Flush(); err != nil {
		s.setErr(fmt.Errorf("history spool: write: %w", err))
	}
}

// finish waits until every chunk handed over is on disk.
func (s *spool) finish() error {
	close(s.chunks)
	<-s.done
	return s.Err()
}

func (s *spool) setErr(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Err is the first error writing or reading the spool.
func (s *spool) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func encodeOp(b []byte, o *Op) int {
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(o.Intended))
	le.PutUint64(b[8:], uint64(o.Start))
	le.PutUint64(b[16:], uint64(o.End))
	le.PutUint32(b[24:], o.ID)
	le.PutUint32(b[28:], o.User)
	le.PutUint32(b[32:], o.Req)
	le.PutUint16(b[36:], o.Bucket)
	le.PutUint16(b[38:], uint16(o.Outcome))
	b[40], b[41], b[42], b[43] = byte(o.Kind), o.Flags&^flagRecorded, o.Attempts, o.Sends
	b[44], b[45], b[46] = byte(o.ErrClass), o.TryAgain, o.Redirs
	le.PutUint32(b[47:], o.WaitUs)
	rid := o.RID
	if len(rid) > 1<<16-1 {
		rid = rid[:1<<16-1]
	}
	le.PutUint16(b[51:], uint16(len(rid)))
	le.PutUint32(b[53:], uint32(o.Remaining))
	return spoolRecord + copy(b[spoolRecord:], rid)
}

// decodeOp fills o from the record at the start of b and returns the
// record's length; 0 when b does not hold a whole record.
func decodeOp(b []byte, o *Op) int {
	if len(b) < spoolRecord {
		return 0
	}
	le := binary.LittleEndian
	n := spoolRecord + int(le.Uint16(b[51:]))
	if len(b) < n {
		return 0
	}
	*o = Op{Intended: durationOf(le.Uint64(b[0:])), Start: durationOf(le.Uint64(b[8:])), End: durationOf(le.Uint64(b[16:])),
		ID: le.Uint32(b[24:]), User: le.Uint32(b[28:]), Req: le.Uint32(b[32:]), Bucket: le.Uint16(b[36:]),
		Outcome: Outcome(le.Uint16(b[38:])), Kind: Kind(b[40]), Flags: b[41], Attempts: b[42], Sends: b[43],
		ErrClass: ErrClass(b[44]), TryAgain: b[45], Redirs: b[46], WaitUs: le.Uint32(b[47:]), Remaining: int32(le.Uint32(b[53:]))}
	if n > spoolRecord {
		o.RID = string(b[spoolRecord:n])
	}
	return n
}

func durationOf(u uint64) time.Duration { return time.Duration(int64(u)) }

// each calls fn with every record in order, decoded into one reused Op;
// it stops when fn returns false (and then returns false).
func (s *spool) each(fn func(*Op) bool) bool {
	// A record is at most spoolRecord + 64 KiB: it fits the reader's buffer.
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, s.size), 1<<17)
	var o Op
	for read := 0; read < s.n; read++ {
		head, err := r.Peek(spoolRecord)
		if err != nil {
			s.setErr(fmt.Errorf("history spool: read record %d of %d: %w", read, s.n, err))
			return false
		}
		rec, err := r.Peek(spoolRecord + int(binary.LittleEndian.Uint16(head[51:])))
		if err != nil {
			s.setErr(fmt.Errorf("history spool: read record %d of %d: %w", read, s.n, err))
			return false
		}
		_, _ = r.Discard(decodeOp(rec, &o))
		if !fn(&o) {
			return false
		}
	}
	return true
}
