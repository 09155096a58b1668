package draw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Status of a scheduled sale's draw.
const (
	StatusPrequeue  = "prequeue"  // the list is open
	StatusDrawing   = "drawing"   // the list is closed; waiting for the beacon round
	StatusDrawn     = "drawn"     // positions are out, and nothing here changes again
	StatusCancelled = "cancelled" // the operator cancelled the sale; it is never drawn
)

// MovedLateClose is Doc.RoundMoved when the list closed later than the
// scheduled round's time minus the margin: the draw then uses the first
// round at least the margin after the actual close.
const MovedLateClose = "late-close"

// MinMargin is the least margin a sale may be scheduled with (and a
// verifier accepts): the list must close at least this long before the
// beacon round it is drawn with is published.
const MinMargin = time.Second

// Doc is the public draw document (GET /vwr-api/vwr/draw/{eventId}). Root
// and N appear when the list closes, Beacon and the chunk layout once drawn.
type Doc struct {
	Rule        string    `json:"rule"`
	EventID     string    `json:"eventId"`
	Status      string    `json:"status"`
	ScheduledAt time.Time `json:"scheduledAt"`
	OpensAt     time.Time `json:"opensAt"`
	// MarginMs is the least time, in milliseconds, between the list's close
	// and the publication of the round that draws it.
	MarginMs int64     `json:"marginMs"`
	Chain    ChainInfo `json:"chain"`
	// ScheduledRound is the round fixed when the sale was scheduled; Round
	// is the round that draws it: the same, unless the list closed late
	// (RoundMoved says why, and Round is then the first round at least the
	// margin after ClosedAt).
	ScheduledRound   uint64    `json:"scheduledRound"`
	ScheduledRoundAt time.Time `json:"scheduledRoundAt"`
	Round            uint64    `json:"round"`
	RoundAt          time.Time `json:"roundAt"`
	RoundMoved       string    `json:"roundMoved,omitempty"`
	// ClosedAt is when the list stopped taking tickets (the store's clock,
	// milliseconds); CancelledAt when the operator cancelled the sale.
	ClosedAt    *time.Time `json:"closedAt,omitempty"`
	CancelledAt *time.Time `json:"cancelledAt,omitempty"`
	// MerkleRoot is the root of the sorted ticket list, Root the sale's
	// commitment R over it (see Commit); both appear when the list closes.
	MerkleRoot Hex     `json:"merkleRoot,omitempty"`
	Root       Hex     `json:"root,omitempty"`
	N          *int64  `json:"n,omitempty"`
	Beacon     *Beacon `json:"beacon,omitempty"`
	ChunkSize  int     `json:"chunkSize,omitempty"`
	Chunks     int     `json:"chunks,omitempty"`
}

// Margin is MarginMs as a duration.
func (d Doc) Margin() time.Duration { return time.Duration(d.MarginMs) * time.Millisecond }

