package draw_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/draw"
)

var update = flag.Bool("update", false, "rewrite testdata/kat.json")

// kat is the known-answer vector shared with static/vwr/draw.js
// (e2e/unit.test.js checks the page's code against the same file).
type kat struct {
	Rule    string         `json:"rule"`
	Chain   draw.ChainInfo `json:"chain"`
	Beacon  draw.Beacon    `json:"beacon"`
	Tickets []struct {
		RequestID   string   `json:"requestId"`
		ClientNonce draw.Hex `json:"clientNonce"`
		H           draw.Hex `json:"h"`
	} `json:"tickets"`
	Sorted []draw.Hex `json:"sorted"`
	Sale   struct {
		EventID        string    `json:"eventId"`
		ScheduledAt    time.Time `json:"scheduledAt"`
		OpensAt        time.Time `json:"opensAt"`
		MarginMs       int64     `json:"marginMs"`
		ScheduledRound uint64    `json:"scheduledRound"`
		Round          uint64    `json:"round"`
		ClosedAt       time.Time `json:"closedAt"`
	} `json:"sale"`
	MerkleRoot draw.Hex     `json:"merkleRoot"`
	Root       draw.Hex     `json:"root"`
	OrderKeys  []draw.Hex   `json:"orderKeys"`
	Positions  []uint32     `json:"positions"`
	Proofs     [][]draw.Hex `json:"proofs"`
}

func (k kat) sale() draw.Sale {
	return draw.Sale{
		EventID: k.Sale.EventID, ScheduledAt: k.Sale.ScheduledAt, OpensAt: k.Sale.OpensAt,
		Margin: time.Duration(k.Sale.MarginMs) * time.Millisecond, ScheduledRound: k.Sale.ScheduledRound,
		Round: k.Sale.Round, ClosedAt: k.Sale.ClosedAt,
	}
}

func toHashes(hs []draw.Hex) []draw.Hash {
	out := make([]draw.Hash, len(hs))
	for i, h := range hs {
		copy(out[i][:], h)
	}
	return out
}

// TestKnownAnswer recomputes every value of testdata/kat.json: seven tickets
// (an odd count, so the carried-up node is exercised at two levels) drawn
// with real quicknet round 1000.
func TestKnownAnswer(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/kat.json")
	if err != nil {
		t.Fatal(err)
	}
	var k kat
	if err := json.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	if k.Rule != draw.Rule {
		t.Fatalf("rule %q", k.Rule)
	}
	if err := k.Chain.Check(); err != nil {
		t.Fatal(err)
	}
	if err := k.Chain.Verify(k.Beacon); err != nil {
		t.Fatal(err)
	}
	var hs []draw.Hash
	for i, tk := range k.Tickets {
		h := draw.TicketHash(tk.RequestID, tk.ClientNonce)
		if !bytes.Equal(h[:], tk.H) {
			t.Errorf("ticket %d: h = %x, vector %x", i, h, []byte(tk.H))
		}
		hs = append(hs, h)
	}
	if err := draw.SortHashes(hs); err != nil {
		t.Fatal(err)
	}
	if want := toHashes(k.Sorted); fmt.Sprint(hs) != fmt.Sprint(want) {
		t.Errorf("sorted list differs from the vector")
	}
	res := draw.Run(k.sale(), k.Beacon.Randomness, hs)
	if !bytes.Equal(res.MerkleRoot[:], k.MerkleRoot) {
		t.Errorf("Merkle root = %x, vector %x", res.MerkleRoot, []byte(k.MerkleRoot))
	}
	if !bytes.Equal(res.Root[:], k.Root) {
		t.Errorf("root = %x, vector %x", res.Root, []byte(k.Root))
	}
	if fmt.Sprint(res.Positions) != fmt.Sprint(k.Positions) {
		t.Errorf("positions = %v, vector %v", res.Positions, k.Positions)
	}
	for i, h := range hs {
		ok := draw.OrderKey(k.Beacon.Randomness, res.Root, h)
		if !bytes.Equal(ok[:], k.OrderKeys[i]) {
			t.Errorf("order key %d = %x, vector %x", i, ok, []byte(k.OrderKeys[i]))
		}
		p, err := draw.ProveIndex(hs, i)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(p.Siblings) != fmt.Sprint(toHashes(k.Proofs[i])) {
			t.Errorf("proof %d differs from the vector", i)
		}
	}
}

