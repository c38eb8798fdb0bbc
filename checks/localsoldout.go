package checks

import (
	"fmt"
	"iter"
	"math"
	"sort"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/sut"
)

// AnalyzeLocalSoldOut measures, from a history alone, what a local
// sold-out flag of the given TTL saved and cost (with ttl 0 — no flag —
// the same figures serve as the baseline of a comparison):
//
//   - answers given locally (= Redis calls saved) and the reserve calls
//     Redis got after its bucket's first SOLD_OUT;
//   - per unit released after its bucket's first SOLD_OUT from Redis, the
//     time until the reserve that sold it again: releases, in the order
//     they were sent, are matched one each with the bucket's first-time
//     ACCEPTED answers (replays and repeated reservation ids excluded) in
//     the order they came back, a sale matching a release when it came
//     back after the release was sent (the unit is free somewhere between
//     the release's send and its answer, so a reserve sent meanwhile may
//     take it). The window is from the release's send to the sale's
//     answer. A release that finds no sale is unrecovered when the load
//     went on for TTL plus RecoverySlack after it, not judged otherwise;
//   - the LOCAL_SOLD_OUT answers given in a bucket inside such a window.
func AnalyzeLocalSoldOut(ops iter.Seq2[int, *history.Op], buckets int, ttl time.Duration) *reports.LocalSoldOut {
	r := &reports.LocalSoldOut{TTLMs: ttl.Milliseconds(), RecoverySlackMs: sut.RecoverySlack.Milliseconds()}
	firstSold, loadEnd := firstSoldOut(ops, buckets)
	releases := releasesAfterSellOut(ops, firstSold)
	sales := make([][]time.Duration, buckets)
	locals := make([][]time.Duration, buckets)
	seen := map[string]bool{}
	for _, o := range ops {
		if int(o.Bucket) >= buckets {
			continue
		}
		b := o.Bucket
		if o.Outcome == history.OutcomeLocalSoldOut {
			r.AnsweredLocally++
			locals[b] = append(locals[b], o.Start)
			continue
		}
		if firstSold[b] < 0 {
			continue
		}
		switch {
		case o.Kind.IsReserve():
			if o.Start >= firstSold[b] {
				r.RedisCallsAfterSellOut += int64(o.Attempts)
			}
			if o.Accepted() && !o.Replay() && o.RID != "" && !seen[o.RID] && o.End >= firstSold[b] {
				seen[o.RID] = true
				sales[b] = append(sales[b], o.End)
			}
		}
	}
	r.RedisCallsSaved = r.AnsweredLocally
	var windows []float64
	for b := 0; b < buckets; b++ {
		rel, sold, loc := releases[b], sales[b], locals[b]
		sort.Slice(rel, func(i, j int) bool { return rel[i] < rel[j] })
		sort.Slice(sold, func(i, j int) bool { return sold[i] < sold[j] })
		sort.Slice(loc, func(i, j int) bool { return loc[i] < loc[j] })
		inWindow := make([]bool, len(loc)) // local answers inside some window
		j := 0
		for _, t := range rel {
			r.ReleasesAfterSellOut++
			for j < len(sold) && sold[j] < t {
				j++
			}
			if j == len(sold) {
				if t+ttl+sut.RecoverySlack <= loadEnd {
					r.Unrecovered++
					if len(r.UnrecoveredExamples) < 5 {
						r.UnrecoveredExamples = append(r.UnrecoveredExamples,
							fmt.Sprintf("bucket %d: unit released at %.3fs never sold again (load ran to %.3fs, TTL %s)", b, t.Seconds(), loadEnd.Seconds(), ttl))
					}
				} else {
					r.NotJudged++
				}
				continue
			}
			w := sold[j] - t
			j++
			r.Recovered++
			if w <= ttl+sut.RecoverySlack {
				r.RecoveredWithinTTL++
			}
			windows = append(windows, float64(w.Microseconds())/1000)
			lo := sort.Search(len(loc), func(k int) bool { return loc[k] >= t })
			hi := sort.Search(len(loc), func(k int) bool { return loc[k] >= t+w })
			for k := lo; k < hi; k++ {
				inWindow[k] = true
			}
		}
		for _, in := range inWindow {
			if in {
				r.FalseSoldOutAnswers++
			}
		}
	}
	r.FalseSoldOutWindowMs = percentilesOf(windows)
	return r
}