// CheckTiming verifies the document's times against its chain: the
// scheduled round comes at least the margin after the opening, the list
// closed at least the margin before the round that draws it, and that round
// is the scheduled one unless the close came too late for it, in which case
// it is the first round at least the margin after the close. Nobody, the
// operator included, can then have known the randomness while the list
// could change, as far as ClosedAt is true; receipts that saw R before
// RoundAt (CheckReceipt) are the evidence that it is.
func (d Doc) CheckTiming() error {
	margin := d.Margin()
	c := d.Chain
	switch {
	case margin < MinMargin:
		return fmt.Errorf("%w: margin %v is below the %v minimum", ErrMismatch, margin, MinMargin)
	case !c.TimeOf(d.ScheduledRound).Equal(d.ScheduledRoundAt):
		return fmt.Errorf("%w: scheduled round %d is published at %v, not at scheduledRoundAt %v", ErrMismatch, d.ScheduledRound, c.TimeOf(d.ScheduledRound), d.ScheduledRoundAt)
	case !c.TimeOf(d.Round).Equal(d.RoundAt):
		return fmt.Errorf("%w: round %d is published at %v, not at roundAt %v", ErrMismatch, d.Round, c.TimeOf(d.Round), d.RoundAt)
	case d.ScheduledRoundAt.Before(d.OpensAt.Add(margin)):
		return fmt.Errorf("%w: scheduled round %d (%v) comes less than the margin %v after the opening %v", ErrMismatch, d.ScheduledRound, d.ScheduledRoundAt, margin, d.OpensAt)
	case d.ClosedAt == nil:
		return fmt.Errorf("%w: the document has no closedAt", ErrMismatch)
	}
	closeBy := d.ClosedAt.Add(margin)
	if d.Round == d.ScheduledRound {
		if d.RoundMoved != "" {
			return fmt.Errorf("%w: roundMoved %q, but the round is the scheduled one", ErrMismatch, d.RoundMoved)
		}
		if closeBy.After(d.RoundAt) {
			return fmt.Errorf("%w: the list closed at %v, less than the margin %v before round %d at %v (closedAt + margin must be ≤ roundAt)", ErrMismatch, d.ClosedAt, margin, d.Round, d.RoundAt)
		}
		return nil
	}
	if d.RoundMoved != MovedLateClose {
		return fmt.Errorf("%w: round %d is not the scheduled round %d, and roundMoved is %q", ErrMismatch, d.Round, d.ScheduledRound, d.RoundMoved)
	}
	if !closeBy.After(d.ScheduledRoundAt) {
		return fmt.Errorf("%w: the round moved for a late close, but closedAt %v + margin is not after the scheduled round's time %v", ErrMismatch, d.ClosedAt, d.ScheduledRoundAt)
	}
	if want := c.FirstRoundAtOrAfter(closeBy); d.Round != want {
		return fmt.Errorf("%w: after a close at %v the draw must use round %d (the first at least the margin later), not %d", ErrMismatch, d.ClosedAt, want, d.Round)
	}
	return nil
}

// Layout splits the sorted list of N tickets into chunks of ChunkSize
// consecutive leaves. ChunkSize is a power of two, so every chunk is one
// subtree of the Merkle tree and a proof is an in-chunk proof plus a proof
// over the chunk roots.
type Layout struct {
	N         int
	ChunkSize int
}

// Chunk sizes: at least minChunk leaves (36 bytes each: ~37 KB), and never
// more than maxChunks chunks (the index, 64 bytes a chunk, stays ≤ 256 KB,
// under DynamoDB's 400 KB item limit).
const (
	minChunk  = 1024
	maxChunks = 4096
)

// LayoutFor is the layout of an n-ticket draw.
func LayoutFor(n int) Layout {
	s := minChunk
	for (n+s-1)/s > maxChunks {
		s *= 2
	}
	return Layout{N: n, ChunkSize: s}
}

// Chunks is the number of chunks.
func (l Layout) Chunks() int { return (l.N + l.ChunkSize - 1) / l.ChunkSize }

const entrySize = 32 + 4 // ticket hash, position (uint32 BE)

// Sale is what the commitment R binds besides the list: the event, when it
// was scheduled (milliseconds), its opening (whole seconds), the round
// fixed at scheduling and the round that draws it, the margin and the
// actual close (milliseconds).
type Sale struct {
	EventID        string
	ScheduledAt    time.Time
	OpensAt        time.Time
	Margin         time.Duration
	ScheduledRound uint64
	Round          uint64
	ClosedAt       time.Time
}

// SaleOf is the Sale a draw document states.
func SaleOf(d Doc) Sale {
	s := Sale{EventID: d.EventID, ScheduledAt: d.ScheduledAt, OpensAt: d.OpensAt, Margin: d.Margin(),
		ScheduledRound: d.ScheduledRound, Round: d.Round}
	if d.ClosedAt != nil {
		s.ClosedAt = *d.ClosedAt
	}
	return s
}

