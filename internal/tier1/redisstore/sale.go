package redisstore

import (
	"context"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/tier1"
)

var (
	//go:embed schedule.lua
	scheduleLua string
	//go:embed ticket.lua
	ticketLua string
	//go:embed close.lua
	closeLua string
	//go:embed commit_close.lua
	commitCloseLua string
	//go:embed commit_draw.lua
	commitDrawLua string
	//go:embed cancel.lua
	cancelLua string

	scheduleScript    = redis.NewScript(scheduleLua)
	ticketScript      = redis.NewScript(ticketLua)
	closeScript       = redis.NewScript(closeLua)
	commitCloseScript = redis.NewScript(commitCloseLua)
	commitDrawScript  = redis.NewScript(commitDrawLua)
	cancelScript      = redis.NewScript(cancelLua)
)

var _ tier1.SaleStore = (*Store)(nil)

// saleHash is the {E}:sale hash.
type saleHash struct {
	Opens     int64  `redis:"opens"`
	From      int64  `redis:"from"`
	Round     uint64 `redis:"round"`
	Chain     string `redis:"chain"`
	Scheduled int64  `redis:"scheduled"`
	Margin    int64  `redis:"margin"`
	Closed    bool   `redis:"closed"`
	ClosedAt  int64  `redis:"closedat"`
	MRoot     string `redis:"mroot"`
	Root      string `redis:"root"`
	N         int64  `redis:"n"`
	DRound    uint64 `redis:"dround"`
	Moved     string `redis:"moved"`
	Cancelled bool   `redis:"cancelled"`
	CancelAt  int64  `redis:"cancelledat"`
	Drawn     bool   `redis:"drawn"`
	BRound    uint64 `redis:"bround"`
	BRand     string `redis:"brand"`
	BSig      string `redis:"bsig"`
	DrawnAt   int64  `redis:"drawnat"`
}

func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// PutSchedule runs schedule.lua.
func (s *Store) PutSchedule(ctx context.Context, sch tier1.Schedule) error {
	res, err := scheduleScript.Run(ctx, s.rdb, []string{s.keys.event(sch.EventID), s.keys.sale(sch.EventID), s.keys.tickets(sch.EventID)},
		sch.OpensAt.UnixMilli(), msOrZero(sch.PrequeueFrom), sch.Round, hex.EncodeToString(sch.ChainHash), sch.Now.UnixMilli(),
		sch.Margin.Milliseconds()).Text()
	if err != nil {
		return fmt.Errorf("redisstore: schedule %s: %w", sch.EventID, err)
	}
	switch res {
	case "closed":
		return tier1.ErrClosed
	case "ticketed":
		return tier1.ErrTicketed
	case "cancelled":
		return tier1.ErrSaleCancelled
	}
	return nil
}

// Sale reads the {E}:sale hash.
func (s *Store) Sale(ctx context.Context, eventID string) (tier1.SaleState, bool, error) {
	cmd := s.rdb.HGetAll(ctx, s.keys.sale(eventID))
	if err := cmd.Err(); err != nil {
		return tier1.SaleState{}, false, fmt.Errorf("redisstore: sale %s: %w", eventID, err)
	}
	if len(cmd.Val()) == 0 {
		return tier1.SaleState{}, false, nil
	}
	var h saleHash
	if err := cmd.Scan(&h); err != nil {
		return tier1.SaleState{}, false, fmt.Errorf("redisstore: sale %s: %w", eventID, err)
	}
	st, err := h.state(eventID)
	if err != nil {
		return tier1.SaleState{}, false, fmt.Errorf("redisstore: sale %s: %w", eventID, err)
	}
	return st, true, nil
}

func (h saleHash) state(eventID string) (tier1.SaleState, error) {
	chain, err1 := hex.DecodeString(h.Chain)
	st := tier1.SaleState{
		Schedule: tier1.Schedule{
			EventID: eventID, OpensAt: clock.FromUnixMilli(h.Opens), PrequeueFrom: clock.FromUnixMilli(h.From),
			Round: h.Round, ChainHash: chain, Now: clock.FromUnixMilli(h.Scheduled),
			Margin: time.Duration(h.Margin) * time.Millisecond,
		},
		Closed: h.Closed, ClosedAt: clock.FromUnixMilli(h.ClosedAt),
		Committed: h.Root != "", N: h.N, DrawRound: h.DRound, RoundMoved: h.Moved,
		Drawn: h.Drawn, DrawnAt: clock.FromUnixMilli(h.DrawnAt),
		Cancelled: h.Cancelled, CancelledAt: clock.FromUnixMilli(h.CancelAt),
	}
	var errs []error
	errs = append(errs, err1, decodeHash(h.MRoot, &st.MerkleRoot), decodeHash(h.Root, &st.Root))
	if h.Drawn {
		rnd, err2 := hex.DecodeString(h.BRand)
		sig, err3 := hex.DecodeString(h.BSig)
		st.Beacon = draw.Beacon{Round: h.BRound, Randomness: rnd, Signature: sig}
		errs = append(errs, err2, err3)
	}
	return st, errors.Join(errs...)
}

