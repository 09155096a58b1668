package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/draw/localbeacon"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
)

// SaleTickets is the pre-queue size of the sale case unless Options set
// another.
const SaleTickets = 5000

// SmallSaleTickets is the smallest sale the case accepts, with room: two
// chunks of the published list, the last partial (runSale checks it
// against the layout). A store asks for it where each ticket is costly to
// write: moto answers each of a ticket's ~3 requests in ~10 ms of its CPU,
// and the race detector made redis-server's 5,000-ticket sale ~58 s of CPU,
// two thirds in one goroutine after the draw. miniredis and the Cluster
// still run SaleTickets on the same domain code.
const SmallSaleTickets = 1100

// Beacon starts a local beacon stand-in on clk, served over HTTP, and
// returns it with the draw configuration that fetches from it.
func Beacon(t testing.TB, clk clock.Clock) (*localbeacon.Beacon, tier1.DrawConfig) {
	t.Helper()
	lb, err := localbeacon.New(clk, bytes.Repeat([]byte("storetest"), 4), Epoch.Add(-24*time.Hour), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(lb)
	t.Cleanup(srv.Close)
	return lb, tier1.DrawConfig{Chain: lb.Info(), Beacon: draw.Client{URL: srv.URL, Chain: lb.Info()}, Margin: 5 * time.Second}
}

type ticketHolder struct {
	rid   string
	nonce []byte
	h     draw.Hash
}

// runSale is a whole scheduled sale through the Service: a pre-queue of
// the given number of tickets, the close, a beacon outage, two advancers
// racing to draw, every position, and the published data verified and
// tampered with.
func runSale(t *testing.T, f Factory, tickets int) {
	runSaleRules(t, f)
	t.Run("scheduled sale: pre-queue, close, verifiable draw", func(t *testing.T) {
		t.Parallel()
		// What the size tests: a published list of more than one chunk, the
		// last partial, so the store writes and serves several chunk blobs
		// and the index, and positions, proofs over the chunk roots and the
		// flipped bytes span them. The chunk arithmetic is internal/draw's.
		if l := draw.LayoutFor(tickets); tickets <= l.ChunkSize || tickets%l.ChunkSize == 0 {
			t.Fatalf("a sale of %d tickets: want more than one chunk of %d, the last partial", tickets, l.ChunkSize)
		}
		clk := clock.NewManual(Epoch)
		store := f(t)
		if _, ok := store.(tier1.SaleStore); !ok {
			t.Fatalf("%T does not implement tier1.SaleStore", store)
		}
		lb, dc := Beacon(t, clk)
		c := cfg()
		c.Draw = dc
		svc := tier1.New(store, Keys(t), clk, c)
		other := tier1.New(store, Keys(t), clk, c) // a second advancer
		ctx := context.Background()
		event := testenv.UniqueID(t)
		opens := Epoch.Add(time.Hour)

		// An event already handing out positions cannot be scheduled.
		busy := event[:min(len(event), 58)] + "-busy"
		if _, err := svc.Activate(ctx, busy, 2, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Schedule(ctx, busy, opens, time.Time{}); !errors.Is(err, tier1.ErrInvalidSchedule) {
			t.Fatalf("Schedule of an active event: %v, want ErrInvalidSchedule", err)
		}
		if _, err := svc.Schedule(ctx, event, Epoch.Add(-time.Second), time.Time{}); !errors.Is(err, tier1.ErrInvalidSchedule) {
			t.Fatalf("Schedule in the past: %v", err)
		}

		// The pre-queue opens half an hour before the sale: nobody queues
		// (or passes through) before that.
		if _, err := svc.Schedule(ctx, event, opens.Add(time.Hour), time.Time{}); err != nil {
			t.Fatalf("Schedule: %v", err)
		}
		// Moved before it closes (the event is active now, as scheduling made it).
		st, err := svc.Schedule(ctx, event, opens, opens.Add(-30*time.Minute))
		if err != nil {
			t.Fatalf("Schedule again: %v", err)
		}
		if _, err := svc.AssignWithNonce(ctx, event, "", bytes.Repeat([]byte{1}, 16)); !errors.Is(err, tier1.ErrNotOpen) {
			t.Fatalf("arrival before prequeueFrom: %v, want ErrNotOpen", err)
		}
		if !st.PrequeueFrom.Equal(opens.Add(-30 * time.Minute)) {
			t.Fatalf("PrequeueFrom = %v", st.PrequeueFrom)
		}
		clk.Set(opens.Add(-30 * time.Minute))
		wantRound := dc.Chain.FirstRoundAtOrAfter(opens.Add(tier1.CloseGrace + dc.Margin))
		if st.Round != wantRound || !st.OpensAt.Equal(opens) || st.Phase() != tier1.PhasePrequeue {
			t.Fatalf("schedule = %+v, want round %d", st, wantRound)
		}
		if _, err := svc.Assign(ctx, event, ""); !errors.Is(err, tier1.ErrNonceRequired) {
			t.Fatalf("pre-queue arrival without a nonce: %v, want ErrNonceRequired", err)
		}

		// The pre-queue: that many arrivals from 8 workers, plus replays.
		holders := make([]ticketHolder, tickets)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < tickets; i += 8 {
					nonce := make([]byte, draw.NonceSize)
					_, _ = rand.Read(nonce)
					key := ""
					if i%10 == 7 { // some arrivals carry an Idempotency-Key
						key = fmt.Sprintf("k%d", i)
					}
					res, err := svc.AssignWithNonce(ctx, event, key, nonce)
					if err != nil {
						errs <- err
						return
					}
					if res.Phase != tier1.PhasePrequeue || res.Position != 0 || res.TicketHash != draw.TicketHash(res.RequestID, nonce) || res.Sale.Round != wantRound {
						errs <- fmt.Errorf("pre-queue answer %+v", res)
						return
					}
					holders[i] = ticketHolder{rid: res.RequestID, nonce: nonce, h: res.TicketHash}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		replay, err := svc.AssignWithNonce(ctx, event, "k7", holders[7].nonce)
		if err != nil || !replay.Reused || replay.RequestID != holders[7].rid {
			t.Fatalf("Idempotency-Key replay = %+v, %v; want the first ticket %s", replay, err, holders[7].rid)
		}
		chk, err := svc.Check(ctx, event, holders[0].rid)
		if err != nil || chk.Phase != tier1.PhasePrequeue || chk.Admitted || chk.TicketHash != holders[0].h {
			t.Fatalf("Check in the pre-queue = %+v, %v", chk, err)
		}
		if _, err := svc.AdvanceBy(ctx, event, 1); !errors.Is(err, tier1.ErrInvalidConfig) {
			t.Fatalf("AdvanceBy before the draw: %v, want ErrInvalidConfig", err)
		}

		// The opening: the advancer closes the list and publishes R at once.
		clk.Set(opens)
		rs, err := svc.Tick(ctx)
		if r := find(rs, event); err != nil || r.Skipped != tier1.PhaseDrawing || r.To != 0 {
			t.Fatalf("tick at the opening = %+v, %v; want skipped drawing", rs, err)
		}
		doc, err := svc.DrawDoc(ctx, event)
		if err != nil || doc.Status != draw.StatusDrawing || doc.N == nil || *doc.N != int64(tickets) || len(doc.Root) != 32 || doc.Beacon != nil {
			t.Fatalf("draw doc after close = %+v, %v", doc, err)
		}
		// The close is published, at the opening, with the margin and the
		// schedule's time; the round is the scheduled one.
		if doc.ClosedAt == nil || !doc.ClosedAt.Equal(opens) || doc.MarginMs != dc.Margin.Milliseconds() ||
			!doc.ScheduledAt.Equal(Epoch) || doc.Round != wantRound || doc.ScheduledRound != wantRound || doc.RoundMoved != "" {
			t.Fatalf("draw doc after an on-time close = %+v", doc)
		}
		receiptRoot := append([]byte(nil), doc.Root...)
		if stat, err := svc.Status(ctx, event); err != nil || stat.Sale.Public() != tier1.PhaseDrawing || !bytes.Equal(stat.Sale.Root, receiptRoot) {
			t.Fatalf("status after close = %+v, %v", stat, err)
		}
		if _, _, err := store.(tier1.SaleStore).AddTicket(ctx, tier1.NewTicket{EventID: event, RequestID: tier1.NewRequestID(), Now: clk.Now(), TTL: time.Hour}); !errors.Is(err, tier1.ErrClosed) {
			t.Fatalf("AddTicket after close: %v, want ErrClosed", err)
		}
		// A late arrival lines up behind all n drawn places.
		late, err := svc.AssignWithNonce(ctx, event, "", holders[0].nonce)
		if err != nil || late.Phase != "" || late.Position <= int64(tickets) {
			t.Fatalf("late arrival = %+v, %v; want a position after %d", late, err, tickets)
		}

		// The round is out but the beacon is down: the sale waits, in view.
		clk.Set(dc.Chain.TimeOf(wantRound).Add(time.Second))
		lb.SetDown(true)
		if out, err := svc.Draw(ctx, event); err != nil || out != tier1.DrawNoBeacon {
			t.Fatalf("Draw with the beacon down = %q, %v", out, err)
		}
		if chk, err := svc.Check(ctx, event, holders[1].rid); err != nil || chk.Phase != tier1.PhaseDrawing {
			t.Fatalf("Check with the beacon down = %+v, %v", chk, err)
		}
		lb.SetDown(false)

		// Two advancers race: exactly one draws.
		outs := make([]tier1.DrawOutcome, 2)
		var race sync.WaitGroup
		for i, s := range []*tier1.Service{svc, other} {
			race.Add(1)
			go func() {
				defer race.Done()
				out, err := s.Draw(ctx, event)
				if err != nil {
					t.Errorf("Draw %d: %v", i, err)
				}
				outs[i] = out
			}()
		}
		race.Wait()
		if fmt.Sprint(sortedOutcomes(outs)) != "[already drawn]" {
			t.Fatalf("two racing draws = %v, want exactly one drawn", outs)
		}
		if out, _ := svc.Draw(ctx, event); out != tier1.DrawAlready {
			t.Fatalf("a third draw = %q", out)
		}

		// Positions 1…n, no gap, each provable under the receipt's R.
		doc, err = svc.DrawDoc(ctx, event)
		if err != nil || doc.Status != draw.StatusDrawn || !bytes.Equal(doc.Root, receiptRoot) {
			t.Fatalf("draw doc = %+v, %v", doc, err)
		}
		seen := make([]bool, tickets+1)
		for _, hd := range holders {
			p, err := svc.Place(ctx, event, hd.h)
			if err != nil {
				t.Fatalf("Place: %v", err)
			}
			if p.Position < 1 || int(p.Position) > tickets || seen[p.Position] {
				t.Fatalf("position %d out of 1…%d or repeated", p.Position, tickets)
			}
			seen[p.Position] = true
			if root, err := draw.RootFromProof(hd.h, p.Proof); err != nil || !bytes.Equal(root[:], doc.MerkleRoot) {
				t.Fatalf("proof of %x does not reach the Merkle root: %v", hd.h, err)
			}
		}
		for _, i := range []int{0, 1, tickets / 2, tickets - 1} {
			chk, err := svc.Check(ctx, event, holders[i].rid)
			p, _ := svc.Place(ctx, event, holders[i].h)
			if err != nil || chk.Phase != tier1.PhaseDrawn || chk.Position != int64(p.Position) || chk.Proof == nil {
				t.Fatalf("Check after the draw = %+v, %v; want position %d", chk, err, p.Position)
			}
		}

		// The published data verifies, and no flipped byte does.
		bundle := Bundle(t, svc, event)
		if err := draw.Verify(bundle, dc.Chain.Hash, event); err != nil {
			t.Fatalf("verify the published draw: %v", err)
		}
		raw, err := json.Marshal(bundle)
		if err != nil {
			t.Fatal(err)
		}
		rng := mrand.New(mrand.NewPCG(1, 2))
		for range 300 {
			i := rng.IntN(len(raw))
			flipped := bytes.Clone(raw)
			flipped[i] ^= 1
			var fb draw.Bundle
			if draw.DecodeBundle(bytes.NewReader(flipped), &fb) != nil {
				continue
			}
			if draw.Verify(fb, dc.Chain.Hash, event) == nil {
				t.Fatalf("byte %d flipped (%q) and the draw still verifies", i, raw[i])
			}
		}

		// A drawn sale can be neither moved nor cancelled.
		if _, err := svc.Cancel(ctx, event); !errors.Is(err, tier1.ErrSaleDrawn) {
			t.Fatalf("Cancel after the draw: %v, want ErrSaleDrawn", err)
		}
		if _, err := svc.Schedule(ctx, event, opens.Add(time.Hour), time.Time{}); !errors.Is(err, tier1.ErrSaleDrawn) {
			t.Fatalf("Schedule after the draw: %v, want ErrSaleDrawn", err)
		}

		// The line moves again: the next tick admits the first batch.
		clk.Advance(time.Minute)
		rs, err = svc.Tick(ctx)
		if r := find(rs, event); err != nil || r.Skipped != "" || r.To == 0 {
			t.Fatalf("tick after the draw = %+v, %v", rs, err)
		}
	})
}

func sortedOutcomes(o []tier1.DrawOutcome) []string {
	s := []string{string(o[0]), string(o[1])}
	sort.Strings(s)
	return s
}

// Bundle assembles a drawn sale's published data the way verify-draw
// downloads it: the document and every chunk.
func Bundle(t testing.TB, svc *tier1.Service, event string) draw.Bundle {
	t.Helper()
	ctx := context.Background()
	doc, err := svc.DrawDoc(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	b := draw.Bundle{Draw: doc}
	for j := range doc.Chunks {
		c, err := svc.DrawChunk(ctx, event, j)
		if err != nil {
			t.Fatal(err)
		}
		b.Tickets = append(b.Tickets, c.Tickets...)
		b.Positions = append(b.Positions, c.Positions...)
	}
	return b
}