// Commit is the sale's commitment R = SHA-256(0x02 ‖ rule ‖ 0x00 ‖ eventId ‖
// 0x00 ‖ scheduledAt unix ms (int64 BE) ‖ opensAt unix s (int64 BE) ‖
// margin ms (int64 BE) ‖ scheduledRound (uint64 BE) ‖ round (uint64 BE) ‖
// closedAt unix ms (int64 BE) ‖ n (uint64 BE) ‖ Merkle root). It is
// published when the list closes, before the round exists, and keys the
// order; every field of the draw document is bound to it or checked
// against the chain.
func Commit(s Sale, n int, merkleRoot Hash) Hash {
	b := []byte{0x02}
	b = append(b, Rule...)
	b = append(b, 0)
	b = append(b, s.EventID...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(s.ScheduledAt.UnixMilli()))
	b = binary.BigEndian.AppendUint64(b, uint64(s.OpensAt.Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Margin.Milliseconds()))
	b = binary.BigEndian.AppendUint64(b, s.ScheduledRound)
	b = binary.BigEndian.AppendUint64(b, s.Round)
	b = binary.BigEndian.AppendUint64(b, uint64(s.ClosedAt.UnixMilli()))
	b = binary.BigEndian.AppendUint64(b, uint64(n))
	b = append(b, merkleRoot[:]...)
	return sha256.Sum256(b)
}

// Result is a finished draw.
type Result struct {
	MerkleRoot Hash
	Root       Hash     // the commitment R
	Sorted     []Hash   // ascending
	Positions  []uint32 // Positions[i] is Sorted[i]'s place
}

// Run draws a closed, sorted list with the beacon's randomness.
func Run(s Sale, randomness []byte, sorted []Hash) Result {
	mr := Root(sorted)
	r := Commit(s, len(sorted), mr)
	return Result{MerkleRoot: mr, Root: r, Sorted: sorted, Positions: Positions(randomness, r, sorted)}
}

// Encode writes the result as the blobs a store keeps: blob 0 is the index
// (per chunk: its first ticket hash and its subtree root), blob 1+j chunk j
// (per ticket: hash, position). EncodeChunks streams the same blobs.
func (r Result) Encode() [][]byte {
	l := ListOf(r.Sorted)
	blobs := make([][]byte, 1+LayoutFor(l.Len()).Chunks())
	_ = EncodeChunks(l, r.Positions, func(i int, b []byte) error { blobs[i] = b; return nil })
	return blobs
}

// ErrCorrupt is a stored blob that does not decode.
var ErrCorrupt = errors.New("draw: stored draw data is corrupt")

// ChunkOf finds the chunk whose range holds h, from the index blob.
func ChunkOf(index []byte, h Hash) (int, error) {
	if len(index) == 0 || len(index)%64 != 0 {
		return 0, ErrCorrupt
	}
	c := len(index) / 64
	// The last chunk whose first hash is ≤ h.
	j := sort.Search(c, func(j int) bool { return bytes.Compare(index[64*j:64*j+32], h[:]) > 0 }) - 1
	return max(j, 0), nil
}

// Entries decodes a chunk blob.
func Entries(chunk []byte) ([]Hash, []uint32, error) {
	if len(chunk)%entrySize != 0 {
		return nil, nil, ErrCorrupt
	}
	n := len(chunk) / entrySize
	hs, ps := make([]Hash, n), make([]uint32, n)
	for i := range n {
		e := chunk[i*entrySize:]
		copy(hs[i][:], e[:32])
		ps[i] = binary.BigEndian.Uint32(e[32:36])
	}
	return hs, ps, nil
}

// Place is one ticket's drawn position and its Merkle proof.
type Place struct {
	Position uint32
	Proof    Proof
}