func decodeHash(s string, out *draw.Hash) error {
	if s == "" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(out) {
		return fmt.Errorf("hash %q malformed", s)
	}
	copy(out[:], b)
	return nil
}

// AddTicket runs ticket.lua.
func (s *Store) AddTicket(ctx context.Context, t tier1.NewTicket) (tier1.Ticket, bool, error) {
	useIdem := "0"
	if t.IdempotencyKey != "" {
		useIdem = "1"
	}
	keys := []string{s.keys.sale(t.EventID), s.keys.tickets(t.EventID), s.keys.ticketIdem(t.EventID, t.IdempotencyKey)}
	res, err := ticketScript.Run(ctx, s.rdb, keys,
		t.RequestID, hex.EncodeToString(t.Hash[:]), t.TTL.Milliseconds(), useIdem, t.Now.UnixMilli()).Slice()
	if err != nil {
		return tier1.Ticket{}, false, fmt.Errorf("redisstore: add ticket %s: %w", t.EventID, err)
	}
	switch res[0] {
	case "closed":
		return tier1.Ticket{}, false, tier1.ErrClosed
	case "reused":
		rid, rest, _ := strings.Cut(fmt.Sprint(res[1]), ":")
		tk, err := decodeTicket(t.EventID, rid, rest)
		if err == nil {
			err = ticketSchedule(&tk, res[2:])
		}
		return tk, true, err
	}
	tk := tier1.Ticket{EventID: t.EventID, RequestID: t.RequestID, Hash: t.Hash, CreatedAt: clock.FromUnixMilli(t.Now.UnixMilli())}
	return tk, false, ticketSchedule(&tk, res[1:])
}

// ticketSchedule reads ticket.lua's opens and round into tk.
func ticketSchedule(tk *tier1.Ticket, v []any) error {
	if len(v) != 2 {
		return fmt.Errorf("redisstore: ticket.lua answered %d schedule fields", len(v))
	}
	opens, err1 := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
	round, err2 := strconv.ParseUint(fmt.Sprint(v[1]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("redisstore: ticket schedule: %w", err)
	}
	tk.OpensAt, tk.Round = clock.FromUnixMilli(opens), round
	return nil
}

// decodeTicket reads "<hash hex>:<created ms>".
func decodeTicket(eventID, requestID, v string) (tier1.Ticket, error) {
	hs, ms, ok := strings.Cut(v, ":")
	created, err := strconv.ParseInt(ms, 10, 64)
	tk := tier1.Ticket{EventID: eventID, RequestID: requestID, CreatedAt: clock.FromUnixMilli(created)}
	if !ok || err != nil || decodeHash(hs, &tk.Hash) != nil || hs == "" {
		return tier1.Ticket{}, fmt.Errorf("redisstore: ticket record %q malformed", v)
	}
	return tk, nil
}

// Ticket reads one ticket.
func (s *Store) Ticket(ctx context.Context, eventID, requestID string) (tier1.Ticket, error) {
	v, err := s.rdb.HGet(ctx, s.keys.tickets(eventID), requestID).Result()
	if errors.Is(err, redis.Nil) {
		return tier1.Ticket{}, tier1.ErrNotFound
	}
	if err != nil {
		return tier1.Ticket{}, fmt.Errorf("redisstore: ticket %s: %w", eventID, err)
	}
	return decodeTicket(eventID, requestID, v)
}

// CloseList runs close.lua.
func (s *Store) CloseList(ctx context.Context, eventID string, now func() time.Time) (bool, error) {
	n, err := closeScript.Run(ctx, s.rdb, []string{s.keys.sale(eventID)}, now().UnixMilli()).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: close %s: %w", eventID, err)
	}
	if n < 0 {
		return false, tier1.ErrNotFound
	}
	return n == 1, nil
}

// ticketScanCount is how many tickets one HSCAN step asks for: a million
// tickets come back in about a hundred round trips, none blocking Redis long.
const ticketScanCount = 10_000

