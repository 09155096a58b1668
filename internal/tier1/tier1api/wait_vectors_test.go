package tier1api_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

var updateWaitVectors = flag.Bool("update-wait-vectors", false, "rewrite testdata/wait-vectors.json from the real service")

// waitVector is one status document as the API served it, a visitor's
// position and a moment, and the estimate a page makes from them.
type waitVector struct {
	Name     string          `json:"name"`
	Doc      json.RawMessage `json:"doc"`
	Position int64           `json:"position"`
	Now      time.Time       `json:"now"`
	Want     waitWant        `json:"want"`
}

type waitWant struct {
	OK          bool  `json:"ok"` // false: the document predates the place; the page keeps its last answer
	PeopleAhead int64 `json:"peopleAhead"`
	Seconds     int   `json:"seconds"`
	NextPoll    int   `json:"nextPoll"`
	Paused      bool  `json:"paused"`
	AfterDraw   bool  `json:"afterDraw"`
}

const waitVectorsFile = "internal/tier1/tier1api/testdata/wait-vectors.json"

// TestWaitVectors pins the page's estimate (static/vwr/wait.js, run on the
// same file by e2e/unit.test.js) to tier1.Page's: every vector's status
// document, served by the real handler when the file was made, must give
// the recorded answer. -update-wait-vectors makes the file anew.
func TestWaitVectors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(testenv.RepoRoot(t), waitVectorsFile)
	if *updateWaitVectors {
		b, err := json.MarshalIndent(makeWaitVectors(t), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vs []waitVector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < 40 {
		t.Fatalf("%d vectors; the file is cut short", len(vs))
	}
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v.Name] = true
		if got := pageWait(t, v.Doc, v.Position, v.Now); got != v.Want {
			t.Errorf("%s, p=%d at %s: %+v, want %+v", v.Name, v.Position, v.Now.Format(time.RFC3339Nano), got, v.Want)
		}
	}
	for _, name := range []string{"16 shards, flood", "measured pace", "paused", "pre-queue", "no history", "predates the place"} {
		if !seen[name] {
			t.Errorf("no vector %q", name)
		}
	}
}

func pageWait(t *testing.T, doc []byte, p int64, now time.Time) waitWant {
	t.Helper()
	var d tier1api.PageStatus
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	w, ok := d.Page().Wait(p, now)
	return waitWant{OK: ok, PeopleAhead: w.PeopleAhead, Seconds: w.Seconds, NextPoll: w.NextPoll, Paused: w.Paused, AfterDraw: w.AfterDraw}
}

// statusJSON serves the status document of ev through the real handler.
func (b *testBundle) statusJSON(t *testing.T, ev string) []byte {
	t.Helper()
	resp := call(t, b.status, withEvent(fixture(t, "status.apigw.json"), ev))
	wantStatus(t, resp, 200)
	return []byte(resp.Body)
}