// firstSoldOut is, per bucket, the first send of its first SOLD_OUT answer
// (-1 for none), and the last send of any operation (the load's end).
func firstSoldOut(ops iter.Seq2[int, *history.Op], buckets int) (firstSold []time.Duration, loadEnd time.Duration) {
	firstSold = make([]time.Duration, buckets)
	for b := range firstSold {
		firstSold[b] = -1
	}
	for _, o := range ops {
		loadEnd = max(loadEnd, o.Start)
		if int(o.Bucket) >= buckets || !o.Kind.IsReserve() {
			continue
		}
		if o.Outcome == history.Outcome(lua.SoldOut) && (firstSold[o.Bucket] < 0 || o.Start < firstSold[o.Bucket]) {
			firstSold[o.Bucket] = o.Start
		}
	}
	return firstSold, loadEnd
}

// releasesAfterSellOut is, per bucket, when each reservation released after
// its bucket first answered SOLD_OUT (firstSold, -1 for never) was released:
// the first send of the earliest operation that may have run the release.
// A release whose reply was lost and whose same-id re-send answered
// ALREADY_RELEASED freed its unit as much as one answered RELEASED; each
// reservation counts once, since another operation may have been the one.
func releasesAfterSellOut(ops iter.Seq2[int, *history.Op], firstSold []time.Duration) [][]time.Duration {
	type releaseAt struct {
		bucket uint16
		at     time.Duration
	}
	released := map[string]releaseAt{}
	for _, o := range ops {
		b := int(o.Bucket)
		if o.Kind != history.KindRelease || o.RID == "" || b >= len(firstSold) || firstSold[b] < 0 || o.End < firstSold[b] {
			continue
		}
		ran := o.Outcome == history.Outcome(lua.CompensateReleased) || o.Outcome == history.Outcome(lua.CompensateAlreadyReleased) && o.HadUnknown()
		if t, seen := released[o.RID]; ran && (!seen || o.Start < t.at) {
			released[o.RID] = releaseAt{o.Bucket, o.Start}
		}
	}
	out := make([][]time.Duration, len(firstSold))
	for _, r := range released {
		out[r.bucket] = append(out[r.bucket], r.at)
	}
	return out
}

// percentilesOf is the nearest-rank percentiles of v (zero when empty).
func percentilesOf(v []float64) reports.Percentiles {
	if len(v) == 0 {
		return reports.Percentiles{}
	}
	sort.Float64s(v)
	at := func(q float64) float64 {
		k := int(math.Ceil(q/100*float64(len(v)))) - 1
		return v[max(0, min(k, len(v)-1))]
	}
	return reports.Percentiles{P50: at(50), P95: at(95), P99: at(99), P999: at(99.9), Max: v[len(v)-1]}
}

// judgeL1: with the local sold-out flag, every unit released after its
// bucket's sell-out is sold again within the TTL plus RecoverySlack (the
// flags expire and the next request re-checks Redis); the undersell is
// bounded by the window.
func judgeL1(f *Facts) Verdict {
	r := AnalyzeLocalSoldOut(f.all(), f.Buckets(), f.LocalSoldOutTTL)
	late := r.Recovered - r.RecoveredWithinTTL
	ev := map[string]any{"ttl_ms": r.TTLMs, "answered_locally": r.AnsweredLocally, "releases_after_sell_out": r.ReleasesAfterSellOut,
		"recovered": r.Recovered, "recovered_within_ttl": r.RecoveredWithinTTL, "unrecovered": r.Unrecovered, "not_judged": r.NotJudged,
		"false_sold_out_window_max_ms": r.FalseSoldOutWindowMs.Max, "false_sold_out_answers": r.FalseSoldOutAnswers,
		"late_or_unrecovered": late + r.Unrecovered}
	if r.Unrecovered > 0 || late > 0 {
		detail := fmt.Sprintf("%d released unit(s) never sold again and %d sold only after TTL %s + %s: the flag did not expire into a re-check", r.Unrecovered, late, f.LocalSoldOutTTL, sut.RecoverySlack)
		if len(r.UnrecoveredExamples) > 0 {
			detail += "; e.g. " + r.UnrecoveredExamples[0]
			ev["unrecovered_examples"] = r.UnrecoveredExamples
		}
		return Verdict{true, detail, ev}
	}
	return Verdict{false, fmt.Sprintf("%d unit(s) released after the sell-out, all sold again within TTL %s + %s (false sold-out window max %.0f ms, %d answers given locally meanwhile); %d answered locally in all",
		r.Recovered, f.LocalSoldOutTTL, sut.RecoverySlack, r.FalseSoldOutWindowMs.Max, r.FalseSoldOutAnswers, r.AnsweredLocally), ev}
}

// vacuousL1: no unit came back after a sell-out, so recovery was not tested.
func vacuousL1(_ *Facts, v Verdict) string {
	if v.Evidence["recovered"] == 0 && v.Evidence["unrecovered"] == 0 {
		return fmt.Sprintf("no unit was released after its bucket sold out (%v not judged: too near the end): recovery not tested", v.Evidence["not_judged"])
	}
	return ""
}
