package tier1

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/draw"
)

// Errors of scheduled sales.
var (
	// ErrInvalidNonce is a Client-Nonce that is not 16 bytes in hex or base64url.
	ErrInvalidNonce = draw.ErrInvalidNonce
	// ErrNonceRequired is a pre-queue arrival without a client nonce.
	ErrNonceRequired = errors.New("tier1: a pre-queue ticket needs a 16-byte client nonce")
	// ErrInvalidSchedule is a schedule the Service refuses (times, or an event
	// that already hands out positions).
	ErrInvalidSchedule = errors.New("tier1: invalid schedule")
	// ErrClosed is a ticket written after its list closed.
	ErrClosed = errors.New("tier1: pre-queue closed")
	// ErrClosing is an arrival after the opening while the closed list is
	// still being committed: retry in a second.
	ErrClosing = fmt.Errorf("%w: pre-queue closing", ErrUnavailable)
	// ErrNoSales is a store without scheduled-sale support.
	ErrNoSales = errors.New("tier1: store does not support scheduled sales")
	// ErrNotDrawn is draw data asked for before the draw.
	ErrNotDrawn = errors.New("tier1: not drawn yet")
	// ErrNotOpen is an arrival before the pre-queue opens (prequeueFrom):
	// nobody is queued and nobody passes through; retry later.
	ErrNotOpen = fmt.Errorf("%w: pre-queue not open yet", ErrUnavailable)
)

// Phases of a visitor in a scheduled sale.
const (
	PhasePrequeue = draw.StatusPrequeue
	PhaseDrawing  = draw.StatusDrawing
	PhaseDrawn    = draw.StatusDrawn
)

// ParseNonce accepts exactly 16 bytes: 32 hex digits or 22 base64url
// characters (no padding).
func ParseNonce(s string) ([]byte, error) {
	switch len(s) {
	case 2 * draw.NonceSize:
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	case 22:
		if b, err := base64.RawURLEncoding.Strict().DecodeString(s); err == nil && len(b) == draw.NonceSize {
			return b, nil
		}
	}
	return nil, ErrInvalidNonce
}

// Schedule is an event's opening as the operator set it.
type Schedule struct {
	EventID      string
	OpensAt      time.Time // whole seconds
	PrequeueFrom time.Time // zero: the pre-queue is open from the schedule on
	Round        uint64    // the beacon round that draws the pre-queue
	ChainHash    []byte    // the chain that round belongs to
	Now          time.Time
}

// SaleState is a scheduled sale as stored.
type SaleState struct {
	Schedule
	Closed     bool // no ticket can be added any more
	Committed  bool // R and n written, counters cover 1…n
	MerkleRoot draw.Hash
	Root       draw.Hash // the commitment R
	N          int64
	ClosedAt   time.Time
	Drawn      bool
	Beacon     draw.Beacon
	DrawnAt    time.Time
}

// Sale phases as the event item summarises them.
const (
	SaleNone     = 0 // no scheduled sale
	SalePrequeue = 1 // scheduled; the list is open or closing
	SaleDrawing  = 2 // R committed, counters moved; waiting for the beacon
	SaleDrawn    = 3 // positions are out
)

// SaleSummary is the part of a sale every snapshot carries.
type SaleSummary struct {
	Phase        int
	OpensAt      time.Time
	PrequeueFrom time.Time // zero: open from the schedule on
	Round        uint64
	Root         []byte // R, once committed
}

// Public is the summary's phase as the page names it.
func (s SaleSummary) Public() string {
	switch s.Phase {
	case SaleDrawn:
		return PhaseDrawn
	case SaleDrawing:
		return PhaseDrawing
	case SalePrequeue:
		return PhasePrequeue
	}
	return ""
}

// Phase is the sale's public status.
func (s SaleState) Phase() string {
	switch {
	case s.Drawn:
		return PhaseDrawn
	case s.Closed:
		return PhaseDrawing
	}
	return PhasePrequeue
}