// TestStatusDocumentEstimatesLikeCheck: a page estimating from a fresh
// status document says what check says at the same moment, and assign's
// answer is what the first document after it gives.
func TestStatusDocumentEstimatesLikeCheck(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	// Ten ticks of 20 let about 200 of the 600 in, so hundreds still wait
	// whatever shards the random choice filled.
	b.activate(t, ev, 16, 20)
	var ids []string
	var ps []int64
	for i := range 600 {
		r, err := b.svc.Assign(ctx, ev, "")
		if err != nil {
			t.Fatal(err)
		}
		ids, ps = append(ids, r.RequestID), append(ps, r.Position)
		if i%60 == 59 {
			if _, err := b.svc.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			b.clk.Advance(10 * time.Second)
		}
		b.clk.Advance(7 * time.Millisecond)
	}
	b.clk.Advance(1100 * time.Millisecond) // a fresh snapshot for both
	doc := b.statusJSON(t, ev)
	b.clk.Advance(300 * time.Millisecond)
	compared := 0
	for i, id := range ids {
		c, err := b.svc.Check(ctx, ev, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.Admitted {
			continue
		}
		compared++
		got := pageWait(t, doc, ps[i], b.clk.Now())
		want := waitWant{OK: true, PeopleAhead: c.PeopleAhead, Seconds: c.EstimatedWait, NextPoll: c.NextPoll, Paused: c.Paused}
		if got != want {
			t.Fatalf("p=%d: the page estimates %+v, check says %+v", ps[i], got, want)
		}
	}
	if compared < 100 {
		t.Fatalf("only %d waiting visitors compared", compared)
	}
}

// makeWaitVectors plays sales on the real service and records status
// documents with the estimates tier1.Page makes from them.
func makeWaitVectors(t *testing.T) []waitVector {
	t.Helper()
	ctx := context.Background()
	var vs []waitVector
	record := func(name string, b *testBundle, ev string, positions []int64, laters ...time.Duration) {
		doc := b.statusJSON(t, ev)
		for _, p := range positions {
			for _, d := range laters {
				now := b.clk.Now().Add(d)
				vs = append(vs, waitVector{Name: name, Doc: doc, Position: p, Now: now, Want: pageWait(t, doc, p, now)})
			}
		}
	}
	assign := func(b *testBundle, ev string, n int, gap time.Duration) []int64 {
		var ps []int64
		for range n {
			r, err := b.svc.Assign(ctx, ev, "")
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, r.Position)
			b.clk.Advance(gap)
		}
		return ps
	}
	pick := func(ps []int64) []int64 {
		return []int64{ps[0], ps[len(ps)/3], ps[len(ps)/2], ps[len(ps)-2], ps[len(ps)-1]}
	}

	{ // A flood on 16 shards, before any advance: no history, counters in motion.
		b := setup(t, setupOpts{})
		ev := testenv.UniqueID(t)
		b.activate(t, ev, 16, 100)
		ps := assign(b, ev, 400, 2*time.Millisecond)
		b.clk.Advance(time.Second)
		record("no history", b, ev, pick(ps), 0, 1500*time.Millisecond)
		more := assign(b, ev, 800, time.Millisecond)
		b.clk.Advance(300 * time.Millisecond) // the cached document is a second old: read anew
		record("16 shards, flood", b, ev, pick(more), 0, 700*time.Millisecond, 3200*time.Millisecond)
		// A place handed out after the document was read.
		late := assign(b, ev, 50, time.Millisecond)
		doc := b.statusJSON(t, ev)
		late = append(late, assign(b, ev, 30, time.Millisecond)...)
		for _, p := range late[len(late)-5:] {
			now := b.clk.Now()
			vs = append(vs, waitVector{Name: "predates the place", Doc: doc, Position: p, Now: now, Want: pageWait(t, doc, p, now)})
		}
	}
	{ // A measured pace: the advancer raises full batches every 10 s.
		b := setup(t, setupOpts{})
		ev := testenv.UniqueID(t)
		b.activate(t, ev, 4, 30)
		var ps []int64
		for range 5 {
			ps = append(ps, assign(b, ev, 50, 10*time.Millisecond)...)
			if _, err := b.svc.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			b.clk.Advance(9500 * time.Millisecond)
		}
		record("measured pace", b, ev, pick(ps), 0, 2*time.Second, 9*time.Second)
		if _, err := b.svc.Pause(ctx, ev); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(1100 * time.Millisecond)
		record("paused", b, ev, pick(ps), 0, 4*time.Second)
	}
	{ // A scheduled sale's pre-queue: no places yet.
		b := setup(t, setupOpts{})
		ev := testenv.UniqueID(t)
		if _, err := b.svc.Schedule(ctx, ev, epoch.Add(7*24*time.Hour), time.Time{}); err != nil {
			t.Fatal(err)
		}
		record("pre-queue", b, ev, []int64{1, 50}, 0)
	}
	for i := range vs {
		vs[i].Doc = compact(t, vs[i].Doc)
	}
	t.Logf("%d vectors", len(vs))
	return vs
}

func compact(t *testing.T, b []byte) json.RawMessage {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", b, err))
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