// TestWriteKnownAnswer rewrites the vector with -update; without it, it
// checks that the file is what the generator writes.
func TestWriteKnownAnswer(t *testing.T) {
	t.Parallel()
	chain, err := draw.ParseChainInfo([]byte(draw.QuicknetInfo))
	if err != nil {
		t.Fatal(err)
	}
	k := kat{Rule: draw.Rule, Chain: chain, Beacon: quicknet1000}
	// Round 1000 is the first at least 15 s (close grace 5 s + margin 10 s)
	// after the opening, and the list closed 250 ms after it.
	k.Sale.EventID = "kat-sale"
	k.Sale.OpensAt = chain.TimeOf(1000).Add(-15 * time.Second)
	k.Sale.ScheduledAt = k.Sale.OpensAt.Add(-time.Hour - 123*time.Millisecond)
	k.Sale.MarginMs = 10_000
	k.Sale.ScheduledRound, k.Sale.Round = 1000, 1000
	k.Sale.ClosedAt = k.Sale.OpensAt.Add(250 * time.Millisecond)
	var hs []draw.Hash
	for i := range 7 {
		rid := fmt.Sprintf("kat-request-%010d", i) // 22 characters, like a real requestId
		nonce := sha256.Sum256([]byte(fmt.Sprintf("kat nonce %d", i)))
		h := draw.TicketHash(rid, nonce[:16])
		k.Tickets = append(k.Tickets, struct {
			RequestID   string   `json:"requestId"`
			ClientNonce draw.Hex `json:"clientNonce"`
			H           draw.Hex `json:"h"`
		}{rid, nonce[:16], h[:]})
		hs = append(hs, h)
	}
	if err := draw.SortHashes(hs); err != nil {
		t.Fatal(err)
	}
	res := draw.Run(k.sale(), k.Beacon.Randomness, hs)
	if r := chain.FirstRoundAtOrAfter(k.Sale.OpensAt.Add(15 * time.Second)); r != k.Beacon.Round {
		t.Fatalf("vector round %d, first at opensAt+15s or later is %d", k.Beacon.Round, r)
	}
	k.MerkleRoot, k.Root, k.Positions = res.MerkleRoot[:], res.Root[:], res.Positions
	for i, h := range hs {
		k.Sorted = append(k.Sorted, append(draw.Hex(nil), h[:]...))
		ok := draw.OrderKey(k.Beacon.Randomness, res.Root, h)
		k.OrderKeys = append(k.OrderKeys, ok[:])
		p, _ := draw.ProveIndex(hs, i)
		var sib []draw.Hex
		for _, s := range p.Siblings {
			sib = append(sib, append(draw.Hex(nil), s[:]...))
		}
		k.Proofs = append(k.Proofs, sib)
	}
	out, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	if *update {
		if err := os.WriteFile("testdata/kat.json", out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if cur, err := os.ReadFile("testdata/kat.json"); err != nil || !bytes.Equal(cur, out) {
		t.Fatalf("testdata/kat.json is not the generator's output (run go test ./internal/draw -run TestWriteKnownAnswer -update): %v", err)
	}
}

func randomHashes(t testing.TB, n int) []draw.Hash {
	t.Helper()
	hs := make([]draw.Hash, n)
	for i := range hs {
		_, _ = rand.Read(hs[i][:])
	}
	if err := draw.SortHashes(hs); err != nil {
		t.Fatal(err)
	}
	return hs
}

func TestProofsForEverySize(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 33; n++ {
		hs := randomHashes(t, n)
		root := draw.Root(hs)
		for i := range hs {
			p, err := draw.ProveIndex(hs, i)
			if err != nil {
				t.Fatal(err)
			}
			got, err := draw.RootFromProof(hs[i], p)
			if err != nil || got != root {
				t.Fatalf("n=%d i=%d: proof reaches %x (%v), root %x", n, i, got, err, root)
			}
			other := hs[(i+1)%n]
			if got, _ := draw.RootFromProof(other, p); n > 1 && got == root {
				t.Fatalf("n=%d i=%d: the proof also proves another ticket", n, i)
			}
		}
	}
}

func TestRootCommitsToTheWholeList(t *testing.T) {
	t.Parallel()
	hs := randomHashes(t, 5)
	root := draw.Root(hs)
	if draw.Root(hs[:4]) == root {
		t.Error("dropping the last ticket keeps the root")
	}
	// Duplicating the last node (Bitcoin's rule) would give 6 leaves the
	// same root as 5; carrying it up does not.
	dup := append(append([]draw.Hash(nil), hs...), hs[4])
	if draw.Root(dup) == root {
		t.Error("duplicating the last ticket keeps the root")
	}
	if draw.Root(nil) != draw.EmptyRoot {
		t.Error("empty root")
	}
	if err := draw.CheckSorted(dup); !errors.Is(err, draw.ErrMismatch) {
		t.Errorf("CheckSorted accepted a duplicate: %v", err)
	}
}

func TestPositionsArePermutation(t *testing.T) {
	t.Parallel()
	hs := randomHashes(t, 1000)
	rnd := sha256.Sum256([]byte("r"))
	pos := draw.Positions(rnd[:], draw.Root(hs), hs)
	seen := make([]bool, len(hs)+1)
	for _, p := range pos {
		if p < 1 || int(p) > len(hs) || seen[p] {
			t.Fatalf("position %d out of range or repeated", p)
		}
		seen[p] = true
	}
	other := sha256.Sum256([]byte("s"))
	if fmt.Sprint(draw.Positions(other[:], draw.Root(hs), hs)) == fmt.Sprint(pos) {
		t.Error("another randomness gave the same order")
	}
}

func TestLocateMatchesFullProof(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 1023, 1024, 1025, 3000} {
		hs := randomHashes(t, n)
		rnd := sha256.Sum256([]byte("r"))
		res := draw.Run(draw.Sale{EventID: "e"}, rnd[:], hs)
		blobs := res.Encode()
		l := draw.LayoutFor(n)
		if len(blobs) != 1+l.Chunks() {
			t.Fatalf("n=%d: %d blobs", n, len(blobs))
		}
		for _, i := range []int{0, n / 2, n - 1} {
			j, err := draw.ChunkOf(blobs[0], hs[i])
			if err != nil {
				t.Fatal(err)
			}
			place, ok, err := draw.Locate(n, blobs[0], blobs[1+j], j, hs[i])
			if err != nil || !ok {
				t.Fatalf("n=%d i=%d: Locate %v %v", n, i, ok, err)
			}
			full, _ := draw.ProveIndex(hs, i)
			if place.Position != res.Positions[i] || place.Proof.Index != i || fmt.Sprint(place.Proof.Siblings) != fmt.Sprint(full.Siblings) {
				t.Fatalf("n=%d i=%d: Locate %+v, want position %d and the full proof", n, i, place, res.Positions[i])
			}
		}
		var absent draw.Hash
		absent[0] = 0xff
		j, _ := draw.ChunkOf(blobs[0], absent)
		if _, ok, _ := draw.Locate(n, blobs[0], blobs[1+j], j, absent); ok {
			t.Fatal("found a ticket that is not in the list")
		}
	}
}

func TestLayout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ n, size, chunks int }{
		{0, 1024, 0}, {1, 1024, 1}, {1024, 1024, 1}, {1025, 1024, 2},
		{1_000_000, 1024, 977}, {5_000_000, 2048, 2442}, {20_000_000, 8192, 2442},
	} {
		l := draw.LayoutFor(tt.n)
		if l.ChunkSize != tt.size || l.Chunks() != tt.chunks {
			t.Errorf("LayoutFor(%d) = %d×%d, want %d×%d", tt.n, l.Chunks(), l.ChunkSize, tt.chunks, tt.size)
		}
	}
}

