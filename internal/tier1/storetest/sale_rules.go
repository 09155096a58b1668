package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/draw/localbeacon"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
)

// saleBundle is one scheduled sale's parts for the rule cases.
type saleBundle struct {
	ctx   context.Context
	clk   *clock.Manual
	svc   *tier1.Service
	sales tier1.SaleStore
	lb    *localbeacon.Beacon
	dc    tier1.DrawConfig
	event string
	opens time.Time
}

func newSale(t *testing.T, f Factory) *saleBundle {
	t.Helper()
	return newSaleOn(t, f(t))
}

// newSaleOn schedules a sale of a new event on store (moto makes tables
// slowly: cases with several sales share one store).
func newSaleOn(t *testing.T, store tier1.Store) *saleBundle {
	t.Helper()
	clk := clock.NewManual(Epoch)
	lb, dc := Beacon(t, clk)
	c := cfg()
	c.Draw = dc
	b := &saleBundle{
		ctx: context.Background(), clk: clk, svc: tier1.New(store, Keys(t), clk, c), sales: store.(tier1.SaleStore),
		lb: lb, dc: dc, event: testenv.UniqueID(t), opens: Epoch.Add(time.Hour),
	}
	if _, err := b.svc.Schedule(b.ctx, b.event, b.opens, time.Time{}); err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	return b
}

func (b *saleBundle) ticket(t *testing.T, i int) tier1.AssignResult {
	t.Helper()
	nonce := sha256.Sum256([]byte(fmt.Sprintf("%s nonce %d", b.event, i)))
	res, err := b.svc.AssignWithNonce(b.ctx, b.event, "", nonce[:draw.NonceSize])
	if err != nil || res.Phase != tier1.PhasePrequeue {
		t.Fatalf("pre-queue ticket %d = %+v, %v", i, res, err)
	}
	return res
}

func (b *saleBundle) doc(t *testing.T) draw.Doc {
	t.Helper()
	d, err := b.svc.DrawDoc(b.ctx, b.event)
	if err != nil {
		t.Fatalf("DrawDoc: %v", err)
	}
	return d
}