// NewTicket asks a store to record a pre-queue ticket.
type NewTicket struct {
	EventID        string
	RequestID      string
	Hash           draw.Hash
	IdempotencyKey string
	Now            time.Time
	TTL            time.Duration
}

// Ticket is a recorded pre-queue ticket.
type Ticket struct {
	EventID   string
	RequestID string
	Hash      draw.Hash
	CreatedAt time.Time
}

// CloseWrite commits a closed list: R, n, and shard counters that cover
// positions 1…n, so later arrivals continue after n.
type CloseWrite struct {
	EventID    string
	MerkleRoot draw.Hash
	Root       draw.Hash
	N          int64
	Shards     int
	Counters   []int64 // CoveringCounters(N, Shards)
	Now        time.Time
}

// DrawWrite stores a draw: the blobs (draw.Result.Encode) and, once, the beacon.
type DrawWrite struct {
	EventID string
	Beacon  draw.Beacon
	Blobs   [][]byte
	Now     time.Time
}

// SaleStore is the port for scheduled sales, implemented by both stores
// beside Store. Each write that must happen once is conditional.
type SaleStore interface {
	// PutSchedule writes the schedule; ErrClosed once the list has closed.
	PutSchedule(ctx context.Context, s Schedule) error
	// Sale reads the sale; ok is false when none was scheduled.
	Sale(ctx context.Context, eventID string) (st SaleState, ok bool, err error)
	// AddTicket records a ticket unless the list is closed (ErrClosed). With
	// an idempotency key it returns the first ticket for that key instead.
	AddTicket(ctx context.Context, t NewTicket) (tk Ticket, reused bool, err error)
	// Ticket reads one ticket (ErrNotFound).
	Ticket(ctx context.Context, eventID, requestID string) (Ticket, error)
	// CloseList stops AddTicket for good. first is true for the one call that
	// closed it.
	CloseList(ctx context.Context, eventID string, now time.Time) (first bool, err error)
	// TicketHashes lists every ticket of a closed list, in no order.
	TicketHashes(ctx context.Context, eventID string) ([]draw.Hash, error)
	// CommitClose writes R, n and the counters once; ErrConflict when it was
	// already committed (or a counter is not zero).
	CommitClose(ctx context.Context, w CloseWrite) error
	// CommitDraw writes the blobs, then the beacon once; ErrConflict when the
	// sale was already drawn.
	CommitDraw(ctx context.Context, w DrawWrite) error
	// DrawBlob reads blob i of a drawn sale (ErrNotFound).
	DrawBlob(ctx context.Context, eventID string, i int) ([]byte, error)
}

// CoveringCounters are the shard counters after positions 1…n were handed
// out: shard k holds k+1, k+1+shards, … ≤ n.
func CoveringCounters(n int64, shards int) []int64 {
	out := make([]int64, shards)
	for k := range out {
		if n > int64(k) {
			out[k] = (n - int64(k) + int64(shards) - 1) / int64(shards)
		}
	}
	return out
}

// BeaconSource fetches verified beacon rounds (draw.Client).
type BeaconSource interface {
	Fetch(ctx context.Context, round uint64) (draw.Beacon, error)
}

// DrawConfig is the beacon a Service draws with.
type DrawConfig struct {
	Chain  draw.ChainInfo
	Beacon BeaconSource
	// Margin is how long after the opening the list may still be closing:
	// the draw's round is the first one published after opensAt + Margin.
	Margin time.Duration
}

// DefaultDrawMargin is VWR_DRAW_MARGIN's default.
const DefaultDrawMargin = 10 * time.Second

func (s *Service) sales() (SaleStore, error) {
	ss, ok := s.store.(SaleStore)
	if !ok {
		return nil, ErrNoSales
	}
	return ss, nil
}

// SaleStatus is the operator's and the page's view of a sale.
type SaleStatus struct {
	SaleState
	Chain draw.ChainInfo
}