// Locate finds h in chunk j of an n-ticket draw and proves it under the
// root, from the index and that one chunk. ok is false when h is not in the
// list.
func Locate(n int, index, chunk []byte, j int, h Hash) (Place, bool, error) {
	l := LayoutFor(n)
	hs, ps, err := Entries(chunk)
	if err != nil {
		return Place{}, false, err
	}
	i := sort.Search(len(hs), func(i int) bool { return bytes.Compare(hs[i][:], h[:]) >= 0 })
	if i == len(hs) || hs[i] != h {
		return Place{}, false, nil
	}
	if len(index) != 64*l.Chunks() || j < 0 || j >= l.Chunks() {
		return Place{}, false, ErrCorrupt
	}
	leaves := make([]Hash, len(hs))
	for k, x := range hs {
		leaves[k] = leafHash(x)
	}
	roots := make([]Hash, l.Chunks())
	for k := range roots {
		copy(roots[k][:], index[64*k+32:64*k+64])
	}
	sib := append(siblings(leaves, i), siblings(roots, j)...)
	return Place{Position: ps[i], Proof: Proof{Index: j*l.ChunkSize + i, N: n, Siblings: sib}}, true, nil
}

// siblings is the proof path of node idx within one level of nodes.
func siblings(level []Hash, idx int) []Hash {
	level = append([]Hash(nil), level...)
	var out []Hash
	for len(level) > 1 {
		if s := idx ^ 1; s < len(level) {
			out = append(out, level[s])
		}
		next := level[:0]
		for k := 0; k < len(level); k += 2 {
			if k+1 == len(level) {
				next = append(next, level[k])
			} else {
				next = append(next, nodeHash(level[k], level[k+1]))
			}
		}
		level, idx = next, idx/2
	}
	return out
}

// Bundle is a whole published draw in one file: the document, the sorted
// ticket list and every position. `vwr verify-draw -file` reads it.
type Bundle struct {
	Draw      Doc      `json:"draw"`
	Tickets   []Hex    `json:"tickets"`
	Positions []uint32 `json:"positions"`
}

// ChunkDoc is one published chunk (GET /vwr-api/vwr/draw/{eventId}/chunks/{j}).
type ChunkDoc struct {
	EventID   string   `json:"eventId"`
	Chunk     int      `json:"chunk"`
	Tickets   []Hex    `json:"tickets"`
	Positions []uint32 `json:"positions"`
}

// Verify recomputes a drawn bundle: the event (against wantEvent when
// given), the chain info and its hash (against wantChainHash when given),
// the beacon's BLS signature and randomness, the times (CheckTiming), the
// Merkle root from the list, the commitment R, the order and every
// position. Any difference is an error wrapping ErrMismatch.
func Verify(b Bundle, wantChainHash []byte, wantEvent string) error {
	d := b.Draw
	if wantEvent != "" && d.EventID != wantEvent {
		return fmt.Errorf("%w: draw of event %q, expected %q", ErrMismatch, d.EventID, wantEvent)
	}
	if !d.OpensAt.Equal(d.OpensAt.Truncate(time.Second)) {
		return fmt.Errorf("%w: opensAt %v has a fraction of a second", ErrMismatch, d.OpensAt)
	}
	for _, t := range []*time.Time{&d.ScheduledAt, d.ClosedAt} {
		if t != nil && !t.Equal(t.Truncate(time.Millisecond)) {
			return fmt.Errorf("%w: %v has a fraction of a millisecond", ErrMismatch, *t)
		}
	}
	if d.Rule != Rule {
		return fmt.Errorf("%w: rule %q, this verifier knows %q", ErrMismatch, d.Rule, Rule)
	}
	if d.Status != StatusDrawn || d.Beacon == nil || d.N == nil {
		return fmt.Errorf("%w: status %q: not drawn yet", ErrMismatch, d.Status)
	}
	if err := d.Chain.Check(); err != nil {
		return err
	}
	if wantChainHash != nil && !bytes.Equal(wantChainHash, d.Chain.Hash) {
		return fmt.Errorf("%w: chain %x, expected %x", ErrMismatch, []byte(d.Chain.Hash), wantChainHash)
	}
	if d.Beacon.Round != d.Round {
		return fmt.Errorf("%w: beacon round %d, draw round %d", ErrMismatch, d.Beacon.Round, d.Round)
	}
	if err := d.CheckTiming(); err != nil {
		return err
	}
	if err := d.Chain.Verify(*d.Beacon); err != nil {
		return err
	}
	n := int(*d.N)
	if len(b.Tickets) != n || len(b.Positions) != n {
		return fmt.Errorf("%w: n = %d, list has %d tickets and %d positions", ErrMismatch, n, len(b.Tickets), len(b.Positions))
	}
	if l := LayoutFor(n); d.ChunkSize != l.ChunkSize || d.Chunks != l.Chunks() {
		return fmt.Errorf("%w: chunk layout %d×%d, rule says %d×%d", ErrMismatch, d.Chunks, d.ChunkSize, l.Chunks(), l.ChunkSize)
	}
	sorted := make([]Hash, n)
	for i, t := range b.Tickets {
		if len(t) != len(Hash{}) {
			return fmt.Errorf("%w: ticket %d has %d bytes", ErrMismatch, i, len(t))
		}
		copy(sorted[i][:], t)
	}
	if err := CheckSorted(sorted); err != nil {
		return err
	}
	mr := Root(sorted)
	if !bytes.Equal(mr[:], d.MerkleRoot) {
		return fmt.Errorf("%w: Merkle root of the list %x, published %x", ErrMismatch, mr, []byte(d.MerkleRoot))
	}
	r := Commit(SaleOf(d), n, mr)
	if !bytes.Equal(r[:], d.Root) {
		return fmt.Errorf("%w: commitment R %x, published %x", ErrMismatch, r, []byte(d.Root))
	}
	want := Positions(d.Beacon.Randomness, r, sorted)
	for i := range want {
		if want[i] != b.Positions[i] {
			return fmt.Errorf("%w: ticket %x drawn at %d, published %d", ErrMismatch, sorted[i], want[i], b.Positions[i])
		}
	}
	return nil
}