func TestTicketHashIsSHA256OfConcatenation(t *testing.T) {
	t.Parallel()
	nonce := bytes.Repeat([]byte{0xab}, 16)
	h := draw.TicketHash("abc", nonce)
	want := sha256.Sum256(append([]byte("abc"), nonce...))
	if h != want {
		t.Fatalf("h = %x", h)
	}
	if hex.EncodeToString(h[:]) == "" {
		t.Fatal("empty")
	}
}

// TestListStreamsWhatTheSliceFunctionsCompute: the bounded-memory List,
// its streamed Merkle root, Order and EncodeChunks give exactly what Root,
// the plain sort by key and Encode give, for sizes around the carried-up
// nodes and chunk edges, with the hashes added in any order and some
// twice (as a store's listing may).
func TestListStreamsWhatTheSliceFunctionsCompute(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 3, 7, 255, 1024, 1025, 3000} {
		hs := randomHashes(t, n)
		l := draw.NewList(n / 2)
		for i := len(hs) - 1; i >= 0; i-- {
			l.Add(hs[i])
			if i%5 == 0 {
				l.Add(hs[i])
			}
		}
		l.Seal()
		if l.Len() != n {
			t.Fatalf("n=%d: List has %d", n, l.Len())
		}
		for i := range hs {
			if l.At(i) != hs[i] {
				t.Fatalf("n=%d: At(%d) differs from the sorted list", n, i)
			}
		}
		root := draw.RootOfList(l)
		if p, err := draw.ProveIndex(hs, 0); n > 0 && (err != nil || mustRoot(t, hs[0], p) != root) {
			t.Fatalf("n=%d: streamed root %x is not the level-by-level one", n, root)
		}
		rnd := sha256.Sum256([]byte("r"))
		got := draw.Order(rnd[:], root, l)
		// The plain definition: sort by the whole key, then by index.
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		keys := make([]draw.Hash, n)
		for i, h := range hs {
			keys[i] = draw.OrderKey(rnd[:], root, h)
		}
		sort.SliceStable(idx, func(a, b int) bool { return bytes.Compare(keys[idx[a]][:], keys[idx[b]][:]) < 0 })
		for rank, i := range idx {
			if got[i] != uint32(rank+1) {
				t.Fatalf("n=%d: ticket %d at %d, the plain order says %d", n, i, got[i], rank+1)
			}
		}
		var streamed [][]byte
		if err := draw.EncodeChunks(l, got, func(i int, b []byte) error {
			for len(streamed) <= i {
				streamed = append(streamed, nil)
			}
			streamed[i] = b
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// Built by hand from the documented layout: chunk j is its tickets'
		// hashes and positions, the index each chunk's first hash and root.
		lay := draw.LayoutFor(n)
		want := [][]byte{nil}
		for j := range lay.Chunks() {
			lo, hi := j*lay.ChunkSize, min((j+1)*lay.ChunkSize, n)
			var chunk []byte
			for i := lo; i < hi; i++ {
				chunk = append(chunk, hs[i][:]...)
				chunk = binary.BigEndian.AppendUint32(chunk, got[i])
			}
			sub := draw.Root(hs[lo:hi])
			want[0] = append(append(want[0], hs[lo][:]...), sub[:]...)
			want = append(want, chunk)
		}
		if fmt.Sprint(streamed) != fmt.Sprint(want) {
			t.Fatalf("n=%d: streamed chunks differ from the documented layout", n)
		}
	}
}

func mustRoot(t *testing.T, h draw.Hash, p draw.Proof) draw.Hash {
	t.Helper()
	r, err := draw.RootFromProof(h, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