// EachTicketHash scans the tickets hash, a page of ticketScanCount at a
// time. HSCAN may return an element twice while the hash rehashes; the list
// is closed, so that is only a repeat (draw.List drops it).
func (s *Store) EachTicketHash(ctx context.Context, eventID string, fn func([]draw.Hash) error) error {
	page := make([]draw.Hash, 0, ticketScanCount)
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, s.keys.tickets(eventID), cursor, "", ticketScanCount).Result()
		if err != nil {
			return fmt.Errorf("redisstore: list tickets %s: %w", eventID, err)
		}
		page = page[:0]
		for i := 1; i < len(kv); i += 2 {
			// Only the hash is needed: decode it in place, without
			// decodeTicket's allocations (a close reads millions).
			var h draw.Hash
			if v := kv[i]; len(v) < 2*len(h)+2 || v[2*len(h)] != ':' || !unhexInto(h[:], v[:2*len(h)]) {
				return fmt.Errorf("redisstore: ticket record %q malformed", v)
			}
			page = append(page, h)
		}
		if err := fn(page); err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// unhexInto decodes lowercase hex s into dst (len(s) = 2·len(dst)).
func unhexInto(dst []byte, s string) bool {
	nib := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'a' <= c && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	for i := range dst {
		hi, ok1 := nib(s[2*i])
		lo, ok2 := nib(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// CommitClose runs commit_close.lua.
func (s *Store) CommitClose(ctx context.Context, w tier1.CloseWrite) error {
	args := []any{hex.EncodeToString(w.MerkleRoot[:]), hex.EncodeToString(w.Root[:]), w.N, w.Now.UnixMilli(), w.Shards, w.Round, w.RoundMoved}
	for _, c := range w.Counters {
		args = append(args, c)
	}
	res, err := commitCloseScript.Run(ctx, s.rdb,
		[]string{s.keys.event(w.EventID), s.keys.sale(w.EventID), s.keys.shards(w.EventID)}, args...).Text()
	if err != nil {
		return fmt.Errorf("redisstore: commit close %s: %w", w.EventID, err)
	}
	switch res {
	case "ok":
		return nil
	case "open":
		return fmt.Errorf("redisstore: commit close %s: list still open", w.EventID)
	}
	return tier1.ErrConflict
}

// PutDrawBlobs writes the blobs in one pipeline.
func (s *Store) PutDrawBlobs(ctx context.Context, eventID string, first int, blobs [][]byte) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range blobs {
			p.Set(ctx, s.keys.drawBlob(eventID, first+i), b, 0)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: draw blobs %s: %w", eventID, err)
	}
	return nil
}

// CommitDraw runs commit_draw.lua.
func (s *Store) CommitDraw(ctx context.Context, w tier1.DrawWrite) error {
	res, err := commitDrawScript.Run(ctx, s.rdb, []string{s.keys.event(w.EventID), s.keys.sale(w.EventID)},
		w.Beacon.Round, hex.EncodeToString(w.Beacon.Randomness), hex.EncodeToString(w.Beacon.Signature), w.Now.UnixMilli()).Text()
	if err != nil {
		return fmt.Errorf("redisstore: commit draw %s: %w", w.EventID, err)
	}
	switch res {
	case "ok":
		return nil
	case "open":
		return fmt.Errorf("redisstore: commit draw %s: R not committed", w.EventID)
	}
	return tier1.ErrConflict
}

// CancelSale runs cancel.lua.
func (s *Store) CancelSale(ctx context.Context, eventID string, now time.Time) error {
	res, err := cancelScript.Run(ctx, s.rdb, []string{s.keys.event(eventID), s.keys.sale(eventID)}, now.UnixMilli()).Text()
	if err != nil {
		return fmt.Errorf("redisstore: cancel %s: %w", eventID, err)
	}
	switch res {
	case "none":
		return tier1.ErrNotFound
	case "drawn":
		return tier1.ErrSaleDrawn
	}
	return nil
}

// DrawBlob reads one blob.
func (s *Store) DrawBlob(ctx context.Context, eventID string, i int) ([]byte, error) {
	b, err := s.rdb.Get(ctx, s.keys.drawBlob(eventID, i)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, tier1.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: draw blob %s/%d: %w", eventID, i, err)
	}
	return b, nil
}

// saleSummary decodes the event hash's sale fields.
func saleSummary(phase int, opens, from int64, round uint64, root string) (tier1.SaleSummary, error) {
	sum := tier1.SaleSummary{Phase: phase, OpensAt: clock.FromUnixMilli(opens), PrequeueFrom: clock.FromUnixMilli(from), Round: round}
	if root != "" {
		b, err := hex.DecodeString(root)
		if err != nil {
			return tier1.SaleSummary{}, fmt.Errorf("sale root %q: %w", root, err)
		}
		sum.Root = b
	}
	return sum, nil
}