// Schedule sets eventID to open at opensAt, with a pre-queue (from
// prequeueFrom, or from now) drawn by the first beacon round after opensAt +
// the margin. The event must not be active yet and must not have handed out
// a position (or be a sale still in its pre-queue, which this moves);
// scheduling activates it, so every instance that sees it active also sees
// the schedule (written first). Options set the rest as Activate's do.
func (s *Service) Schedule(ctx context.Context, eventID string, opensAt, prequeueFrom time.Time, opts ...ActivateOption) (SaleStatus, error) {
	if !ValidID(eventID) {
		return SaleStatus{}, ErrInvalidEvent
	}
	ss, err := s.sales()
	if err != nil {
		return SaleStatus{}, err
	}
	now := s.clk.Now()
	opensAt = opensAt.UTC().Truncate(time.Second)
	switch {
	case !opensAt.After(now):
		return SaleStatus{}, fmt.Errorf("%w: opensAt must be in the future", ErrInvalidSchedule)
	case !prequeueFrom.IsZero() && !prequeueFrom.Before(opensAt):
		return SaleStatus{}, fmt.Errorf("%w: prequeueFrom must be before opensAt", ErrInvalidSchedule)
	}
	if _, err := optionSettings(opts); err != nil {
		return SaleStatus{}, err
	}
	snap, err := s.fresh(ctx, eventID)
	if err != nil {
		return SaleStatus{}, err
	}
	// A sale still in its pre-queue may be moved; otherwise the event must
	// not be queueing yet.
	moving := snap.Event.Sale.Phase == SalePrequeue
	if snap.Found && !moving && (snap.Event.Active || Assigned(snap.Counters, snap.Event.Shards) > 0) {
		return SaleStatus{}, fmt.Errorf("%w: deactivate the event, and schedule only one that has handed out no position", ErrInvalidSchedule)
	}
	d := s.cfg.Draw
	sch := Schedule{
		EventID: eventID, OpensAt: opensAt, PrequeueFrom: prequeueFrom.UTC(),
		Round: d.Chain.RoundAfter(opensAt.Add(d.Margin)), ChainHash: d.Chain.Hash, Now: now,
	}
	shards := snap.Event.Shards
	if shards == 0 {
		shards = s.cfg.DefaultShards
	}
	batch := snap.Event.BatchSize
	if batch == 0 {
		batch = s.cfg.DefaultBatchSize
	}
	if !snap.Found {
		// Create the event (inactive) first: the schedule goes on its item.
		st := Settings{Shards: shards, BatchSize: batch}
		if err := s.store.Configure(ctx, eventID, st, now); err != nil {
			s.invalidate(eventID)
			return SaleStatus{}, unavailable("configure", err)
		}
	}
	if err := ss.PutSchedule(ctx, sch); err != nil {
		if errors.Is(err, ErrClosed) {
			return SaleStatus{}, fmt.Errorf("%w: the pre-queue already closed", ErrInvalidSchedule)
		}
		return SaleStatus{}, unavailable("schedule", err)
	}
	if _, err := s.Activate(ctx, eventID, shards, batch, opts...); err != nil {
		return SaleStatus{}, err
	}
	return s.SaleStatus(ctx, eventID)
}

// SaleStatus reads the sale afresh (ErrNotFound when none).
func (s *Service) SaleStatus(ctx context.Context, eventID string) (SaleStatus, error) {
	if !ValidID(eventID) {
		return SaleStatus{}, ErrInvalidEvent
	}
	ss, err := s.sales()
	if err != nil {
		return SaleStatus{}, err
	}
	st, ok, err := ss.Sale(ctx, eventID)
	if err != nil {
		return SaleStatus{}, unavailable("read sale", err)
	}
	if !ok {
		return SaleStatus{}, ErrNotFound
	}
	return SaleStatus{SaleState: st, Chain: s.cfg.Draw.Chain}, nil
}

