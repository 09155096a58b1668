package draw_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/draw/localbeacon"
)

func bundle(t testing.TB, n int) (draw.Bundle, *localbeacon.Beacon) {
	t.Helper()
	opens := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clk := clock.NewManual(opens.Add(time.Minute))
	b, err := localbeacon.New(clk, bytes.Repeat([]byte{7}, 32), opens.Add(-time.Hour), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	chain := b.Info()
	round := chain.FirstRoundAtOrAfter(opens.Add(15 * time.Second))
	beacon := b.Round(round)
	hs := randomHashes(t, n)
	closed := opens.Add(1234 * time.Millisecond)
	sale := draw.Sale{EventID: "e", ScheduledAt: opens.Add(-time.Hour), OpensAt: opens, Margin: 10 * time.Second,
		ScheduledRound: round, Round: round, ClosedAt: closed}
	res := draw.Run(sale, beacon.Randomness, hs)
	nn := int64(n)
	l := draw.LayoutFor(n)
	doc := draw.Doc{
		Rule: draw.Rule, EventID: "e", Status: draw.StatusDrawn, ScheduledAt: opens.Add(-time.Hour), OpensAt: opens,
		MarginMs: 10000, Chain: chain, ScheduledRound: round, ScheduledRoundAt: chain.TimeOf(round),
		Round: round, RoundAt: chain.TimeOf(round), ClosedAt: &closed,
		MerkleRoot: res.MerkleRoot[:], Root: res.Root[:], N: &nn, Beacon: &beacon,
		ChunkSize: l.ChunkSize, Chunks: l.Chunks(),
	}
	out := draw.Bundle{Draw: doc, Positions: res.Positions}
	for _, h := range res.Sorted {
		out.Tickets = append(out.Tickets, append(draw.Hex(nil), h[:]...))
	}
	return out, b
}

func TestVerifyBundleAndEveryFlippedByte(t *testing.T) {
	t.Parallel()
	b, _ := bundle(t, 9)
	if err := draw.Verify(b, b.Draw.Chain.Hash, "e"); err != nil {
		t.Fatalf("honest bundle: %v", err)
	}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		flipped := bytes.Clone(raw)
		flipped[i] ^= 1
		var fb draw.Bundle
		if err := draw.DecodeBundle(bytes.NewReader(flipped), &fb); err != nil {
			continue // does not even decode: rejected
		}
		if err := draw.Verify(fb, b.Draw.Chain.Hash, "e"); err == nil {
			t.Fatalf("byte %d (%q→%q) flipped and the bundle still verifies", i, raw[i], flipped[i])
		}
	}
}

func TestVerifyRejectsAnotherChain(t *testing.T) {
	t.Parallel()
	b, _ := bundle(t, 3)
	other := sha256.Sum256([]byte("other"))
	if err := draw.Verify(b, other[:], ""); err == nil {
		t.Fatal("verified against another chain hash")
	}
}

// BenchmarkDraw1M draws a million tickets: sort, root, a million HMACs,
// the order and the stored chunks. The figures in docs/draw.md come from it.
func BenchmarkDraw1M(b *testing.B) {
	const n = 1_000_000
	hs := make([]draw.Hash, n)
	for i := range hs {
		s := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		hs[i] = s
	}
	rnd := sha256.Sum256([]byte("beacon"))
	b.ReportAllocs()
	for b.Loop() {
		list := append([]draw.Hash(nil), hs...)
		if err := draw.SortHashes(list); err != nil {
			b.Fatal(err)
		}
		res := draw.Run(draw.Sale{EventID: "bench"}, rnd[:], list)
		if blobs := res.Encode(); len(blobs) != 1+draw.LayoutFor(n).Chunks() {
			b.Fatal(len(blobs))
		}
	}
}
