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
	// ErrTicketed is a store refusing to move a sale whose pre-queue has
	// handed out a ticket.
	ErrTicketed = errors.New("tier1: the pre-queue has handed out tickets")
	// ErrSaleTicketed refuses a schedule once a ticket exists: its holder
	// was told the opening and the round, so only cancelling remains.
	ErrSaleTicketed = errors.New("tier1: the pre-queue has handed out tickets: the sale can no longer be moved, only cancelled")
	// ErrSaleClosed refuses a schedule once the list has closed.
	ErrSaleClosed = errors.New("tier1: the pre-queue has closed: the sale can no longer be moved")
	// ErrSaleDrawn refuses a schedule or a cancel once the sale is drawn.
	ErrSaleDrawn = errors.New("tier1: the sale is drawn: it can no longer be moved or cancelled")
	// ErrSaleCancelled is any use of a cancelled sale (it is never drawn,
	// and the event id cannot be scheduled again).
	ErrSaleCancelled = errors.New("tier1: the sale was cancelled")
)

// CloseGrace is how long after the opening the list may take to close
// and still be drawn with the scheduled round: the scheduled round is the
// first one published at least CloseGrace + the margin after the opening.
// The advancer wakes at the opening to close, and any request after it
// closes too, so an honest close takes well under a second.
const CloseGrace = 5 * time.Second

// Phases of a visitor in a scheduled sale.
const (
	PhasePrequeue  = draw.StatusPrequeue
	PhaseDrawing   = draw.StatusDrawing
	PhaseDrawn     = draw.StatusDrawn
	PhaseCancelled = draw.StatusCancelled
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
	Round        uint64    // the beacon round fixed at scheduling
	ChainHash    []byte    // the chain that round belongs to
	// Margin is the least time between the list's close and the round
	// that draws it (VWR_DRAW_MARGIN when scheduled), kept with the sale.
	Margin time.Duration
	Now    time.Time // scheduledAt
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
	// DrawRound is the round R binds, written with R: Round, or after a
	// late close the first round at least the margin after ClosedAt
	// (RoundMoved is then draw.MovedLateClose).
	DrawRound  uint64
	RoundMoved string
	Drawn      bool
	Beacon     draw.Beacon
	DrawnAt    time.Time
	// Cancelled sales are closed and never drawn.
	Cancelled   bool
	CancelledAt time.Time
}

// CurrentRound is the round that draws the sale as far as is known: the
// committed one once R is written, the scheduled one before.
func (s SaleState) CurrentRound() uint64 {
	if s.DrawRound != 0 {
		return s.DrawRound
	}
	return s.Round
}

// Sale phases as the event item summarises them.
const (
	SaleNone      = 0 // no scheduled sale
	SalePrequeue  = 1 // scheduled; the list is open or closing
	SaleDrawing   = 2 // R committed, counters moved; waiting for the beacon
	SaleDrawn     = 3 // positions are out
	SaleCancelled = 4 // cancelled by the operator: never drawn
)

// SaleSummary is the part of a sale every snapshot carries.
type SaleSummary struct {
	Phase        int
	OpensAt      time.Time
	PrequeueFrom time.Time // zero: open from the schedule on
	Round        uint64    // the scheduled round, then the round R binds
	Root         []byte    // R, once committed
}