// runSaleRules are the rules that keep an operator from bending a draw:
// the sale cannot move once a ticket exists, a cancelled sale is recorded
// and never drawn, a late close moves the draw to a later round, and the
// grinding attack that a list open past the round allowed fails.
func runSaleRules(t *testing.T, f Factory) {
	t.Run("schedule after a ticket is refused; cancelling is recorded", func(t *testing.T) {
		t.Parallel()
		b := newSale(t, f)
		// Moving the sale is fine while nobody holds a ticket...
		if _, err := b.svc.Schedule(b.ctx, b.event, b.opens.Add(time.Minute), time.Time{}); err != nil {
			t.Fatalf("move before any ticket: %v", err)
		}
		first := b.ticket(t, 0)
		if !first.Sale.OpensAt.Equal(b.opens.Add(time.Minute)) {
			t.Fatalf("ticket announced opening %v, want the moved one", first.Sale.OpensAt)
		}
		// ...but not once one exists: its holder was told the opening and
		// the round. The store refuses too, atomically, and writes nothing.
		if _, err := b.svc.Schedule(b.ctx, b.event, b.opens.Add(2*time.Minute), time.Time{}); !errors.Is(err, tier1.ErrSaleTicketed) {
			t.Fatalf("Schedule after a ticket: %v, want ErrSaleTicketed", err)
		}
		late := tier1.Schedule{EventID: b.event, OpensAt: b.opens.Add(3 * time.Minute), Round: 1, ChainHash: b.dc.Chain.Hash, Margin: time.Second, Now: b.clk.Now()}
		if err := b.sales.PutSchedule(b.ctx, late); !errors.Is(err, tier1.ErrTicketed) {
			t.Fatalf("store PutSchedule after a ticket: %v, want ErrTicketed", err)
		}
		if d := b.doc(t); !d.OpensAt.Equal(b.opens.Add(time.Minute)) || d.ScheduledRound != first.Sale.Round {
			t.Fatalf("the refused schedules moved the sale: %+v", d)
		}

		// Cancelling remains: the list closes for good, the document says
		// when, and the event id cannot be scheduled again.
		b.clk.Advance(time.Minute)
		if _, err := b.svc.Cancel(b.ctx, b.event); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		if _, err := b.svc.Cancel(b.ctx, b.event); err != nil {
			t.Fatalf("Cancel twice: %v", err)
		}
		d := b.doc(t)
		if d.Status != draw.StatusCancelled || d.CancelledAt == nil || !d.CancelledAt.Equal(Epoch.Add(time.Minute)) || d.ClosedAt == nil {
			t.Fatalf("draw doc after cancel = %+v", d)
		}
		if _, _, err := b.sales.AddTicket(b.ctx, tier1.NewTicket{EventID: b.event, RequestID: tier1.NewRequestID(), Now: b.clk.Now(), TTL: time.Hour}); !errors.Is(err, tier1.ErrClosed) {
			t.Fatalf("AddTicket after cancel: %v, want ErrClosed", err)
		}
		if _, err := b.svc.AssignWithNonce(b.ctx, b.event, "", bytes.Repeat([]byte{9}, 16)); !errors.Is(err, tier1.ErrSaleCancelled) {
			t.Fatalf("arrival after cancel: %v, want ErrSaleCancelled", err)
		}
		if _, err := b.svc.Check(b.ctx, b.event, first.RequestID); !errors.Is(err, tier1.ErrSaleCancelled) {
			t.Fatalf("ticket holder's check after cancel: %v, want ErrSaleCancelled", err)
		}
		if _, err := b.svc.Schedule(b.ctx, b.event, b.opens.Add(time.Hour), time.Time{}); !errors.Is(err, tier1.ErrSaleCancelled) {
			t.Fatalf("Schedule after cancel: %v, want ErrSaleCancelled", err)
		}
		b.clk.Set(b.dc.Chain.TimeOf(first.Sale.Round).Add(time.Minute))
		rs, err := b.svc.Tick(b.ctx)
		if r := find(rs, b.event); err != nil || r.Skipped != tier1.PhaseCancelled {
			t.Fatalf("tick of a cancelled sale = %+v, %v", rs, err)
		}
		if out, err := b.svc.Draw(b.ctx, b.event); err != nil || out != tier1.DrawCancelled {
			t.Fatalf("Draw of a cancelled sale = %q, %v", out, err)
		}
	})

	t.Run("no ticket is both answered and left out: arrivals racing the close", func(t *testing.T) {
		t.Parallel()
		store := f(t)
		for round := range 3 {
			b := newSaleOn(t, store)
			var mu sync.Mutex
			answered, refused := map[draw.Hash]string{}, map[draw.Hash]string{}
			var started sync.WaitGroup
			started.Add(8)
			var closed atomic.Bool
			var writers sync.WaitGroup
			for w := range 8 {
				writers.Add(1)
				go func() {
					defer writers.Done()
					for i, after := 0, 0; ; i++ {
						if closed.Load() {
							if after++; after > 20 {
								t.Errorf("round %d: writer %d still answered after the close returned", round, w)
								return
							}
						}
						rid := fmt.Sprintf("r%d-w%d-%d", round, w, i)
						h := draw.TicketHash(rid, bytes.Repeat([]byte{byte(w)}, draw.NonceSize))
						_, _, err := b.sales.AddTicket(b.ctx, tier1.NewTicket{EventID: b.event, RequestID: rid, Hash: h, Now: b.clk.Now(), TTL: time.Hour})
						if i == 2 {
							started.Done()
						}
						mu.Lock()
						switch {
						case err == nil:
							answered[h] = rid
						case errors.Is(err, tier1.ErrClosed):
							refused[h] = rid
						default:
							t.Errorf("AddTicket racing the close: %v", err)
						}
						mu.Unlock()
						if err != nil {
							if i < 2 {
								started.Done()
							}
							return
						}
					}
				}()
			}
			// Two closers, once every writer is under way.
			started.Wait()
			var closers sync.WaitGroup
			var firsts atomic.Int64
			for range 2 {
				closers.Add(1)
				go func() {
					defer closers.Done()
					first, err := b.sales.CloseList(b.ctx, b.event, b.clk.Now)
					if err != nil {
						t.Errorf("CloseList: %v", err)
					}
					if first {
						firsts.Add(1)
					}
				}()
			}
			closers.Wait()
			closed.Store(true)
			// The list is read as the closer reads it, at once, while
			// writers are still in flight; then again once they are done:
			// the two agree.
			list := func() map[draw.Hash]bool {
				got := map[draw.Hash]bool{}
				if err := b.sales.EachTicketHash(b.ctx, b.event, func(hs []draw.Hash) error {
					for _, h := range hs {
						got[h] = true
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				return got
			}
			listed := list()
			writers.Wait()
			if again := list(); len(again) != len(listed) {
				t.Errorf("round %d: the closed list read %d tickets during the writes and %d after", round, len(listed), len(again))
			}
			if firsts.Load() != 1 {
				t.Errorf("round %d: %d closers were first, want 1", round, firsts.Load())
			}
			for h, rid := range answered {
				if !listed[h] {
					t.Errorf("round %d: ticket %s was answered to its visitor but is not in the closed list", round, rid)
				}
			}
			for h, rid := range refused {
				if listed[h] {
					t.Errorf("round %d: ticket %s was refused (closed) but is in the list", round, rid)
				}
				if _, err := b.sales.Ticket(b.ctx, b.event, rid); !errors.Is(err, tier1.ErrNotFound) {
					t.Errorf("round %d: refused ticket %s reads back: %v", round, rid, err)
				}
			}
			if len(listed) != len(answered) || len(refused) != 8 {
				t.Errorf("round %d: %d listed, %d answered, %d refused (want every writer refused once)", round, len(listed), len(answered), len(refused))
			}
		}
	})

	t.Run("no ticket is answered under a schedule that then moves: arrivals racing a reschedule", func(t *testing.T) {
		t.Parallel()
		store := f(t)
		for round := range 3 {
			b := newSaleOn(t, store)
			first := b.doc(t)
			type answer struct {
				rid   string
				opens time.Time
				round uint64
			}
			var mu sync.Mutex
			var answers []answer
			var moved atomic.Int64
			var wg sync.WaitGroup
			// The operator moves the sale, again and again, until the store
			// refuses because a ticket exists.
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 1; k <= 8; k++ {
					err := b.sales.PutSchedule(b.ctx, tier1.Schedule{
						EventID: b.event, OpensAt: b.opens.Add(time.Duration(k) * time.Minute), Round: first.ScheduledRound + uint64(20*k),
						ChainHash: b.dc.Chain.Hash, Margin: first.Margin(), Now: b.clk.Now(),
					})
					if errors.Is(err, tier1.ErrTicketed) {
						return
					}
					if err != nil {
						t.Errorf("PutSchedule racing tickets: %v", err)
						return
					}
					moved.Add(1)
				}
			}()
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 5 {
						rid := fmt.Sprintf("r%d-w%d-%d", round, w, i)
						var tk tier1.Ticket
						var err error
						// A store may give up under a schedule that keeps
						// moving (the visitor's retry): the same ticket again.
						for try := 0; try < 5; try++ {
							if tk, _, err = b.sales.AddTicket(b.ctx, tier1.NewTicket{EventID: b.event, RequestID: rid,
								Hash: draw.TicketHash(rid, bytes.Repeat([]byte{byte(w)}, draw.NonceSize)), Now: b.clk.Now(), TTL: time.Hour}); err == nil {
								break
							}
						}
						if err != nil {
							t.Errorf("AddTicket racing a reschedule: %v", err)
							return
						}
						mu.Lock()
						answers = append(answers, answer{rid, tk.OpensAt, tk.Round})
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			final := b.doc(t)
			for _, a := range answers {
				if !a.opens.Equal(final.OpensAt) || a.round != final.ScheduledRound {
					t.Errorf("round %d: ticket %s was answered opening %v, round %d; the sale opens %v, round %d (after %d moves)",
						round, a.rid, a.opens, a.round, final.OpensAt, final.ScheduledRound, moved.Load())
				}
			}
			if len(answers) != 20 {
				t.Errorf("round %d: %d tickets answered, want 20", round, len(answers))
			}
		}
	})

	t.Run("the advancer wakes at the opening to close the list", func(t *testing.T) {
		t.Parallel()
		store := f(t)
		for _, ticks := range []int{2, 1} { // between two ticks, and after an invocation's last one
			clk := clock.NewManual(Epoch)
			_, dc := Beacon(t, clk)
			c := cfg()
			c.Draw = dc
			c.Sleep = func(_ context.Context, d time.Duration) error { clk.Advance(d); return nil }
			svc := tier1.New(store, Keys(t), clk, c)
			ctx, event := context.Background(), testenv.UniqueID(t)
			opens := Epoch.Add(7 * time.Second) // between ticks at 0 s and 10 s
			if _, err := svc.Schedule(ctx, event, opens, time.Time{}); err != nil {
				t.Fatal(err)
			}
			if err := svc.RunAdvancer(ctx, ticks, nil); err != nil {
				t.Fatalf("RunAdvancer: %v", err)
			}
			d, err := svc.DrawDoc(ctx, event)
			if err != nil || d.Status != draw.StatusDrawing || d.ClosedAt == nil || !d.ClosedAt.Equal(opens) || d.RoundMoved != "" {
				t.Fatalf("%d ticks: draw doc = %+v, %v; want the list closed at the opening %v", ticks, d, err, opens)
			}
		}
	})

	t.Run("any request after the opening closes the list", func(t *testing.T) {
		t.Parallel()
		b := newSale(t, f)
		tk := b.ticket(t, 0)
		b.clk.Set(b.opens.Add(300 * time.Millisecond))
		// The ticket holder's poll closes it and learns R at once.
		chk, err := b.svc.Check(b.ctx, b.event, tk.RequestID)
		if err != nil || chk.Phase != tier1.PhaseDrawing || chk.Sale == nil || len(chk.Sale.Root) != 32 {
			t.Fatalf("check after the opening = %+v, %v", chk, err)
		}
		if d := b.doc(t); d.ClosedAt == nil || !d.ClosedAt.Equal(b.clk.Now()) {
			t.Fatalf("closedAt = %v, want %v", d.ClosedAt, b.clk.Now())
		}
		// So does a status or draw-document request on another sale.
		other := newSaleOn(t, b.sales.(tier1.Store))
		other.ticket(t, 0)
		other.clk.Set(other.opens.Add(time.Second))
		if st, err := other.svc.Status(other.ctx, other.event); err != nil || st.Sale.Phase != tier1.SaleDrawing || len(st.Sale.Root) != 32 {
			t.Fatalf("status after the opening = %+v, %v", st, err)
		}
		third := newSaleOn(t, b.sales.(tier1.Store))
		third.clk.Set(third.opens.Add(time.Second))
		if d, err := third.svc.DrawDocDrawing(third.ctx, third.event); err != nil || d.Status != draw.StatusDrawing || d.N == nil || *d.N != 0 {
			t.Fatalf("draw doc after the opening = %+v, %v", d, err)
		}
	})

	t.Run("a late close moves the draw to a later round", func(t *testing.T) {
		t.Parallel()
		b := newSale(t, f)
		var holders []tier1.AssignResult
		for i := range 5 {
			holders = append(holders, b.ticket(t, i))
		}
		d := b.doc(t)
		r0, margin := d.ScheduledRound, d.Margin()
		// Nobody closes the list until 2 s after round r0's time − margin.
		closeAt := d.ScheduledRoundAt.Add(-margin + 2*time.Second)
		b.clk.Set(closeAt)
		if rs, err := b.svc.Tick(b.ctx); err != nil || find(rs, b.event).Skipped != tier1.PhaseDrawing {
			t.Fatalf("late close tick = %+v, %v", rs, err)
		}
		d = b.doc(t)
		want := b.dc.Chain.FirstRoundAtOrAfter(closeAt.Add(margin))
		if d.ClosedAt == nil || !d.ClosedAt.Equal(closeAt) || d.ScheduledRound != r0 || d.Round != want || want <= r0 ||
			d.RoundMoved != draw.MovedLateClose || d.ClosedAt.Add(margin).After(d.RoundAt) {
			t.Fatalf("draw doc after a late close = %+v; want round %d (scheduled %d) moved for the late close", d, want, r0)
		}
		// The ticket holders see the round that draws.
		if chk, err := b.svc.Check(b.ctx, b.event, holders[0].RequestID); err != nil || chk.Sale == nil || chk.Sale.Round != want {
			t.Fatalf("holder's check after the move = %+v, %v", chk, err)
		}
		// Round r0 is out, but the draw waits for the later round.
		b.clk.Set(d.ScheduledRoundAt.Add(time.Second))
		if out, err := b.svc.Draw(b.ctx, b.event); err != nil || out != tier1.DrawWaiting {
			t.Fatalf("Draw at round r0 = %q, %v; want waiting for round %d", out, err, want)
		}
		b.clk.Set(d.RoundAt)
		if out, err := b.svc.Draw(b.ctx, b.event); err != nil || out != tier1.DrawDone {
			t.Fatalf("Draw at the moved round = %q, %v", out, err)
		}
		bundle := Bundle(t, b.svc, b.event)
		if err := draw.Verify(bundle, b.dc.Chain.Hash, b.event); err != nil {
			t.Fatalf("the moved draw does not verify: %v", err)
		}
		if bundle.Draw.Beacon.Round != want {
			t.Fatalf("drawn with round %d, want %d", bundle.Draw.Beacon.Round, want)
		}
		// The same document claiming the scheduled round fails.
		claim := bundle
		claim.Draw.Round, claim.Draw.RoundAt, claim.Draw.RoundMoved = r0, d.ScheduledRoundAt, ""
		if err := claim.Draw.CheckTiming(); err == nil || !strings.Contains(err.Error(), "closedAt + margin must be ≤ roundAt") {
			t.Fatalf("a late close claimed on the scheduled round: %v", err)
		}
	})

	t.Run("grinding a ticket to the front after the round is out fails", func(t *testing.T) {
		t.Parallel()
		b := newSale(t, f)
		for i := range 3 {
			b.ticket(t, i) // honest visitors
		}
		d := b.doc(t)
		r0 := d.ScheduledRound
		// Nobody arrives after the opening and no advancer runs: the list
		// is still open when round r0 is published, and the operator, who
		// can write to the store, reads its randomness...
		b.clk.Set(d.ScheduledRoundAt.Add(time.Second))
		known := b.lb.Round(r0)
		// What R would bind had the list closed in time (the attacker can
		// claim any closedAt: only receipts that saw R early refute it).
		fakeClose := b.opens.Add(time.Second)
		sale := draw.Sale{EventID: b.event, ScheduledAt: d.ScheduledAt, OpensAt: b.opens, Margin: d.Margin(), ScheduledRound: r0, Round: r0, ClosedAt: fakeClose}
		var list []draw.Hash
		if err := b.sales.EachTicketHash(b.ctx, b.event, func(hs []draw.Hash) error { list = append(list, hs...); return nil }); err != nil {
			t.Fatal(err)
		}
		// ...and grinds Sybil tickets offline until one it chose draws
		// first, then writes the chosen ticket and those Sybils. (Each
		// extra ticket gives the chosen one about a 1/n chance, so tries
		// are many and cheap here; only the ones used go to the store.)
		chosen := draw.TicketHash("chosen", bytes.Repeat([]byte{1}, 16))
		list = append(list, chosen)
		sybils := 0
		for i := 1; i <= 20_000 && sybils == 0; i++ {
			list = append(list, draw.TicketHash(fmt.Sprintf("sybil-%05d", i), bytes.Repeat([]byte{1}, 16)))
			sorted := append([]draw.Hash(nil), list...)
			if err := draw.SortHashes(sorted); err != nil {
				t.Fatal(err)
			}
			res := draw.Run(sale, known.Randomness, sorted)
			for k, h := range sorted {
				if h == chosen && res.Positions[k] == 1 {
					sybils = i
				}
			}
		}
		if sybils == 0 {
			t.Fatal("the attack found no ticket order to exploit in 20,000 tries (the test, not vwr, failed)")
		}
		for i := 0; i <= sybils; i++ {
			rid := fmt.Sprintf("sybil-%05d", i)
			if i == 0 {
				rid = "chosen"
			}
			if _, _, err := b.sales.AddTicket(b.ctx, tier1.NewTicket{EventID: b.event, RequestID: rid, Hash: draw.TicketHash(rid, bytes.Repeat([]byte{1}, 16)), Now: b.opens.Add(-time.Second), TTL: time.Hour}); err != nil {
				t.Fatalf("the attacker's AddTicket: %v", err)
			}
		}
		// Then closes and draws through the normal code.
		if rs, err := b.svc.Tick(b.ctx); err != nil || find(rs, b.event).Skipped != tier1.PhaseDrawing {
			t.Fatalf("close = %+v, %v", rs, err)
		}
		d = b.doc(t)
		if d.Round <= r0 || d.RoundMoved != draw.MovedLateClose {
			t.Fatalf("the late close drew with round %d (scheduled %d, moved %q): the ground order stands", d.Round, r0, d.RoundMoved)
		}
		b.clk.Set(d.RoundAt)
		if out, err := b.svc.Draw(b.ctx, b.event); err != nil || out != tier1.DrawDone {
			t.Fatalf("Draw = %q, %v", out, err)
		}
		bundle := Bundle(t, b.svc, b.event)
		if err := draw.Verify(bundle, b.dc.Chain.Hash, b.event); err != nil {
			t.Fatalf("the honest draw does not verify: %v", err)
		}
		// The ground order, published as if the list had closed in time,
		// fails verification: its close came after round r0's time − margin.
		forged := bundle
		forged.Draw.Round, forged.Draw.RoundAt, forged.Draw.RoundMoved, forged.Draw.Beacon = r0, d.ScheduledRoundAt, "", &known
		res := draw.Run(sale, known.Randomness, toHashes(forged.Tickets))
		forged.Draw.Root, forged.Positions = res.Root[:], res.Positions
		if err := draw.Verify(forged, b.dc.Chain.Hash, b.event); err == nil || !strings.Contains(err.Error(), "closedAt") {
			t.Fatalf("the ground order with the true closedAt: %v, want a closedAt + margin failure", err)
		}
		// With a forged closedAt the document alone verifies, but it was
		// published after round r0: no receipt can show R before roundAt.
		forged.Draw.ClosedAt = &fakeClose
		if err := draw.Verify(forged, b.dc.Chain.Hash, b.event); err != nil {
			t.Fatalf("the forged document should verify on its own (this is what receipts are for): %v", err)
		}
		seen := b.clk.Now() // the earliest any page could have seen the forged R
		rc := draw.Receipt{
			Receipt: draw.ReceiptVersion, Rule: draw.Rule, EventID: b.event, RequestID: "chosen", ClientNonce: bytes.Repeat([]byte{1}, 16),
			H: chosen[:], OpensAt: b.opens, Round: r0, RoundAt: d.ScheduledRoundAt, ChainHash: b.dc.Chain.Hash,
			Root: forged.Draw.Root, RootSeenAt: &seen,
		}
		if chk, err := draw.CheckReceipt(forged, rc); err != nil || chk.ProvesClose || chk.Position != 1 {
			t.Fatalf("a receipt of the forged draw = %+v, %v; want position 1 but no proof of the close", chk, err)
		}
	})
}

func toHashes(hs []draw.Hex) []draw.Hash {
	out := make([]draw.Hash, len(hs))
	for i, h := range hs {
		out[i] = draw.Hash(h)
	}
	return out
}
