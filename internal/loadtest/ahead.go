package loadtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"
)

// Tier 2's people-ahead counts, measured against the exact rank. Tier 2
// may answer a queued poll from a per-instance snapshot (issue 17), so its
// count can be an estimate; the in-process target reads the visitor's exact
// rank (Target.ExactRank: ZRANK on the event's line) just before and just
// after a sampled poll. The line moved between the two reads by the
// admissions and leaves in between, so the count the answer should have
// given lies between them: but only if nobody was put in ahead meanwhile.
// The line is ordered by Tier 1 position, so a visitor with an earlier
// position who joins Tier 2 later goes in ahead (each tier drains at its
// own pace); the rank then falls and rises between the two reads, and a
// loaded machine that makes a request take seconds lets many do so. The
// tool sees every join, so it widens the span by the joins ahead of the
// sampled visitor that were under way between the two reads (tier2AheadError).

// DefaultAheadSampleEvery is Config.AheadSampleEvery's default: one queued
// poll in ten reads the exact rank twice (two ZRANKs, O(log n) each, on a
// client of the tool's own).
const DefaultAheadSampleEvery = 10

// rankRead is one exact-rank read: ok is false when the visitor was not in
// the line (or the read failed).
type rankRead struct {
	rank int64
	ok   bool
}

// aheadSample is one sampled answer: the count shown, whether the answer
// called it exact, and the exact ranks read around it.
type aheadSample struct {
	shown         int64
	exact         bool
	before, after rankRead
	pos           int64     // the visitor's Tier 1 position: its place in the line's order
	from, to      time.Time // the before read was sent, the after read answered
}

// joinAt is one visitor's join at Tier 2 (its first check of a pass): its
// position, when the request went out and when its answer came.
type joinAt struct {
	pos        int64
	sent, recv time.Time
}

// sampleAhead says whether this queued poll is one of the sample.
func (r *run) sampleAhead() bool {
	return r.t.ExactRank != nil && r.aheadSeq.Add(1)%int64(r.cfg.AheadSampleEvery) == 0
}

// exactRank reads the rank of the pass's holder in the sale's line.
func (r *run) exactRank(ctx context.Context, pass string) rankRead {
	uid := passSubject(pass)
	if uid == "" {
		return rankRead{}
	}
	rank, ok, err := r.t.ExactRank(ctx, r.cfg.Event, uid)
	return rankRead{rank: rank, ok: ok && err == nil}
}

// sawAhead keeps one sampled answer.
func (r *run) sawAhead(s aheadSample) {
	r.mu.Lock()
	r.aheads = append(r.aheads, s)
	r.mu.Unlock()
}

// passSubject is the Tier 1 pass's subject, the user id Tier 2 keeps in
// its line; the tool reads its own token, so it need not verify it.
func passSubject(pass string) string {
	parts := strings.Split(pass, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(b, &c) != nil {
		return ""
	}
	return c.Sub
}

// tier2AheadError summarises the samples against the joins. A sample's
// exact rank at any moment between its reads lies in [after − I, before +
// I], where I are the joins ahead of it under way between the reads (the
// rank is before, plus the insertions ahead, less the removals ahead, and
// at the after read both are complete); a count in that span is off by
// nothing, one outside by its distance, out of bound when that is above
// max(5, 2 % of the exact rank nearest to the count). A sample without
// both reads (the visitor was not in the line at one of them) is left out.
func tier2AheadError(ss []aheadSample, joins []joinAt, start time.Time) *Tier2AheadError {
	slices.SortFunc(joins, func(a, b joinAt) int { return a.sent.Compare(b.sent) })
	var longest time.Duration
	for _, j := range joins {
		longest = max(longest, j.recv.Sub(j.sent))
	}
	var errs []int64
	var worst []AheadSample
	var estimated, out, outExact int64
	for _, s := range ss {
		if !s.before.ok || !s.after.ok {
			continue
		}
		in := insertedAhead(joins, longest, s)
		// Without a join seen ahead (I = 0) this is [after, before]; reads
		// the joins cannot explain widen it to both.
		lo := max(0, min(s.after.rank-in, s.before.rank))
		hi := max(s.before.rank+in, s.after.rank)
		nearest := min(max(s.shown, lo), hi)
		e := s.shown - nearest
		if e < 0 {
			e = -e
		}
		errs = append(errs, e)
		if e > 0 {
			worst = append(worst, AheadSample{AtSeconds: round2(s.from.Sub(start).Seconds()), Shown: s.shown, Exact: s.exact,
				Before: s.before.rank, After: s.after.rank, JoinsAhead: in, Error: e})
		}
		if !s.exact {
			estimated++
		}
		if float64(e) > math.Max(5, 0.02*float64(nearest)) {
			out++
			if s.exact {
				outExact++
			}
		}
	}
	rep := &Tier2AheadError{Samples: int64(len(errs)), OutOfBound: out, OutOfBoundExact: outExact}
	if len(errs) == 0 {
		return rep
	}
	slices.Sort(errs)
	slices.SortStableFunc(worst, func(a, b AheadSample) int { return int(b.Error - a.Error) })
	rep.Worst = worst[:min(len(worst), 5)]
	rep.EstimatedShare = round4(float64(estimated) / float64(len(errs)))
	rep.MaxAbs = errs[len(errs)-1]
	i := int(0.99*float64(len(errs))+0.999999) - 1 // nearest rank, as quantile
	rep.P99Abs = errs[min(max(i, 0), len(errs)-1)]
	return rep
}

// insertedAhead counts the joins (sorted by sent; none took longer than
// longest) ahead of s's visitor whose request was under way at some moment
// between s's reads.
func insertedAhead(joins []joinAt, longest time.Duration, s aheadSample) int64 {
	earliest := s.from.Add(-longest)
	i, _ := slices.BinarySearchFunc(joins, earliest, func(j joinAt, t time.Time) int { return j.sent.Compare(t) })
	var n int64
	for ; i < len(joins) && !joins[i].sent.After(s.to); i++ {
		if j := joins[i]; j.pos < s.pos && !j.recv.Before(s.from) {
			n++
		}
	}
	return n
}