// prequeue answers an arrival at a scheduled event whose list is not
// committed yet: a ticket before the opening; after it, the close (by the
// first caller) and then an ordinary position.
func (s *Service) prequeue(ctx context.Context, snap Snapshot, nonce []byte, idempotencyKey string) (AssignResult, error) {
	ss, err := s.sales()
	if err != nil {
		return AssignResult{}, err
	}
	eventID, sum := snap.Event.ID, snap.Event.Sale
	now := s.clk.Now()
	if now.Before(sum.PrequeueFrom) {
		return AssignResult{}, ErrNotOpen
	}
	if now.Before(sum.OpensAt) {
		if nonce == nil {
			return AssignResult{}, ErrNonceRequired
		}
		rid := NewRequestID()
		tk, reused, err := ss.AddTicket(ctx, NewTicket{
			EventID: eventID, RequestID: rid, Hash: draw.TicketHash(rid, nonce),
			IdempotencyKey: idempotencyKey, Now: now, TTL: s.cfg.PositionTTL + sum.OpensAt.Sub(now),
		})
		switch {
		case err == nil:
			return AssignResult{
				Active: true, Phase: PhasePrequeue, RequestID: tk.RequestID, EventID: eventID,
				TicketHash: tk.Hash, Sale: &sum, Reused: reused,
				NextPoll: nextPrequeuePoll(sum.OpensAt.Sub(now)),
			}, nil
		case !errors.Is(err, ErrClosed):
			return AssignResult{}, unavailable("add ticket", err)
		}
		// Closed early by an instance whose clock is ahead: fall through.
	}
	if _, err := s.closeSale(ctx, eventID); err != nil {
		return AssignResult{}, err
	}
	snap, err = s.fresh(ctx, eventID)
	if err != nil {
		return AssignResult{}, err
	}
	if snap.Event.Sale.Phase == SalePrequeue {
		return AssignResult{}, ErrClosing
	}
	return s.AssignWithNonce(ctx, eventID, idempotencyKey, nonce)
}

func nextPrequeuePoll(left time.Duration) int {
	return int(min(max(left/2, time.Second), 30*time.Second) / time.Second)
}

// closeSale closes eventID's list and commits R, n and the counters. Only
// the caller that closed the list (or the advancer, which repairs a closer
// that died) does the work; it reports whether this call committed.
func (s *Service) closeSale(ctx context.Context, eventID string) (bool, error) {
	return s.closeSaleAs(ctx, eventID, false)
}

func (s *Service) closeSaleAs(ctx context.Context, eventID string, advancer bool) (bool, error) {
	ss, err := s.sales()
	if err != nil {
		return false, err
	}
	first, err := ss.CloseList(ctx, eventID, s.clk.Now())
	if err != nil {
		return false, unavailable("close list", err)
	}
	if !first && !advancer {
		return false, nil
	}
	sale, ok, err := ss.Sale(ctx, eventID)
	if err != nil {
		return false, unavailable("read sale", err)
	}
	if !ok || sale.Committed {
		return false, nil
	}
	hs, err := ss.TicketHashes(ctx, eventID)
	if err != nil {
		return false, unavailable("list tickets", err)
	}
	if err := draw.SortHashes(hs); err != nil {
		return false, fmt.Errorf("tier1: close %s: %w", eventID, err)
	}
	snap, err := s.fresh(ctx, eventID)
	if err != nil {
		return false, err
	}
	mr := draw.Root(hs)
	n := int64(len(hs))
	err = ss.CommitClose(ctx, CloseWrite{
		EventID: eventID, MerkleRoot: mr, N: n,
		Root:   draw.Commit(draw.Sale{EventID: eventID, OpensAt: sale.OpensAt, Round: sale.Round}, len(hs), mr),
		Shards: snap.Event.Shards, Counters: CoveringCounters(n, snap.Event.Shards), Now: s.clk.Now(),
	})
	s.invalidate(eventID)
	if errors.Is(err, ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("commit close", err)
	}
	s.cfg.Logger.Info("tier1 pre-queue closed", "event", eventID, "n", n, "root", fmt.Sprintf("%x", mr))
	return true, nil
}

