package draw_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/draw/localbeacon"
)

// receiptSale is a drawn sale of n tickets whose request ids and nonces are
// known, so that receipts can be written for them, and a way to republish
// it from another list with the genuine beacon: what an operator who can
// write to the store does once the randomness is out.
type receiptSale struct {
	beacon  draw.Beacon
	chain   draw.ChainInfo
	sale    draw.Sale
	opens   time.Time
	rids    []string
	nonces  [][]byte
	receipt func(i int, b draw.Bundle) draw.Receipt
}

func newReceiptSale(t *testing.T, n int) *receiptSale {
	t.Helper()
	opens := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	lb, err := localbeacon.New(clock.NewManual(opens.Add(time.Hour)), bytes.Repeat([]byte{9}, 32), opens.Add(-time.Hour), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	chain := lb.Info()
	round := chain.FirstRoundAtOrAfter(opens.Add(15 * time.Second))
	s := &receiptSale{
		beacon: lb.Round(round), chain: chain, opens: opens,
		sale: draw.Sale{EventID: "e", ScheduledAt: opens.Add(-time.Hour), OpensAt: opens, Margin: 10 * time.Second,
			ScheduledRound: round, Round: round, ClosedAt: opens.Add(300 * time.Millisecond)},
	}
	for i := range n {
		s.rids = append(s.rids, fmt.Sprintf("rid-%d", i))
		s.nonces = append(s.nonces, bytes.Repeat([]byte{byte(i + 1)}, draw.NonceSize))
	}
	s.receipt = func(i int, b draw.Bundle) draw.Receipt {
		h := draw.TicketHash(s.rids[i], s.nonces[i])
		seen := s.chain.TimeOf(round).Add(-5 * time.Second)
		rc := draw.Receipt{
			Receipt: draw.ReceiptVersion, Rule: draw.Rule, EventID: "e", RequestID: s.rids[i], ClientNonce: s.nonces[i],
			H: h[:], OpensAt: opens, Round: round, RoundAt: chain.TimeOf(round), ChainHash: chain.Hash,
			Root: b.Draw.Root, RootSeenAt: &seen,
		}
		return rc
	}
	return s
}

// publish draws hs with the genuine beacon and returns the bundle a
// verifier downloads; Verify accepts it on its own.
func (s *receiptSale) publish(t *testing.T, hs []draw.Hash) draw.Bundle {
	t.Helper()
	sorted := append([]draw.Hash(nil), hs...)
	if err := draw.SortHashes(sorted); err != nil {
		t.Fatal(err)
	}
	res := draw.Run(s.sale, s.beacon.Randomness, sorted)
	n := int64(len(sorted))
	l := draw.LayoutFor(len(sorted))
	closed, round := s.sale.ClosedAt, s.sale.Round
	b := draw.Bundle{Draw: draw.Doc{
		Rule: draw.Rule, EventID: "e", Status: draw.StatusDrawn, ScheduledAt: s.sale.ScheduledAt, OpensAt: s.opens,
		MarginMs: s.sale.Margin.Milliseconds(), Chain: s.chain, ScheduledRound: round, ScheduledRoundAt: s.chain.TimeOf(round),
		Round: round, RoundAt: s.chain.TimeOf(round), ClosedAt: &closed,
		MerkleRoot: res.MerkleRoot[:], Root: res.Root[:], N: &n, Beacon: &s.beacon, ChunkSize: l.ChunkSize, Chunks: l.Chunks(),
	}, Positions: res.Positions}
	for _, h := range res.Sorted {
		b.Tickets = append(b.Tickets, append(draw.Hex(nil), h[:]...))
	}
	if err := draw.Verify(b, s.chain.Hash, "e"); err != nil {
		t.Fatalf("the published bundle does not verify on its own: %v", err)
	}
	return b
}

func (s *receiptSale) hashes() []draw.Hash {
	var hs []draw.Hash
	for i := range s.rids {
		hs = append(hs, draw.TicketHash(s.rids[i], s.nonces[i]))
	}
	return hs
}

// TestReceiptsCatchARepublishedDraw: the operator republishes the sale with
// the genuine beacon after the randomness is out — a visitor's ticket
// swapped for another, a ticket dropped, a ticket added — so the document
// verifies on its own (Verify). A receipt of a visitor who saw R before
// the round refuses each of them, and so does a receipt that never saw R
// when its own ticket is gone. A receipt for another schedule, event or
// request id is refused too; R seen exactly at the round's time proves
// nothing.
func TestReceiptsCatchARepublishedDraw(t *testing.T) {
	t.Parallel()
	s := newReceiptSale(t, 7)
	honest := s.publish(t, s.hashes())
	mine := 3
	rc := s.receipt(mine, honest)
	chk, err := draw.CheckReceipt(honest, rc)
	if err != nil || !chk.ProvesClose || chk.Position == 0 {
		t.Fatalf("honest receipt: %+v, %v", chk, err)
	}
	rc.Position = chk.Position

	swapped := s.hashes()
	swapped[mine] = draw.TicketHash("friend", bytes.Repeat([]byte{0xf0}, draw.NonceSize))
	dropped := append(append([]draw.Hash(nil), s.hashes()[:mine]...), s.hashes()[mine+1:]...)
	added := append(s.hashes(), draw.TicketHash("late", bytes.Repeat([]byte{0xad}, draw.NonceSize)))
	for name, hs := range map[string][]draw.Hash{"swapped": swapped, "dropped": dropped, "added": added} {
		forged := s.publish(t, hs)
		if _, err := draw.CheckReceipt(forged, rc); !errors.Is(err, draw.ErrMismatch) {
			t.Errorf("%s ticket, republished with the genuine beacon: the receipt that saw R before the round gave %v, want a mismatch", name, err)
		}
		// A receipt kept until the drawing phase holds R but no place yet:
		// R alone must catch the change.
		pre := rc
		pre.Position = 0
		if _, err := draw.CheckReceipt(forged, pre); !errors.Is(err, draw.ErrMismatch) {
			t.Errorf("%s ticket: the receipt with R and no place yet gave %v, want a mismatch", name, err)
		}
		if name == "added" {
			continue // the visitor's ticket is still there; only R can tell
		}
		noR := rc
		noR.Root, noR.RootSeenAt, noR.Position = nil, nil, 0
		if _, err := draw.CheckReceipt(forged, noR); !errors.Is(err, draw.ErrMismatch) {
			t.Errorf("%s ticket: a receipt without R gave %v, want a mismatch (its ticket is not in the list)", name, err)
		}
	}

	// The receipt must be for this sale as announced, and for its holder.
	later := rc
	later.Round, later.RoundAt = rc.Round+20, s.chain.TimeOf(rc.Round+20)
	otherEvent := rc
	otherEvent.EventID = "f"
	otherOpening := rc
	otherOpening.OpensAt = rc.OpensAt.Add(time.Minute)
	claimed := rc
	claimed.RequestID = s.rids[mine+1] // someone else's ticket, without their nonce
	for name, bad := range map[string]draw.Receipt{"announced another round": later, "another event": otherEvent, "another opening": otherOpening, "another holder's request id": claimed} {
		if _, err := draw.CheckReceipt(honest, bad); !errors.Is(err, draw.ErrMismatch) {
			t.Errorf("receipt with %s: %v, want a mismatch", name, err)
		}
	}

	// R seen at the round's time proves nothing; a millisecond before does.
	at := honest.Draw.RoundAt
	edge := rc
	edge.RootSeenAt = &at
	if chk, err := draw.CheckReceipt(honest, edge); err != nil || chk.ProvesClose || chk.Unproven == "" {
		t.Errorf("R seen at roundAt: %+v, %v; want unproven", chk, err)
	}
	before := at.Add(-time.Millisecond)
	edge.RootSeenAt = &before
	if chk, err := draw.CheckReceipt(honest, edge); err != nil || !chk.ProvesClose {
		t.Errorf("R seen 1 ms before roundAt: %+v, %v; want the close proven", chk, err)
	}
}
