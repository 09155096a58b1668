package queue

import (
	"fmt"
	"testing"
	"time"
)

// memoryFixture drives one instance's memory of lines directly: learnt
// places, reads of synthetic changes (joins behind everyone), answers.
type memoryFixture struct {
	t   *testing.T
	l   *lines
	now time.Time
	seq map[string]int64
}

func newMemoryFixture(t *testing.T) *memoryFixture {
	l := &lines{}
	l.on.Store(true)
	return &memoryFixture{t: t, l: l, now: time.Unix(1_800_000_000, 0), seq: map[string]int64{}}
}

func (f *memoryFixture) learn(ev, uid string, base, rank int64) {
	f.l.learn(ev, uid, Snapshot{Status: StatusQueued, Rank: rank, LineSeq: 100, LineBase: base, Epoch: EpochState{ID: "e1"}}, f.now)
	f.seq[ev] = 100
}

// read applies n joins behind everyone to ev's line.
func (f *memoryFixture) read(ev string, n int) {
	f.t.Helper()
	m := f.l.memo(ev)
	seq := f.seq[ev]
	st := LineState{EventID: ev, Seq: seq + int64(n), Front: -1, QueueSize: 10 + seq + int64(n), ActiveCount: 1, Threshold: 1, Epoch: EpochState{ID: "e1"}}
	for i := range n {
		st.Changes = append(st.Changes, LineChange{Kind: LineJoined, Base: 1_000_000 + seq + int64(i)})
	}
	since, here, _, ok := m.claim()
	if !ok {
		f.t.Fatal("a read in flight")
	}
	f.l.apply(m, since, here, st, f.now, "e1")
	m.release()
	f.seq[ev] = seq + int64(n)
}

// poll asks memory for uid's place; want < 0: it must not answer.
func (f *memoryFixture) poll(ev, uid string, want int64) {
	f.t.Helper()
	s, _, vd := f.l.answer(ev, uid, f.now, 1, false, 1, HeartbeatTick)
	switch {
	case want < 0 && vd == answered:
		f.t.Fatalf("%s/%s: answered %+v, want the store", ev, uid, s)
	case want >= 0 && (vd != answered || s.Rank != want):
		f.t.Fatalf("%s/%s: %+v, %v; want rank %d from memory", ev, uid, s, vd, want)
	}
}

func (f *memoryFixture) kept() int {
	n, places := 0, 0
	f.l.mu.RLock()
	defer f.l.mu.RUnlock()
	for _, m := range f.l.events {
		n += len(m.changes)
		places += len(m.places)
	}
	if int64(n) != f.l.kept.Load() {
		f.t.Fatalf("kept %d changes, counted %d", n, f.l.kept.Load())
	}
	if int64(places) != f.l.n.Load() {
		f.t.Fatalf("remembers %d places, counted %d", places, f.l.n.Load())
	}
	return n
}

// TestKeptChangesSpanOnlyWhatRememberedPlacesNeed: a busy line whose
// visitors keep polling keeps only the changes since its least recently
// answered visitor, not up to maxKeptChanges.
func TestKeptChangesSpanOnlyWhatRememberedPlacesNeed(t *testing.T) {
	t.Parallel()
	f := newMemoryFixture(t)
	f.learn("ev", "a", 10, 5)
	f.learn("ev", "b", 12, 7)
	for range 40 {
		f.read("ev", 500) // 20,000 joins behind, 500 per read
		f.poll("ev", "a", 5)
		f.poll("ev", "b", 7)
		f.now = f.now.Add(50 * time.Millisecond)
	}
	if kept := f.kept(); kept > 2*compactFrom {
		t.Fatalf("after 20,000 changes, everyone polling: %d kept, want ≤ %d", kept, 2*compactFrom)
	}
}

// TestKeptChangesBoundedOverAllLines: many busy lines, each with a quiet
// visitor whose place needs every change since: the instance keeps about
// keptCap changes in all, and a place whose changes were cut asks the
// store rather than answer wrong.
func TestKeptChangesBoundedOverAllLines(t *testing.T) {
	t.Parallel()
	f := newMemoryFixture(t)
	f.l.keptCap = 5000
	const events = 10
	for e := range events {
		ev := fmt.Sprintf("ev%d", e)
		f.learn(ev, "quiet", 10, 5)
		f.learn(ev, "poller", 11, 6)
	}
	for range 20 {
		for e := range events {
			ev := fmt.Sprintf("ev%d", e)
			f.read(ev, 500)
			f.poll(ev, "poller", 6)
			if kept := f.kept(); kept > 5000+500 {
				t.Fatalf("%d changes kept over %d lines, want about 5,000", kept, events)
			}
		}
		f.now = f.now.Add(50 * time.Millisecond)
	}
	for e := range events {
		f.poll(fmt.Sprintf("ev%d", e), "quiet", -1)
	}
}