// DrawOutcome is what one draw attempt did.
type DrawOutcome string

// Draw outcomes.
const (
	DrawDone      DrawOutcome = "drawn"        // this call drew
	DrawAlready   DrawOutcome = "already"      // someone else drew
	DrawWaiting   DrawOutcome = "waiting"      // the round is not out yet
	DrawNoBeacon  DrawOutcome = "beacon-error" // the beacon failed: the sale stays drawing
	DrawNotClosed DrawOutcome = "not-closed"   // the list is not committed yet
)

// Draw runs the draw of eventID if its round is out: fetch and verify the
// beacon round, recompute R from the stored list, order it, store the order
// in chunks, then write the beacon once (conditional). A beacon that cannot
// be fetched or verified leaves the sale drawing; there is no fallback.
func (s *Service) Draw(ctx context.Context, eventID string) (DrawOutcome, error) {
	ss, err := s.sales()
	if err != nil {
		return "", err
	}
	sale, ok, err := ss.Sale(ctx, eventID)
	if err != nil {
		return "", unavailable("read sale", err)
	}
	switch {
	case !ok:
		return "", ErrNotFound
	case sale.Drawn:
		return DrawAlready, nil
	case !sale.Committed:
		return DrawNotClosed, nil
	case s.clk.Now().Before(s.cfg.Draw.Chain.TimeOf(sale.Round)):
		return DrawWaiting, nil
	}
	if fmt.Sprintf("%x", sale.ChainHash) != fmt.Sprintf("%x", []byte(s.cfg.Draw.Chain.Hash)) {
		return DrawNoBeacon, fmt.Errorf("tier1: draw %s: scheduled on chain %x, configured chain %x", eventID, sale.ChainHash, []byte(s.cfg.Draw.Chain.Hash))
	}
	b, err := s.cfg.Draw.Beacon.Fetch(ctx, sale.Round)
	if errors.Is(err, draw.ErrRoundNotYet) {
		return DrawWaiting, nil
	}
	if err != nil {
		s.cfg.Logger.Info("tier1 draw waits for the beacon", "event", eventID, "round", sale.Round, "err", err.Error())
		return DrawNoBeacon, nil
	}
	hs, err := ss.TicketHashes(ctx, eventID)
	if err != nil {
		return "", unavailable("list tickets", err)
	}
	if err := draw.SortHashes(hs); err != nil {
		return "", fmt.Errorf("tier1: draw %s: %w", eventID, err)
	}
	res := draw.Run(draw.Sale{EventID: eventID, OpensAt: sale.OpensAt, Round: sale.Round}, b.Randomness, hs)
	if res.Root != sale.Root || int64(len(hs)) != sale.N {
		return "", fmt.Errorf("tier1: draw %s: stored list (n=%d) does not match the committed root (n=%d)", eventID, len(hs), sale.N)
	}
	err = ss.CommitDraw(ctx, DrawWrite{EventID: eventID, Beacon: b, Blobs: res.Encode(), Now: s.clk.Now()})
	s.invalidate(eventID)
	if errors.Is(err, ErrConflict) {
		return DrawAlready, nil
	}
	if err != nil {
		return "", unavailable("commit draw", err)
	}
	s.cfg.Logger.Info("tier1 drawn", "event", eventID, "n", len(hs), "round", sale.Round)
	return DrawDone, nil
}

// tickSale moves a scheduled sale along for the advancer: close at the
// opening, draw once the round is out. It returns the skip reason while the
// serving counter must not move yet ("" once drawn).
func (s *Service) tickSale(ctx context.Context, snap Snapshot) (string, error) {
	sum := snap.Event.Sale
	switch sum.Phase {
	case SaleNone, SaleDrawn:
		return "", nil
	case SalePrequeue:
		if s.clk.Now().Before(sum.OpensAt) {
			return PhasePrequeue, nil
		}
		if _, err := s.closeSaleAs(ctx, snap.Event.ID, true); err != nil {
			return "", err
		}
	}
	out, err := s.Draw(ctx, snap.Event.ID)
	if err != nil {
		return "", err
	}
	if out == DrawDone || out == DrawAlready {
		return "", nil
	}
	return PhaseDrawing, nil
}