// DecodeBundle reads a bundle strictly: unknown fields and trailing data
// are errors, so every published byte is either checked or rejected.
func DecodeBundle(r io.Reader, b *Bundle) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(b); err != nil {
		return fmt.Errorf("draw: bundle: %w", err)
	}
	if dec.More() {
		return errors.New("draw: bundle: trailing data")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("draw: bundle: trailing data")
	}
	return nil
}

// Fetch downloads a drawn sale's published data from a Tier 1 base URL
// (…/vwr-api): the draw document, then every chunk.
func Fetch(ctx context.Context, hc *http.Client, base, eventID string) (Bundle, error) {
	base = strings.TrimRight(base, "/")
	var b Bundle
	if err := getJSON(ctx, hc, base+"/vwr/draw/"+eventID, &b.Draw); err != nil {
		return Bundle{}, err
	}
	switch {
	case b.Draw.Status == StatusCancelled && b.Draw.CancelledAt != nil:
		return Bundle{}, fmt.Errorf("draw: the sale of event %s was cancelled at %v: it is never drawn", eventID, b.Draw.CancelledAt.UTC())
	case b.Draw.Status != StatusDrawn:
		return Bundle{}, fmt.Errorf("draw: event %s is %q, not drawn yet", eventID, b.Draw.Status)
	}
	for j := range b.Draw.Chunks {
		var c ChunkDoc
		if err := getJSON(ctx, hc, fmt.Sprintf("%s/vwr/draw/%s/chunks/%d", base, eventID, j), &c); err != nil {
			return Bundle{}, err
		}
		if c.Chunk != j || c.EventID != eventID || len(c.Tickets) != len(c.Positions) {
			return Bundle{}, fmt.Errorf("%w: chunk %d is malformed", ErrMismatch, j)
		}
		b.Tickets = append(b.Tickets, c.Tickets...)
		b.Positions = append(b.Positions, c.Positions...)
	}
	return b, nil
}

func getJSON(ctx context.Context, hc *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("draw: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("draw: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("draw: GET %s: %s", url, resp.Status)
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, 64<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("draw: GET %s: %w", url, err)
	}
	return nil
}
