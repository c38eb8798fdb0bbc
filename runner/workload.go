package runner

import (
	"seckill-harness/history"
)

// Workload decides operation i — its kind, user and request — as a pure
// function of the seed and i, so a run is reproducible from --seed whatever
// order the workers finish in. Users are "u<n>", requests "r<n>" where n is
// the index of the operation that first sent it.
//
// With a Generator I/N the workload is generator I's share: it walks its own
// users (the indices congruent to I mod N below the total) and gives
// operation i the request index i*N+I, so generators never share a user or
// a request id; the kind stream is decorrelated per generator. With N = 1 it
// is exactly the whole-load workload.
type Workload struct {
	seed      uint64
	users     uint64    // this generator's users (local indices 0..users-1)
	gi, gn    uint64    // generator index and count: global = local*gn + gi
	mult, add uint64    // fresh users walk a permutation of 0..users-1
	segments  []segment // mix per range of op indexes, ascending by from
	bucketOf  func(user uint32) uint32
}

// segment: from op index `from` on, kinds are drawn with these thresholds.
type segment struct {
	from       uint64
	thresholds [kinds]uint64
}

// thresholdsOf is m's cumulative shares in kind order (KindReplay ..
// KindQuery), scaled to 2^53.
func thresholdsOf(m Mix) [kinds]uint64 {
	var t [kinds]uint64
	cum := 0.0
	for i, sh := range m.Shares() {
		cum += *sh.Share
		t[i] = uint64(cum * float64(1<<53))
	}
	return t
}

// kinds is the number of kinds a mix draws (every kind but KindFresh).
const kinds = 6

// StartSegment switches the mix from op index `from` on (a new load phase).
// Earlier ops keep their kinds, so repeats still find their originals.
// from must not be below an earlier segment's start, and every index below
// from must have been scheduled: repeats (replay, same_user,
// foreign_request, release) in later segments pick their originals
// uniformly among the earlier segments' indices, so an index that was never
// sent would make a "replay" a first request and a "release" NOT_FOUND.
func (w *Workload) StartSegment(from uint64, m Mix) {
	w.segments = append(w.segments, segment{from: from, thresholds: thresholdsOf(m)})
}

// NewWorkload returns the workload of seed over users users with mix m.
// bucketOf routes a user to its stock bucket (nil: one bucket); a reused
// request_id is given to another user of the same bucket, since request
// results are cached per bucket.
func NewWorkload(seed int64, users int, m Mix, bucketOf func(user uint32) uint32) *Workload {
	return NewGeneratorWorkload(seed, users, m, bucketOf, history.Generator{})
}

// NewGeneratorWorkload is generator g's share of the workload of seed over
// users users in total (see Workload). bucketOf takes global user indices.
// users must be at least g.N().
func NewGeneratorWorkload(seed int64, users int, m Mix, bucketOf func(user uint32) uint32, g history.Generator) *Workload {
	if bucketOf == nil {
		bucketOf = func(uint32) uint32 { return 0 }
	}
	gn, gi := uint64(g.N()), uint64(g.Index)
	stream := uint64(seed)
	if gn > 1 {
		// Same seed on every generator, a different (deterministic) stream each.
		stream = splitmix(stream ^ splitmix(gn<<32|gi))
	}
	local := uint64(0)
	if uint64(users) > gi {
		local = (uint64(users) - gi + gn - 1) / gn
	}
	w := &Workload{seed: stream, users: max(local, 1), gi: gi, gn: gn, bucketOf: bucketOf}
	w.add = splitmix(w.seed^0x5eed) % w.users
	w.mult = 1
	if w.users > 1 {
		for c := splitmix(w.seed^0xface)%w.users | 1; ; c++ {
			if gcd(c%w.users, w.users) == 1 && c%w.users != 0 {
				w.mult = c % w.users
				break
			}
		}
	}
	w.segments = []segment{{from: 0, thresholds: thresholdsOf(m)}}
	return w
}