// blobCache keeps draw blobs, which never change once written.
type blobCache struct {
	mu    sync.Mutex
	m     map[string][]byte
	sales map[string]SaleState // drawn sales
}

const maxCachedBlobs = 256

func (s *Service) blob(ctx context.Context, eventID string, i int) ([]byte, error) {
	key := fmt.Sprintf("%s/%d", eventID, i)
	s.blobs.mu.Lock()
	b, ok := s.blobs.m[key]
	s.blobs.mu.Unlock()
	if ok {
		return b, nil
	}
	ss, err := s.sales()
	if err != nil {
		return nil, err
	}
	b, err = ss.DrawBlob(ctx, eventID, i)
	if errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, unavailable("read draw", err)
	}
	s.blobs.mu.Lock()
	if s.blobs.m == nil || len(s.blobs.m) >= maxCachedBlobs {
		s.blobs.m = map[string][]byte{}
	}
	s.blobs.m[key] = b
	s.blobs.mu.Unlock()
	return b, nil
}

// Place finds a ticket hash's drawn position and Merkle proof.
func (s *Service) Place(ctx context.Context, eventID string, h draw.Hash) (draw.Place, error) {
	if !ValidID(eventID) {
		return draw.Place{}, ErrInvalidEvent
	}
	st, err := s.drawnSale(ctx, eventID)
	if err != nil {
		return draw.Place{}, err
	}
	return s.place(ctx, st, h)
}

func (s *Service) place(ctx context.Context, sale SaleState, h draw.Hash) (draw.Place, error) {
	index, err := s.blob(ctx, sale.EventID, 0)
	if err != nil {
		return draw.Place{}, err
	}
	j, err := draw.ChunkOf(index, h)
	if err != nil {
		return draw.Place{}, fmt.Errorf("tier1: %w", err)
	}
	chunk, err := s.blob(ctx, sale.EventID, 1+j)
	if err != nil {
		return draw.Place{}, err
	}
	p, ok, err := draw.Locate(int(sale.N), index, chunk, j, h)
	if err != nil {
		return draw.Place{}, fmt.Errorf("tier1: %w", err)
	}
	if !ok {
		return draw.Place{}, ErrNotFound
	}
	return p, nil
}

// DrawDoc is the public draw document of eventID.
func (s *Service) DrawDoc(ctx context.Context, eventID string) (draw.Doc, error) {
	st, err := s.SaleStatus(ctx, eventID)
	if err != nil {
		return draw.Doc{}, err
	}
	c := s.cfg.Draw.Chain
	d := draw.Doc{
		Rule: draw.Rule, EventID: eventID, Status: st.Phase(), OpensAt: st.OpensAt,
		Chain: c, Round: st.Round, RoundAt: c.TimeOf(st.Round),
	}
	if st.Committed {
		n := st.N
		d.MerkleRoot, d.Root, d.N = st.MerkleRoot[:], st.Root[:], &n
	}
	if st.Drawn {
		b := st.Beacon
		l := draw.LayoutFor(int(st.N))
		d.Beacon, d.ChunkSize, d.Chunks = &b, l.ChunkSize, l.Chunks()
	}
	return d, nil
}

// DrawDocDrawing is DrawDoc for the public route: when the round is out and
// no advancer has drawn yet, the first call draws (one per instance at a
// time; the store's conditional write keeps it to one overall).
func (s *Service) DrawDocDrawing(ctx context.Context, eventID string) (draw.Doc, error) {
	d, err := s.DrawDoc(ctx, eventID)
	if err != nil || d.Status != draw.StatusDrawing || d.Root == nil || s.clk.Now().Before(d.RoundAt) {
		return d, err
	}
	if !s.drawing.TryLock() {
		return d, nil
	}
	defer s.drawing.Unlock()
	if _, err := s.Draw(ctx, eventID); err != nil {
		s.cfg.Logger.Info("tier1 draw on request failed", "event", eventID, "err", err.Error())
		return d, nil
	}
	return s.DrawDoc(ctx, eventID)
}

