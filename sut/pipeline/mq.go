package pipeline

import (
	"container/heap"
	"context"
	"hash/fnv"
	"sync"
	"time"
)

// message is the order message of one reservation. Its id is the
// reservation's fixed message_id: a re-send carries the same id.
type message struct {
	ID     string
	RID    string
	Bucket uint32
	User   string
}

// broker is the simulated MQ: at-least-once, per-send outcomes drawn from
// the seed, every send and every delivery recorded.
type broker struct {
	cfg   MQConfig
	delay time.Duration
	seed  uint64
	c     *counters

	mu         sync.Mutex
	wake       chan struct{}
	queue      copyHeap
	state      map[string]*msgState
	sends      []Send
	deliveries []Delivery
	pushSeq    uint64
	inflight   int
}

type msgState struct {
	sends      int
	deliveries int
	pending    int // stored copies not yet handed out
	inflight   int // copies handed out and not yet acked
	firstSend  uint64
	delivered  map[uint64]bool // sends whose copy was delivered
	deliveryNo int
}

type queued struct {
	msg       message
	visibleAt time.Time
	order     uint64
	send      uint64
	redeliver bool
}

type copyHeap []*queued

func (h copyHeap) Len() int { return len(h) }
func (h copyHeap) Less(i, j int) bool {
	if !h[i].visibleAt.Equal(h[j].visibleAt) {
		return h[i].visibleAt.Before(h[j].visibleAt)
	}
	return h[i].order < h[j].order
}
func (h copyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *copyHeap) Push(x any)   { *h = append(*h, x.(*queued)) }
func (h *copyHeap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	*h = old[:n-1]
	return x
}

func newBroker(cfg MQConfig, delay time.Duration, seed int64, c *counters) *broker {
	return &broker{cfg: cfg, delay: delay, seed: uint64(seed), c: c, wake: make(chan struct{}, 1), state: map[string]*msgState{}}
}

// Send outcomes.
const (
	SendAck     = "ack"
	SendError   = "error"
	SendTimeout = "timeout"
)

type sendResult struct {
	outcome string
	stored  bool
	seq     uint64
}

// unit draws a number in [0,1) from (seed, id, attempt, salt).
func unit(seed uint64, id string, attempt int, salt uint64) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	x := splitmix(seed ^ h.Sum64() ^ (uint64(attempt) * 0x9e3779b97f4a7c15) ^ salt)
	return float64(x>>11) / float64(1<<53)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// send offers m to the broker and returns what the sender learns. The draw
// depends only on the seed, the message id and how many times it was sent.
func (b *broker) send(m message) sendResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state[m.ID]
	if st == nil {
		st = &msgState{delivered: map[uint64]bool{}}
		b.state[m.ID] = st
	}
	st.sends++
	attempt := st.sends
	r := unit(b.seed, m.ID, attempt, 0x5e4d)
	s := Send{Seq: uint64(len(b.sends) + 1), At: time.Now(), MessageID: m.ID, RID: m.RID, Bucket: m.Bucket, Attempt: attempt}
	switch {
	case r < b.cfg.Ack:
		s.Outcome, s.Stored = SendAck, true
		b.c.send.acked.Add(1)
		if b.cfg.Lost > 0 && unit(b.seed, m.ID, attempt, 0x1057) < b.cfg.Lost {
			s.Lost, s.Stored = true, false
			b.c.send.lostByMQ.Add(1)
		}
	case r < b.cfg.Ack+b.cfg.Error:
		s.Outcome = SendError
		b.c.send.sendErrors.Add(1)
	default:
		s.Outcome = SendTimeout
		b.c.send.unknownSends.Add(1)
		if unit(b.seed, m.ID, attempt, 0x7de1) < b.cfg.TimeoutDelivered {
			s.Stored = true
			b.c.send.timeoutsStored.Add(1)
		}
	}
	b.c.send.sends.Add(1)
	if attempt > 1 {
		b.c.send.resends.Add(1)
	}
	b.sends = append(b.sends, s)
	if s.Stored {
		if st.firstSend == 0 {
			st.firstSend = s.Seq
		}
		st.pending++
		b.pushSeq++
		heap.Push(&b.queue, &queued{msg: m, visibleAt: s.At.Add(b.delay), order: b.pushSeq, send: s.Seq})
		b.signal()
	}
	return sendResult{outcome: s.Outcome, stored: s.Stored, seq: s.Seq}
}

func (b *broker) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// markAbandoned records that the sender of send seq crashed before acting on its outcome.
func (b *broker) markAbandoned(seq uint64) {
	b.mu.Lock()
	if seq >= 1 && int(seq) <= len(b.sends) {
		b.sends[seq-1].Abandoned = true
	}
	b.mu.Unlock()
}

type delivery struct {
	Delivery
	msg  message
	send uint64
}

// consume hands out the next visible copy, waiting for one; false when ctx ends.
func (b *broker) consume(ctx context.Context) (*delivery, bool) {
	for {
		b.mu.Lock()
		var wait time.Duration = -1
		if len(b.queue) > 0 {
			top := b.queue[0]
			now := time.Now()
			if !top.visibleAt.After(now) {
				heap.Pop(&b.queue)
				st := b.state[top.msg.ID]
				st.pending--
				st.inflight++
				b.inflight++
				st.deliveryNo++
				d := &delivery{msg: top.msg, send: top.send, Delivery: Delivery{
					Seq: uint64(len(b.deliveries) + 1), At: now, MessageID: top.msg.ID, RID: top.msg.RID,
					Bucket: top.msg.Bucket, Send: top.send, Copy: st.deliveryNo, Redeliver: top.redeliver}}
				b.c.delivery.deliveries.Add(1)
				if top.redeliver {
					b.c.delivery.redeliveries.Add(1)
				} else {
					if len(st.delivered) > 0 && !st.delivered[top.send] {
						b.c.delivery.duplicateDeliveries.Add(1)
					}
					st.delivered[top.send] = true
				}
				b.deliveries = append(b.deliveries, d.Delivery)
				if len(b.queue) > 0 {
					b.signal() // wake another consumer for the rest
				}
				b.mu.Unlock()
				return d, true
			}
			wait = top.visibleAt.Sub(now)
		}
		b.mu.Unlock()
		var timer <-chan time.Time
		var t *time.Timer
		if wait >= 0 {
			t = time.NewTimer(wait)
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-b.wake:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return nil, false
		}
	}
}

// ack: the consumer is done with the copy.
func (b *broker) ack(d *delivery) {
	b.mu.Lock()
	b.state[d.msg.ID].inflight--
	b.inflight--
	b.mu.Unlock()
}

// nack: the consumer failed on the copy; it comes back after `after`.
func (b *broker) nack(d *delivery, after time.Duration) {
	b.mu.Lock()
	st := b.state[d.msg.ID]
	st.inflight--
	b.inflight--
	st.pending++
	b.pushSeq++
	heap.Push(&b.queue, &queued{msg: d.msg, visibleAt: time.Now().Add(after), order: b.pushSeq, send: d.send, redeliver: true})
	b.signal()
	b.mu.Unlock()
}

// outstanding reports whether the broker still holds a copy of message id
// that is not yet delivered, or delivered and not yet acknowledged.
func (b *broker) outstanding(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state[id]
	return st != nil && st.pending+st.inflight > 0
}

// idle reports that no copy is queued or being handled.
func (b *broker) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) == 0 && b.inflight == 0
}

func (b *broker) snapshot() ([]Send, []Delivery) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Send(nil), b.sends...), append([]Delivery(nil), b.deliveries...)
}