// Op returns operation i: its kind, its user and its request index (global
// indices: with a Generator I/N both are congruent to I mod N).
func (w *Workload) Op(i uint64) (history.Kind, uint32, uint32) {
	k := w.kind(i)
	if k == history.KindFresh {
		return history.KindFresh, w.global(w.freshUser(i)), w.request(i)
	}
	j, ok := w.earlierFresh(i)
	if !ok {
		return history.KindFresh, w.global(w.freshUser(i)), w.request(i)
	}
	switch k {
	case history.KindReplay, history.KindRelease, history.KindQuery:
		return k, w.global(w.freshUser(j)), w.request(j)
	case history.KindSameUser:
		return k, w.global(w.freshUser(j)), w.request(i)
	case history.KindReturn:
		// the user an earlier release op released, back with a new request
		if r, ok := w.earlierRelease(i); ok {
			if rj, ok := w.earlierFresh(r); ok {
				return k, w.global(w.freshUser(rj)), w.request(i)
			}
		}
		return history.KindSameUser, w.global(w.freshUser(j)), w.request(i)
	default: // KindForeignRequest: the next other user (of this generator) of the same bucket
		owner := w.freshUser(j)
		b := w.bucketOf(w.global(owner))
		for step := uint64(1); step < w.users && step <= 1024; step++ {
			if u := uint32((uint64(owner) + step) % w.users); w.bucketOf(w.global(u)) == b {
				return k, w.global(u), w.request(j)
			}
		}
		return history.KindReplay, w.global(owner), w.request(j)
	}
}

// global is the user index of this generator's local user u.
func (w *Workload) global(u uint32) uint32 { return uint32(uint64(u)*w.gn + w.gi) }

// request is the request index of this generator's operation i. Request
// indices are 32-bit: a generator's ops past 2^32/N would wrap.
func (w *Workload) request(i uint64) uint32 { return uint32(i*w.gn + w.gi) }

func (w *Workload) kind(i uint64) history.Kind {
	if i == 0 {
		return history.KindFresh
	}
	r := splitmix(w.seed^(i*0x9e3779b97f4a7c15)) >> 11
	seg := w.segments[0]
	for _, sg := range w.segments[1:] {
		if i >= sg.from {
			seg = sg
		}
	}
	for k, t := range seg.thresholds {
		if r < t {
			return history.Kind(k + 1)
		}
	}
	return history.KindFresh
}

func (w *Workload) freshUser(i uint64) uint32 { return uint32((w.mult*(i%w.users) + w.add) % w.users) }

// earlierFresh picks a fresh operation before i: uniformly among the
// earlier indexes of segments (phases) that had fresh operations at all, then
// back to the nearest fresh one. Segments without fresh operations (a
// replay-only phase) are skipped, so their repeats spread over every
// earlier fresh request instead of piling onto the first one.
func (w *Workload) earlierFresh(i uint64) (uint64, bool) {
	type span struct{ from, to uint64 }
	var spans []span
	var total uint64
	for k, sg := range w.segments {
		if sg.from >= i || sg.thresholds[len(sg.thresholds)-1] >= 1<<53 { // starts later, or no fresh share
			continue
		}
		to := i
		if k+1 < len(w.segments) && w.segments[k+1].from < i {
			to = w.segments[k+1].from
		}
		spans = append(spans, span{sg.from, to})
		total += to - sg.from
	}
	if total == 0 {
		return 0, w.kind(0) == history.KindFresh
	}
	r := splitmix(w.seed^(i*0xbf58476d1ce4e5b9)^0xabcdef) % total
	var j, lo uint64
	for _, sp := range spans {
		if n := sp.to - sp.from; r < n {
			j, lo = sp.from+r, sp.from
			break
		} else {
			r -= n
		}
	}
	for steps := 0; steps < 256; steps++ {
		if w.kind(j) == history.KindFresh {
			return j, true
		}
		if j == lo {
			break
		}
		j--
	}
	return 0, w.kind(0) == history.KindFresh
}

// earlierRelease picks a release operation before i: from a point drawn
// uniformly below i, the nearest release at or before it (at most 4096
// steps back); false when there is none.
func (w *Workload) earlierRelease(i uint64) (uint64, bool) {
	j := splitmix(w.seed^(i*0x94d049bb133111eb)^0x7e7e7e) % i
	for steps := 0; steps < 4096; steps++ {
		if w.kind(j) == history.KindRelease {
			return j, true
		}
		if j == 0 {
			break
		}
		j--
	}
	return 0, false
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