// DrawChunk is chunk j of a drawn sale's sorted list, with positions.
func (s *Service) DrawChunk(ctx context.Context, eventID string, j int) (draw.ChunkDoc, error) {
	st, err := s.drawnSale(ctx, eventID)
	if err != nil {
		return draw.ChunkDoc{}, err
	}
	if j < 0 || j >= draw.LayoutFor(int(st.N)).Chunks() {
		return draw.ChunkDoc{}, ErrNotFound
	}
	b, err := s.blob(ctx, eventID, 1+j)
	if err != nil {
		return draw.ChunkDoc{}, err
	}
	hs, ps, err := draw.Entries(b)
	if err != nil {
		return draw.ChunkDoc{}, fmt.Errorf("tier1: %w", err)
	}
	doc := draw.ChunkDoc{EventID: eventID, Chunk: j, Positions: ps, Tickets: make([]draw.Hex, len(hs))}
	for i := range hs {
		doc.Tickets[i] = hs[i][:]
	}
	return doc, nil
}

// checkTicket answers a check by a pre-queue ticket holder: the phase until
// the draw, then the drawn position like any other.
func (s *Service) checkTicket(ctx context.Context, eventID, requestID string) (CheckResult, error) {
	ss, err := s.sales()
	if err != nil {
		return CheckResult{}, ErrNotFound
	}
	tk, err := ss.Ticket(ctx, eventID, requestID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return CheckResult{}, ErrNotFound
		}
		return CheckResult{}, unavailable("read ticket", err)
	}
	snap, err := s.snapshot(ctx, eventID)
	if err != nil {
		return CheckResult{}, err
	}
	sum := snap.Event.Sale
	now := s.clk.Now()
	switch sum.Phase {
	case SalePrequeue:
		return CheckResult{Phase: PhasePrequeue, Sale: &sum, TicketHash: tk.Hash, NextPoll: nextPrequeuePoll(sum.OpensAt.Sub(now))}, nil
	case SaleDrawing:
		return CheckResult{Phase: PhaseDrawing, Sale: &sum, TicketHash: tk.Hash, NextPoll: 2}, nil
	case SaleDrawn:
	default:
		return CheckResult{}, ErrNotFound
	}
	sale, err := s.drawnSale(ctx, eventID)
	if err != nil {
		return CheckResult{}, err
	}
	p, err := s.place(ctx, sale, tk.Hash)
	if err != nil {
		return CheckResult{}, err
	}
	res, err := s.checkPosition(ctx, Position{RequestID: requestID, EventID: eventID, Position: int64(p.Position)})
	res.Phase, res.Sale, res.TicketHash, res.Proof = PhaseDrawn, &sum, tk.Hash, &p.Proof
	return res, err
}

// drawnSale is a drawn sale's state, cached: it never changes again.
func (s *Service) drawnSale(ctx context.Context, eventID string) (SaleState, error) {
	s.blobs.mu.Lock()
	st, ok := s.blobs.sales[eventID]
	s.blobs.mu.Unlock()
	if ok {
		return st, nil
	}
	full, err := s.SaleStatus(ctx, eventID)
	if err != nil {
		return SaleState{}, err
	}
	if !full.Drawn {
		return SaleState{}, ErrNotDrawn
	}
	s.blobs.mu.Lock()
	if s.blobs.sales == nil || len(s.blobs.sales) >= maxCacheEntries {
		s.blobs.sales = map[string]SaleState{}
	}
	s.blobs.sales[eventID] = full.SaleState
	s.blobs.mu.Unlock()
	return full.SaleState, nil
}