// Public is the summary's phase as the page names it.
func (s SaleSummary) Public() string {
	switch s.Phase {
	case SaleCancelled:
		return PhaseCancelled
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
	case s.Cancelled:
		return PhaseCancelled
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
	// OpensAt and Round are the schedule the ticket was issued under, as
	// AddTicket read it with the write (zero from Ticket): a ticket stops
	// the sale from moving, so they are final.
	OpensAt time.Time
	Round   uint64
}

// CloseWrite commits a closed list: R, n, and shard counters that cover
// positions 1…n, so later arrivals continue after n.
type CloseWrite struct {
	EventID    string
	MerkleRoot draw.Hash
	Root       draw.Hash
	N          int64
	Round      uint64 // the round R binds (SaleState.DrawRound)
	RoundMoved string // draw.MovedLateClose when Round is not the scheduled one
	Shards     int
	Counters   []int64 // CoveringCounters(N, Shards)
	Now        time.Time
}

// DrawWrite commits a draw whose blobs are written: the beacon, once.
type DrawWrite struct {
	EventID string
	Beacon  draw.Beacon
	Now     time.Time
}

// SaleStore is the port for scheduled sales, implemented by both stores
// beside Store. Each write that must happen once is conditional.
type SaleStore interface {
	// PutSchedule writes the schedule, atomically refusing (and writing
	// nothing) with ErrSaleCancelled for a cancelled sale, ErrClosed once
	// the list has closed and ErrTicketed once AddTicket recorded a ticket.
	PutSchedule(ctx context.Context, s Schedule) error
	// Sale reads the sale; ok is false when none was scheduled.
	Sale(ctx context.Context, eventID string) (st SaleState, ok bool, err error)
	// AddTicket records a ticket unless the list is closed (ErrClosed). With
	// an idempotency key it returns the first ticket for that key instead.
	// The ticket carries the schedule it was recorded under.
	AddTicket(ctx context.Context, t NewTicket) (tk Ticket, reused bool, err error)
	// Ticket reads one ticket (ErrNotFound).
	Ticket(ctx context.Context, eventID, requestID string) (Ticket, error)
	// CloseList stops AddTicket for good and records closedAt: now() read
	// once the list takes no ticket any more. first is true for the one call
	// that closed it.
	CloseList(ctx context.Context, eventID string, now func() time.Time) (first bool, err error)
	// EachTicketHash calls fn with every ticket of a closed list, page by
	// page, in no order (a ticket may come twice); fn must not keep the
	// slice. It holds no more than a page at a time.
	EachTicketHash(ctx context.Context, eventID string, fn func([]draw.Hash) error) error
	// CommitClose writes R, n and the counters once; ErrConflict when it was
	// already committed (or a counter is not zero).
	CommitClose(ctx context.Context, w CloseWrite) error
	// PutDrawBlobs writes blobs first, first+1, … of a draw
	// (draw.EncodeChunks). Every drawer writes identical bytes, so a
	// loser's writes are harmless.
	PutDrawBlobs(ctx context.Context, eventID string, first int, blobs [][]byte) error
	// CommitDraw writes the beacon once, after every blob; ErrConflict when
	// the sale was already drawn (or cancelled).
	CommitDraw(ctx context.Context, w DrawWrite) error
	// DrawBlob reads blob i of a drawn sale (ErrNotFound).
	DrawBlob(ctx context.Context, eventID string, i int) ([]byte, error)
	// CancelSale closes the list for good and marks the sale cancelled
	// (idempotent); ErrSaleDrawn once drawn, ErrNotFound without a sale.
	CancelSale(ctx context.Context, eventID string, now time.Time) error
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
	// Margin is the least time between the list's close and the round that
	// draws it: a sale is scheduled with the first round at least
	// CloseGrace + Margin after its opening, and a close later than that
	// round's time − Margin moves the draw to the first round at least
	// Margin after the close.
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
// prequeueFrom, or from now) drawn by the first beacon round at least
// CloseGrace + the margin after opensAt. The event must not be active yet
// and must not have handed out a position, or be a sale whose pre-queue has
// handed out no ticket yet (which this moves); scheduling activates it, so
// every instance that sees it active also sees the schedule (written
// first). Once a ticket exists the sale cannot move (ErrSaleTicketed): its
// holders were told the opening and the round. Only Cancel remains. Options
// set the rest as Activate's do.
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
	switch snap.Event.Sale.Phase {
	case SaleCancelled:
		return SaleStatus{}, ErrSaleCancelled
	case SaleDrawing:
		return SaleStatus{}, ErrSaleClosed
	case SaleDrawn:
		return SaleStatus{}, ErrSaleDrawn
	}
	// A sale still in its pre-queue may be moved while it has no ticket (the
	// store checks that atomically); otherwise the event must not be
	// queueing yet.
	moving := snap.Event.Sale.Phase == SalePrequeue
	if snap.Found && !moving && (snap.Event.Active || Assigned(snap.Counters, snap.Event.Shards) > 0) {
		return SaleStatus{}, fmt.Errorf("%w: deactivate the event, and schedule only one that has handed out no position", ErrInvalidSchedule)
	}
	d := s.cfg.Draw
	sch := Schedule{
		EventID: eventID, OpensAt: opensAt, PrequeueFrom: prequeueFrom.UTC(),
		Round: d.Chain.FirstRoundAtOrAfter(opensAt.Add(CloseGrace + d.Margin)), ChainHash: d.Chain.Hash,
		Margin: d.Margin, Now: now,
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
		s.invalidate(eventID)
		switch {
		case errors.Is(err, ErrClosed):
			return SaleStatus{}, ErrSaleClosed
		case errors.Is(err, ErrTicketed):
			return SaleStatus{}, ErrSaleTicketed
		case errors.Is(err, ErrSaleCancelled):
			return SaleStatus{}, ErrSaleCancelled
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
func (s *Service) prequeue(ctx context.Context, snap Snapshot, nonce []byte, idempotencyKey string, paid int64) (AssignResult, error) {
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
			if !tk.OpensAt.IsZero() {
				// The schedule the store recorded the ticket under: final,
				// since a ticket stops the sale from moving.
				sum.OpensAt, sum.Round = tk.OpensAt, tk.Round
			}
			return AssignResult{
				Active: true, Phase: PhasePrequeue, RequestID: tk.RequestID, EventID: eventID,
				TicketHash: tk.Hash, Sale: &sum, Reused: reused,
				NextPoll: nextPrequeuePoll(sum.OpensAt.Sub(now)),
			}, nil
		case !errors.Is(err, ErrClosed):
			return AssignResult{}, unavailable("add ticket", err)
		}
		// Closed early by an instance whose clock is ahead, or cancelled:
		// fall through.
	}
	if _, err := s.closeSale(ctx, eventID); err != nil {
		return AssignResult{}, err
	}
	s.invalidate(eventID)
	r, err := s.read(ctx, eventID)
	if err != nil {
		return AssignResult{}, err
	}
	switch r.Event.Sale.Phase {
	case SalePrequeue:
		return AssignResult{}, ErrClosing
	case SaleCancelled:
		return AssignResult{}, ErrSaleCancelled
	}
	// The position comes from this read, and pays what it asks.
	return s.assign(ctx, r, eventID, idempotencyKey, nonce, paid)
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
	first, err := ss.CloseList(ctx, eventID, s.clk.Now)
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
	if !ok || sale.Committed || sale.Cancelled {
		return false, nil
	}
	round, moved := s.drawRound(sale)
	list, err := s.closedList(ctx, ss, eventID)
	if err != nil {
		return false, err
	}
	snap, err := s.fresh(ctx, eventID)
	if err != nil {
		return false, err
	}
	mr := draw.RootOfList(list)
	n := int64(list.Len())
	err = ss.CommitClose(ctx, CloseWrite{
		EventID: eventID, MerkleRoot: mr, N: n, Round: round, RoundMoved: moved,
		Root:   draw.Commit(s.drawSale(sale, round), list.Len(), mr),
		Shards: snap.Event.Shards, Counters: CoveringCounters(n, snap.Event.Shards), Now: s.clk.Now(),
	})
	s.invalidate(eventID)
	if errors.Is(err, ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("commit close", err)
	}
	if moved != "" {
		s.cfg.Logger.Warn("tier1 pre-queue closed late: the draw moves to a later round", "event", eventID,
			"closedAt", sale.ClosedAt, "scheduledRound", sale.Round, "round", round)
	}
	s.cfg.Logger.Info("tier1 pre-queue closed", "event", eventID, "n", n, "round", round, "root", fmt.Sprintf("%x", mr))
	return true, nil
}

// margin is the sale's margin (kept with it since issue 16; the configured
// one for a sale scheduled before).
func (s *Service) margin(sale SaleState) time.Duration {
	if sale.Margin > 0 {
		return sale.Margin
	}
	return s.cfg.Draw.Margin
}

// drawSale is what R binds of a closed sale drawn with round.
func (s *Service) drawSale(sale SaleState, round uint64) draw.Sale {
	return draw.Sale{
		EventID: sale.EventID, ScheduledAt: sale.Now, OpensAt: sale.OpensAt, Margin: s.margin(sale),
		ScheduledRound: sale.Round, Round: round, ClosedAt: sale.ClosedAt,
	}
}

// drawRound is the round a closed list is drawn with: the scheduled one if
// the list closed at least the margin before it, else the first round at
// least the margin after the close. Nobody knew that round's randomness
// when the list closed, whatever the close's delay.
func (s *Service) drawRound(sale SaleState) (uint64, string) {
	c, closeBy := s.cfg.Draw.Chain, sale.ClosedAt.Add(s.margin(sale))
	if !closeBy.After(c.TimeOf(sale.Round)) {
		return sale.Round, ""
	}
	return c.FirstRoundAtOrAfter(closeBy), draw.MovedLateClose
}

// closeIfDue closes the list of a sale whose opening has come, for any
// request after the opening (the advancer and the first assign do it too),
// and returns the snapshot afresh. One close at a time per instance; a
// failure is logged and left to the next request or tick.
func (s *Service) closeIfDue(ctx context.Context, snap Snapshot) Snapshot {
	if snap.Event.Sale.Phase != SalePrequeue || s.clk.Now().Before(snap.Event.Sale.OpensAt) {
		return snap
	}
	if !s.closing.TryLock() {
		return snap
	}
	defer s.closing.Unlock()
	if _, err := s.closeSale(ctx, snap.Event.ID); err != nil {
		s.cfg.Logger.Info("tier1 close on request failed", "event", snap.Event.ID, "err", err.Error())
		return snap
	}
	if fresh, err := s.fresh(ctx, snap.Event.ID); err == nil {
		return fresh
	}
	return snap
}

// noteOpening remembers the earliest opening a tick saw coming, so the
// advancer can wake for it (WaitTick).
func (s *Service) noteOpening(t time.Time) {
	s.openMu.Lock()
	if s.nextOpening.IsZero() || t.Before(s.nextOpening) {
		s.nextOpening = t
	}
	s.openMu.Unlock()
}

// WaitTick waits d until the next advancer tick, waking on the way at the
// opening of a sale the last tick saw coming to close its list then
// (CloseDue): lists close at their opening, not up to a tick later.
func (s *Service) WaitTick(ctx context.Context, d time.Duration) error {
	end := s.clk.Now().Add(d)
	if err := s.WakeForOpening(ctx, end); err != nil {
		return err
	}
	return s.cfg.Sleep(ctx, max(end.Sub(s.clk.Now()), 0))
}

// WakeForOpening sleeps until the opening the last tick saw coming, if it
// comes before end, and closes the lists that are due then. The advancer
// calls it after its last tick too, so an opening between two invocations
// is not left to the next one.
func (s *Service) WakeForOpening(ctx context.Context, end time.Time) error {
	now := s.clk.Now()
	s.openMu.Lock()
	open := s.nextOpening
	s.nextOpening = time.Time{}
	s.openMu.Unlock()
	if open.IsZero() || open.Before(now) || !open.Before(end) {
		return nil
	}
	if err := s.cfg.Sleep(ctx, open.Sub(now)); err != nil {
		return err
	}
	if err := s.CloseDue(ctx); err != nil {
		s.cfg.Logger.Warn("tier1 close at the opening", "err", err)
	}
	return nil
}

// CloseDue closes the list of every active sale whose opening has come;
// it moves no serving counter.
func (s *Service) CloseDue(ctx context.Context) error {
	ids, err := s.store.ActiveEvents(ctx)
	if err != nil {
		return unavailable("list events", err)
	}
	var errs []error
	for _, id := range ids {
		snap, err := s.fresh(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if sum := snap.Event.Sale; sum.Phase == SalePrequeue && !s.clk.Now().Before(sum.OpensAt) {
			if _, err := s.closeSaleAs(ctx, id, true); err != nil {
				errs = append(errs, fmt.Errorf("tier1: close %s: %w", id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Cancel cancels eventID's sale: the list closes for good, the sale is
// never drawn, and the draw document records when. A drawn sale cannot be
// cancelled (ErrSaleDrawn); cancelling twice is harmless.
func (s *Service) Cancel(ctx context.Context, eventID string) (SaleStatus, error) {
	if !ValidID(eventID) {
		return SaleStatus{}, ErrInvalidEvent
	}
	ss, err := s.sales()
	if err != nil {
		return SaleStatus{}, err
	}
	err = ss.CancelSale(ctx, eventID, s.clk.Now())
	s.invalidate(eventID)
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrSaleDrawn):
		return SaleStatus{}, err
	case err != nil:
		return SaleStatus{}, unavailable("cancel sale", err)
	}
	s.cfg.Logger.Info("tier1 sale cancelled", "event", eventID)
	return s.SaleStatus(ctx, eventID)
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
	DrawCancelled DrawOutcome = "cancelled"    // the sale was cancelled: never drawn
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
	case sale.Cancelled:
		return DrawCancelled, nil
	case !sale.Committed:
		return DrawNotClosed, nil
	case s.clk.Now().Before(s.cfg.Draw.Chain.TimeOf(sale.DrawRound)):
		return DrawWaiting, nil
	}
	if fmt.Sprintf("%x", sale.ChainHash) != fmt.Sprintf("%x", []byte(s.cfg.Draw.Chain.Hash)) {
		return DrawNoBeacon, fmt.Errorf("tier1: draw %s: scheduled on chain %x, configured chain %x", eventID, sale.ChainHash, []byte(s.cfg.Draw.Chain.Hash))
	}
	b, err := s.cfg.Draw.Beacon.Fetch(ctx, sale.DrawRound)
	if errors.Is(err, draw.ErrRoundNotYet) {
		return DrawWaiting, nil
	}
	if err != nil {
		s.cfg.Logger.Info("tier1 draw waits for the beacon", "event", eventID, "round", sale.DrawRound, "err", err.Error())
		return DrawNoBeacon, nil
	}
	list, err := s.closedList(ctx, ss, eventID)
	if err != nil {
		return "", err
	}
	mr := draw.RootOfList(list)
	if draw.Commit(s.drawSale(sale, sale.DrawRound), list.Len(), mr) != sale.Root || int64(list.Len()) != sale.N {
		return "", fmt.Errorf("tier1: draw %s: stored list (n=%d) does not match the committed root (n=%d)", eventID, list.Len(), sale.N)
	}
	if err := s.putDrawBlobs(ctx, ss, eventID, list, draw.Order(b.Randomness, sale.Root, list)); err != nil {
		return "", err
	}
	err = ss.CommitDraw(ctx, DrawWrite{EventID: eventID, Beacon: b, Now: s.clk.Now()})
	s.invalidate(eventID)
	if errors.Is(err, ErrConflict) {
		return DrawAlready, nil
	}
	if err != nil {
		return "", unavailable("commit draw", err)
	}
	s.cfg.Logger.Info("tier1 drawn", "event", eventID, "n", list.Len(), "round", sale.DrawRound)
	return DrawDone, nil
}

// closedList reads a closed list from the store into a sealed draw.List,
// page by page: 32 bytes a ticket, nothing else kept.
func (s *Service) closedList(ctx context.Context, ss SaleStore, eventID string) (*draw.List, error) {
	list := draw.NewList(0)
	if err := ss.EachTicketHash(ctx, eventID, func(hs []draw.Hash) error { list.Add(hs...); return nil }); err != nil {
		return nil, unavailable("list tickets", err)
	}
	list.Seal()
	return list, nil
}

// drawBlobBatch is how many bytes of draw blobs go to the store at once.
const drawBlobBatch = 4 << 20

// putDrawBlobs streams a drawn list's chunks to the store in batches of
// about drawBlobBatch bytes, then the index, so a draw never holds its
// whole stored form.
func (s *Service) putDrawBlobs(ctx context.Context, ss SaleStore, eventID string, list *draw.List, pos []uint32) error {
	var batch [][]byte
	first, size := 1, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := ss.PutDrawBlobs(ctx, eventID, first, batch); err != nil {
			return unavailable("draw blobs", err)
		}
		first += len(batch)
		batch, size = batch[:0], 0
		return nil
	}
	return draw.EncodeChunks(list, pos, func(i int, blob []byte) error {
		if i == 0 { // the index comes last
			if err := flush(); err != nil {
				return err
			}
			first = 0
		}
		batch, size = append(batch, blob), size+len(blob)
		if size >= drawBlobBatch || i == 0 {
			return flush()
		}
		return nil
	})
}

// tickSale moves a scheduled sale along for the advancer: close at the
// opening, draw once the round is out. It returns the skip reason while the
// serving counter must not move yet ("" once drawn).
func (s *Service) tickSale(ctx context.Context, snap Snapshot) (string, error) {
	sum := snap.Event.Sale
	switch sum.Phase {
	case SaleNone, SaleDrawn:
		return "", nil
	case SaleCancelled:
		return PhaseCancelled, nil
	case SalePrequeue:
		if s.clk.Now().Before(sum.OpensAt) {
			s.noteOpening(sum.OpensAt)
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
	round := st.CurrentRound()
	d := draw.Doc{
		Rule: draw.Rule, EventID: eventID, Status: st.Phase(), ScheduledAt: st.Now.UTC(), OpensAt: st.OpensAt.UTC(),
		MarginMs: s.margin(st.SaleState).Milliseconds(), Chain: c,
		ScheduledRound: st.Round, ScheduledRoundAt: c.TimeOf(st.Round),
		Round: round, RoundAt: c.TimeOf(round), RoundMoved: st.RoundMoved,
	}
	if st.Closed && !st.ClosedAt.IsZero() {
		t := st.ClosedAt.UTC()
		d.ClosedAt = &t
	}
	if st.Cancelled {
		t := st.CancelledAt.UTC()
		d.CancelledAt = &t
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

// InlineDrawMax is the largest list the public draw route draws itself
// when the round is out before any advancer drew: a draw of more tickets
// is left to the advancer, whose function has the time (BENCHMARKS.md).
const InlineDrawMax = 250_000

// DrawDocDrawing is DrawDoc for the public route: when the round is out and
// no advancer has drawn yet, the first call draws (one per instance at a
// time; the store's conditional write keeps it to one overall).
func (s *Service) DrawDocDrawing(ctx context.Context, eventID string) (draw.Doc, error) {
	if ValidID(eventID) {
		if snap, err := s.snapshot(ctx, eventID); err == nil {
			s.closeIfDue(ctx, snap)
		}
	}
	d, err := s.DrawDoc(ctx, eventID)
	if err != nil || d.Status != draw.StatusDrawing || d.Root == nil || s.clk.Now().Before(d.RoundAt) {
		return d, err
	}
	if d.N != nil && *d.N > InlineDrawMax {
		return d, nil // the advancer draws it, with the memory and time it takes
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
	case SaleCancelled:
		return CheckResult{}, ErrSaleCancelled
	case SalePrequeue:
		if !now.Before(sum.OpensAt) {
			// Any request after the opening closes the list.
			snap = s.closeIfDue(ctx, snap)
			if sum = snap.Event.Sale; sum.Phase == SaleDrawing {
				return CheckResult{Phase: PhaseDrawing, Sale: &sum, TicketHash: tk.Hash, NextPoll: 1}, nil
			}
		}
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
