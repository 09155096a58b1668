package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/tier1"
)

// Scheduled sales (tier1.SaleStore) add to the events table:
//   - pk=<eventId>, sk="sale": the sale (schedule, close, roots, beacon);
//     the event item keeps its summary (salePhase, saleOpens, saleFrom,
//     saleRound, saleRoot), so snapshots need no extra read;
//   - pk=<eventId>#tBB, sk="t#<requestId>": a pre-queue ticket (h,
//     createdAt, state) in bucket BB = FNV-1a(requestId) mod ticketBuckets,
//     and sk="open" that bucket's header: the schedule (opens, round,
//     written with it), ticketed=true once its first ticket was settled,
//     and closed=true when the list closes. A ticket is written pending and
//     settled against its header (AddTicket), so no ticket is both answered
//     and left out of the list, and none is answered under a schedule that
//     then moves. Each bucket is its own partition: pre-queue writes spread
//     over ticketBuckets partitions;
//   - pk=<eventId>#dNNNN, sk="blob": blob NNNN of the drawn order (the index,
//     then chunks of ≤ 1,024 tickets ≈ 37 KB; the index stays ≤ 256 KB), each
//     on its own partition and far below the 400 KB item limit.
//
// Positions table: requestId="tidem#<eventId>#<key>" is the first ticket of
// an Idempotency-Key (target, h, createdAt).

// ticketBuckets is the number of ticket partitions. A ticket costs its
// bucket's partition 2 WCU (put, settle) and one strongly consistent read
// of the header: 32 buckets take ~16,000 tickets/s before DynamoDB's 1,000
// WCU/s per partition throttle.
const ticketBuckets = 32

const (
	skSale       = "sale"
	skHeader     = "open"
	skBlob       = "blob"
	ticketPrefix = "t#"
	tidemPrefix  = "tidem#"
)

var _ tier1.SaleStore = (*Store)(nil)

func saleKey(eventID string) itemKey { return itemKey{PK: eventID, SK: skSale} }

func bucketOf(requestID string) int {
	h := fnv.New32a()
	h.Write([]byte(requestID))
	return int(h.Sum32() % ticketBuckets)
}

func bucketPK(eventID string, b int) string { return fmt.Sprintf("%s#t%02d", eventID, b) }

func headerKey(eventID string, b int) itemKey { return itemKey{PK: bucketPK(eventID, b), SK: skHeader} }

func ticketKey(eventID, requestID string) itemKey {
	return itemKey{PK: bucketPK(eventID, bucketOf(requestID)), SK: ticketPrefix + requestID}
}

func blobKey(eventID string, i int) itemKey {
	return itemKey{PK: fmt.Sprintf("%s#d%04d", eventID, i), SK: skBlob}
}

func tidemID(eventID, key string) string { return tidemPrefix + eventID + "#" + key }

// saleItem is the sale item.
type saleItem struct {
	Opens     int64  `dynamodbav:"opens"`
	From      int64  `dynamodbav:"from"`
	Round     uint64 `dynamodbav:"round"`
	Chain     []byte `dynamodbav:"chain"`
	Scheduled int64  `dynamodbav:"scheduled"`
	Margin    int64  `dynamodbav:"margin"` // ms
	Closing   bool   `dynamodbav:"closing"`
	Closed    bool   `dynamodbav:"closed"`
	ClosedAt  int64  `dynamodbav:"closedAt"`
	MRoot     []byte `dynamodbav:"mroot"`
	Root      []byte `dynamodbav:"root"`
	N         int64  `dynamodbav:"n"`
	DRound    uint64 `dynamodbav:"dround"`
	Moved     string `dynamodbav:"moved"`
	Cancelled bool   `dynamodbav:"cancelled"`
	CancelAt  int64  `dynamodbav:"cancelledAt"`
	Drawn     bool   `dynamodbav:"drawn"`
	BRound    uint64 `dynamodbav:"bround"`
	BRand     []byte `dynamodbav:"brand"`
	BSig      []byte `dynamodbav:"bsig"`
	DrawnAt   int64  `dynamodbav:"drawnAt"`
}

// headerItem is a ticket bucket's header.
type headerItem struct {
	Opens    int64  `dynamodbav:"opens"`
	Round    uint64 `dynamodbav:"round"`
	Ticketed bool   `dynamodbav:"ticketed"`
	Closed   bool   `dynamodbav:"closed"`
}

// ticketItem is a pre-queue ticket.
type ticketItem struct {
	H         []byte `dynamodbav:"h"`
	CreatedAt int64  `dynamodbav:"createdAt"`
	State     string `dynamodbav:"state"` // pending, ok or void
}

// tidemRecord is a positions-table item for a pre-queue Idempotency-Key.
type tidemRecord struct {
	RequestID string `dynamodbav:"requestId"`
	Target    string `dynamodbav:"target"`
	H         []byte `dynamodbav:"h"`
	CreatedAt int64  `dynamodbav:"createdAt"`
	TTL       int64  `dynamodbav:"ttl"`
}

func (s *Store) key(k itemKey) map[string]types.AttributeValue {
	m, err := attributevalue.MarshalMap(k)
	if err != nil {
		panic("dynamostore: marshal key: " + err.Error()) // two strings always marshal
	}
	return m
}

func vals(m map[string]any) (map[string]types.AttributeValue, error) {
	return attributevalue.MarshalMap(m)
}

func msTimeOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// PutSchedule writes the sale item, the event's summary and the schedule
// on every bucket header in one transaction, on condition that the sale is
// neither closing nor cancelled and that no header has settled a ticket
// (AddTicket marks its header before answering).
func (s *Store) PutSchedule(ctx context.Context, sch tier1.Schedule) error {
	v, err := vals(map[string]any{
		":opens": sch.OpensAt.UnixMilli(), ":from": msTimeOrZero(sch.PrequeueFrom), ":round": sch.Round,
		":chain": sch.ChainHash, ":now": sch.Now.UnixMilli(), ":f": false, ":margin": sch.Margin.Milliseconds(),
	})
	if err != nil {
		return fmt.Errorf("dynamostore: schedule %s: %w", sch.EventID, err)
	}
	ev, err := vals(map[string]any{":one": tier1.SalePrequeue, ":opens": sch.OpensAt.UnixMilli(), ":from": msTimeOrZero(sch.PrequeueFrom), ":round": sch.Round})
	if err != nil {
		return fmt.Errorf("dynamostore: schedule %s: %w", sch.EventID, err)
	}
	hv, err := vals(map[string]any{":opens": sch.OpensAt.UnixMilli(), ":round": sch.Round, ":t": true})
	if err != nil {
		return fmt.Errorf("dynamostore: schedule %s: %w", sch.EventID, err)
	}
	tbl := aws.String(s.cfg.EventsTable)
	items := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: tbl, Key: s.key(saleKey(sch.EventID)),
			UpdateExpression:          aws.String("SET opens = :opens, #from = :from, round = :round, chain = :chain, scheduled = :now, margin = :margin, closing = :f, closed = :f"),
			ConditionExpression:       aws.String("(attribute_not_exists(closing) OR closing = :f) AND (attribute_not_exists(cancelled) OR cancelled = :f)"),
			ExpressionAttributeNames:  map[string]string{"#from": "from"},
			ExpressionAttributeValues: v,
		}},
		{Update: &types.Update{
			TableName: tbl, Key: s.key(eventKey(sch.EventID)),
			UpdateExpression:          aws.String("SET salePhase = :one, saleOpens = :opens, saleFrom = :from, saleRound = :round REMOVE saleRoot"),
			ExpressionAttributeValues: ev,
		}},
	}
	for b := range ticketBuckets {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: tbl, Key: s.key(headerKey(sch.EventID, b)),
			UpdateExpression:          aws.String("SET opens = :opens, round = :round"),
			ConditionExpression:       aws.String("attribute_not_exists(ticketed) OR ticketed <> :t"),
			ExpressionAttributeValues: hv,
		}})
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if idx := failedConditions(err); len(idx) > 0 {
		if idx[0] > 0 {
			return tier1.ErrTicketed
		}
		st, _, err := s.Sale(ctx, sch.EventID)
		if err != nil {
			return err
		}
		if st.Cancelled {
			return tier1.ErrSaleCancelled
		}
		return tier1.ErrClosed
	}
	if err != nil {
		return wrap("schedule "+sch.EventID, err)
	}
	return nil
}

// Sale reads the sale item strongly consistently.
func (s *Store) Sale(ctx context.Context, eventID string) (tier1.SaleState, bool, error) {
	var it saleItem
	found, err := s.readItem(ctx, s.cfg.EventsTable, s.key(saleKey(eventID)), "sale "+eventID, &it)
	if err != nil || !found {
		return tier1.SaleState{}, false, err
	}
	st := tier1.SaleState{
		Schedule: tier1.Schedule{
			EventID: eventID, OpensAt: clock.FromUnixMilli(it.Opens), PrequeueFrom: clock.FromUnixMilli(it.From),
			Round: it.Round, ChainHash: it.Chain, Now: clock.FromUnixMilli(it.Scheduled),
			Margin: time.Duration(it.Margin) * time.Millisecond,
		},
		Closed: it.Closed, ClosedAt: clock.FromUnixMilli(it.ClosedAt), Committed: len(it.Root) > 0, N: it.N,
		DrawRound: it.DRound, RoundMoved: it.Moved,
		Drawn: it.Drawn, DrawnAt: clock.FromUnixMilli(it.DrawnAt),
		Cancelled: it.Cancelled, CancelledAt: clock.FromUnixMilli(it.CancelAt),
	}
	if err := errors.Join(copyHash(&st.MerkleRoot, it.MRoot), copyHash(&st.Root, it.Root)); err != nil {
		return tier1.SaleState{}, false, fmt.Errorf("dynamostore: decode sale %s: %w", eventID, err)
	}
	if it.Drawn {
		st.Beacon = draw.Beacon{Round: it.BRound, Randomness: it.BRand, Signature: it.BSig}
	}
	return st, true, nil
}

func copyHash(dst *draw.Hash, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if len(b) != len(dst) {
		return fmt.Errorf("hash of %d bytes", len(b))
	}
	copy(dst[:], b)
	return nil
}

// Ticket states: a ticket is written pending, and becomes ok only if its
// bucket is still open after the write; the closer voids what is pending.
// Both flips are conditional on the ticket item itself, so exactly one wins.
const (
	statePending = "pending"
	stateOK      = "ok"
	stateVoid    = "void"
)

// AddTicket records a ticket without a transaction: the Idempotency-Key's
// record first (when there is a key), then the ticket as pending, then a
// strongly consistent read of its bucket header, then pending → ok if the
// header is open (or → void if closed). A closer closes every header before
// it lists, and voids the pending tickets it finds; see docs/draw.md for why
// no ticket can be both answered and left out of the list.
func (s *Store) AddTicket(ctx context.Context, t tier1.NewTicket) (tier1.Ticket, bool, error) {
	tk := tier1.Ticket{EventID: t.EventID, RequestID: t.RequestID, Hash: t.Hash, CreatedAt: clock.FromUnixMilli(t.Now.UnixMilli())}
	reused := false
	if t.IdempotencyKey != "" {
		prev, ok, err := s.tidem(ctx, t.EventID, t.IdempotencyKey)
		if err != nil {
			return tier1.Ticket{}, false, err
		}
		if !ok {
			rec, err := attributevalue.MarshalMap(tidemRecord{
				RequestID: tidemID(t.EventID, t.IdempotencyKey), Target: t.RequestID, H: t.Hash[:],
				CreatedAt: t.Now.UnixMilli(), TTL: t.Now.Add(t.TTL).Unix(),
			})
			if err != nil {
				return tier1.Ticket{}, false, fmt.Errorf("dynamostore: add ticket %s: %w", t.EventID, err)
			}
			_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(s.cfg.PositionsTable), Item: rec, ConditionExpression: aws.String("attribute_not_exists(requestId)"),
			})
			if conditionFailed(err) {
				if prev, ok, err = s.tidem(ctx, t.EventID, t.IdempotencyKey); err == nil && !ok {
					err = fmt.Errorf("dynamostore: idempotency record of %s vanished", t.EventID)
				}
			}
			if err != nil && !conditionFailed(err) {
				return tier1.Ticket{}, false, wrap("add ticket "+t.EventID, err)
			}
		}
		if ok {
			// A replay: the first request may have died before its ticket was
			// settled, so settle it (a no-op when it was).
			tk, reused = prev, true
		}
	}
	if err := s.settleTicket(ctx, &tk); err != nil {
		return tier1.Ticket{}, false, err
	}
	return tk, reused, nil
}

// settleTicket writes tk pending unless it exists, then settles it against
// its bucket header, and sets tk's schedule from the header. It returns
// tier1.ErrClosed for a void ticket.
func (s *Store) settleTicket(ctx context.Context, tk *tier1.Ticket) error {
	item, err := attributevalue.MarshalMap(ticketItem{H: tk.Hash[:], CreatedAt: tk.CreatedAt.UnixMilli(), State: statePending})
	if err != nil {
		return fmt.Errorf("dynamostore: add ticket %s: %w", tk.EventID, err)
	}
	for k, v := range s.key(ticketKey(tk.EventID, tk.RequestID)) {
		item[k] = v
	}
	tbl := aws.String(s.cfg.EventsTable)
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if err != nil && !conditionFailed(err) {
		return wrap("add ticket "+tk.EventID, err)
	}
	hdr, err := s.claimHeader(ctx, tk.EventID, bucketOf(tk.RequestID))
	if err != nil {
		return err
	}
	to := stateOK
	if hdr.Closed {
		to = stateVoid
	}
	if hdr.Opens != 0 {
		tk.OpensAt, tk.Round = clock.FromUnixMilli(hdr.Opens), hdr.Round
	}
	final, err := s.flipTicket(ctx, tk.EventID, tk.RequestID, to)
	if err != nil {
		return err
	}
	if final != stateOK {
		return tier1.ErrClosed
	}
	return nil
}

// claimHeader reads a bucket's header strongly consistently and, if it is
// open and has settled no ticket yet, marks it ticketed under the schedule
// it read, so that PutSchedule can no longer move the sale. A schedule (or
// close) that lands between the read and the mark fails the mark's
// condition, and the header is read again.
func (s *Store) claimHeader(ctx context.Context, eventID string, b int) (headerItem, error) {
	key := s.key(headerKey(eventID, b))
	for attempt := 0; ; attempt++ {
		var h headerItem
		if _, err := s.readItem(ctx, s.cfg.EventsTable, key, "ticket header "+eventID, &h); err != nil {
			return headerItem{}, err
		}
		if h.Closed || h.Ticketed {
			return h, nil
		}
		v, err := vals(map[string]any{":t": true, ":f": false, ":opens": h.Opens})
		if err != nil {
			return headerItem{}, err
		}
		cond := "(attribute_not_exists(closed) OR closed = :f) AND opens = :opens"
		if h.Opens == 0 {
			// A sale scheduled before headers carried the schedule.
			cond, v = "attribute_not_exists(closed) OR closed = :f", map[string]types.AttributeValue{":t": v[":t"], ":f": v[":f"]}
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.cfg.EventsTable), Key: key,
			UpdateExpression: aws.String("SET ticketed = :t"), ConditionExpression: aws.String(cond),
			ExpressionAttributeValues: v,
		})
		if err == nil {
			h.Ticketed = true
			return h, nil
		}
		if !conditionFailed(err) || attempt >= 4 {
			return headerItem{}, wrap("claim ticket header "+eventID, err)
		}
	}
}

// flipTicket moves a pending ticket to `to` and returns the state it ends
// in: `to`, or whatever another writer flipped it to first.
func (s *Store) flipTicket(ctx context.Context, eventID, requestID, to string) (string, error) {
	v, err := vals(map[string]any{":to": to, ":p": statePending})
	if err != nil {
		return "", err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.cfg.EventsTable), Key: s.key(ticketKey(eventID, requestID)),
		UpdateExpression:          aws.String("SET #st = :to"),
		ConditionExpression:       aws.String("#st = :p"),
		ExpressionAttributeNames:  map[string]string{"#st": "state"},
		ExpressionAttributeValues: v,
	})
	if err == nil {
		return to, nil
	}
	if !conditionFailed(err) {
		return "", wrap("settle ticket "+eventID, err)
	}
	_, state, err := s.readTicket(ctx, eventID, requestID)
	return state, err
}

func (s *Store) tidem(ctx context.Context, eventID, key string) (tier1.Ticket, bool, error) {
	var rec tidemRecord
	found, err := s.readItem(ctx, s.cfg.PositionsTable, recordKey{RequestID: tidemID(eventID, key)}, "idempotency key "+eventID, &rec)
	if err != nil || !found {
		return tier1.Ticket{}, false, err
	}
	tk := tier1.Ticket{EventID: eventID, RequestID: rec.Target, CreatedAt: clock.FromUnixMilli(rec.CreatedAt)}
	if err := copyHash(&tk.Hash, rec.H); err != nil {
		return tier1.Ticket{}, false, fmt.Errorf("dynamostore: idempotency key %s: %w", eventID, err)
	}
	return tk, true, nil
}

// Ticket reads one ticket; a void one (its write lost to the close) is
// not found.
func (s *Store) Ticket(ctx context.Context, eventID, requestID string) (tier1.Ticket, error) {
	tk, state, err := s.readTicket(ctx, eventID, requestID)
	if err != nil {
		return tier1.Ticket{}, err
	}
	if state != stateOK {
		return tier1.Ticket{}, tier1.ErrNotFound
	}
	return tk, nil
}

func (s *Store) readTicket(ctx context.Context, eventID, requestID string) (tier1.Ticket, string, error) {
	var it ticketItem
	found, err := s.readItem(ctx, s.cfg.EventsTable, s.key(ticketKey(eventID, requestID)), "ticket "+eventID, &it)
	if err != nil {
		return tier1.Ticket{}, "", err
	}
	if !found {
		return tier1.Ticket{}, "", tier1.ErrNotFound
	}
	tk := tier1.Ticket{EventID: eventID, RequestID: requestID, CreatedAt: clock.FromUnixMilli(it.CreatedAt)}
	if err := copyHash(&tk.Hash, it.H); err != nil {
		return tier1.Ticket{}, "", fmt.Errorf("dynamostore: ticket %s: %w", eventID, err)
	}
	return tk, it.State, nil
}

// CloseList flips the sale's closing flag (first tells who flipped it),
// then, idempotently, closes every bucket header and marks the sale closed.
// A closer that dies half-way is finished by the next call.
func (s *Store) CloseList(ctx context.Context, eventID string, now func() time.Time) (bool, error) {
	flip, err := vals(map[string]any{":t": true, ":f": false})
	if err != nil {
		return false, err
	}
	tbl := aws.String(s.cfg.EventsTable)
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: s.key(saleKey(eventID)),
		UpdateExpression:          aws.String("SET closing = :t"),
		ConditionExpression:       aws.String("attribute_exists(opens) AND closing = :f"),
		ExpressionAttributeValues: flip,
	})
	first := err == nil
	if err != nil && !conditionFailed(err) {
		return false, wrap("close "+eventID, err)
	}
	if !first {
		st, ok, err := s.Sale(ctx, eventID)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, tier1.ErrNotFound
		}
		if st.Closed {
			return false, nil
		}
	}
	if err := s.closeHeaders(ctx, eventID); err != nil {
		return false, err
	}
	// closedAt is read after every header closed: from then on no ticket
	// can be answered.
	v, err := vals(map[string]any{":t": true, ":now": now().UnixMilli()})
	if err != nil {
		return false, err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: s.key(saleKey(eventID)),
		UpdateExpression:          aws.String("SET closed = :t, closedAt = if_not_exists(closedAt, :now)"),
		ExpressionAttributeValues: v,
	})
	if err != nil {
		return false, wrap("close "+eventID, err)
	}
	return first, nil
}

// closeHeaders closes every bucket header: a ticket writer that reads one
// afterwards voids its ticket.
func (s *Store) closeHeaders(ctx context.Context, eventID string) error {
	hv, err := vals(map[string]any{":t": true})
	if err != nil {
		return err
	}
	for b := range ticketBuckets {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.cfg.EventsTable), Key: s.key(headerKey(eventID, b)),
			UpdateExpression: aws.String("SET closed = :t"), ExpressionAttributeValues: hv,
		})
		if err != nil {
			return wrap("close "+eventID, err)
		}
	}
	return nil
}

// CancelSale marks the sale cancelled and the event's summary so in one
// transaction (unless drawn), then closes the list as CloseList does.
func (s *Store) CancelSale(ctx context.Context, eventID string, now time.Time) error {
	v, err := vals(map[string]any{":t": true, ":now": now.UnixMilli()})
	if err != nil {
		return err
	}
	ev, err := vals(map[string]any{":four": tier1.SaleCancelled})
	if err != nil {
		return err
	}
	tbl := aws.String(s.cfg.EventsTable)
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: tbl, Key: s.key(saleKey(eventID)),
			UpdateExpression:          aws.String("SET cancelled = :t, cancelledAt = if_not_exists(cancelledAt, :now), closing = :t"),
			ConditionExpression:       aws.String("attribute_exists(opens) AND attribute_not_exists(drawn)"),
			ExpressionAttributeValues: v,
		}},
		{Update: &types.Update{
			TableName: tbl, Key: s.key(eventKey(eventID)),
			UpdateExpression: aws.String("SET salePhase = :four"), ExpressionAttributeValues: ev,
		}},
	}})
	if len(failedConditions(err)) > 0 {
		_, found, err := s.Sale(ctx, eventID)
		if err != nil {
			return err
		}
		if !found {
			return tier1.ErrNotFound
		}
		return tier1.ErrSaleDrawn
	}
	if err != nil {
		return wrap("cancel "+eventID, err)
	}
	if err := s.closeHeaders(ctx, eventID); err != nil {
		return err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: s.key(saleKey(eventID)),
		UpdateExpression:          aws.String("SET closed = :t, closedAt = if_not_exists(closedAt, :now)"),
		ExpressionAttributeValues: v,
	})
	if err != nil {
		return wrap("cancel "+eventID, err)
	}
	return nil
}

// EachTicketHash queries every bucket, eight at a time, strongly
// consistently, and hands each page's ok tickets to fn (one call at a time).
func (s *Store) EachTicketHash(ctx context.Context, eventID string, fn func([]draw.Hash) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	emit := func(hs []draw.Hash) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(hs)
	}
	for b := range ticketBuckets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.bucketHashes(ctx, eventID, b, emit); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *Store) bucketHashes(ctx context.Context, eventID string, b int, emit func([]draw.Hash) error) error {
	v, err := vals(map[string]any{":pk": bucketPK(eventID, b), ":t": ticketPrefix})
	if err != nil {
		return err
	}
	var out []draw.Hash
	var start map[string]types.AttributeValue
	for {
		page, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.cfg.EventsTable),
			KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :t)"),
			ProjectionExpression:      aws.String("sk, h, #st"),
			ExpressionAttributeNames:  map[string]string{"#st": "state"},
			ExpressionAttributeValues: v,
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return wrap("list tickets "+eventID, err)
		}
		out = out[:0]
		for _, item := range page.Items {
			var it struct {
				ticketItem
				SK string `dynamodbav:"sk"`
			}
			var h draw.Hash
			if err := attributevalue.UnmarshalMap(item, &it); err != nil || copyHash(&h, it.H) != nil || len(it.H) == 0 {
				return fmt.Errorf("dynamostore: list tickets %s: malformed ticket", eventID)
			}
			state := it.State
			if state == statePending {
				// Its writer has not settled it: void it, unless the writer
				// just made it ok.
				if state, err = s.flipTicket(ctx, eventID, strings.TrimPrefix(it.SK, ticketPrefix), stateVoid); err != nil {
					return err
				}
			}
			if state == stateOK {
				out = append(out, h)
			}
		}
		if err := emit(out); err != nil {
			return err
		}
		if start = page.LastEvaluatedKey; len(start) == 0 {
			return nil
		}
	}
}

// CommitClose writes the roots and n on the sale, the summary on the event
// and every shard counter in one transaction: each counter must still be 0.
func (s *Store) CommitClose(ctx context.Context, w tier1.CloseWrite) error {
	v, err := vals(map[string]any{
		":t": true, ":mroot": w.MerkleRoot[:], ":root": w.Root[:], ":n": w.N, ":now": w.Now.UnixMilli(),
		":round": w.Round, ":moved": w.RoundMoved,
	})
	if err != nil {
		return err
	}
	ev, err := vals(map[string]any{":two": tier1.SaleDrawing, ":root": w.Root[:], ":s": w.Shards, ":round": w.Round})
	if err != nil {
		return err
	}
	tbl := aws.String(s.cfg.EventsTable)
	items := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: tbl, Key: s.key(saleKey(w.EventID)),
			UpdateExpression:          aws.String("SET mroot = :mroot, root = :root, n = :n, committedAt = :now, dround = :round, moved = :moved"),
			ConditionExpression:       aws.String("closed = :t AND attribute_not_exists(root) AND (attribute_not_exists(cancelled) OR cancelled <> :t)"),
			ExpressionAttributeValues: v,
		}},
		{Update: &types.Update{
			TableName: tbl, Key: s.key(eventKey(w.EventID)),
			UpdateExpression:          aws.String("SET salePhase = :two, saleRoot = :root, saleRound = :round"),
			ConditionExpression:       aws.String("shards = :s"),
			ExpressionAttributeValues: ev,
		}},
	}
	for k, c := range w.Counters {
		cv, err := vals(map[string]any{":c": c, ":zero": 0, ":s": w.Shards})
		if err != nil {
			return err
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: tbl, Key: s.key(shardKey(w.EventID, k)),
			UpdateExpression:          aws.String("SET c = :c"),
			ConditionExpression:       aws.String("c = :zero AND n = :s"),
			ExpressionAttributeValues: cv,
		}})
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if len(failedConditions(err)) > 0 {
		return tier1.ErrConflict
	}
	if err != nil {
		return wrap("commit close "+w.EventID, err)
	}
	return nil
}

// PutDrawBlobs writes blobs with BatchWriteItem.
func (s *Store) PutDrawBlobs(ctx context.Context, eventID string, first int, blobs [][]byte) error {
	return s.putBlobs(ctx, eventID, first, blobs)
}

// CommitDraw writes the beacon on the sale and the summary on the event in
// one conditional transaction.
func (s *Store) CommitDraw(ctx context.Context, w tier1.DrawWrite) error {
	v, err := vals(map[string]any{
		":t": true, ":r": w.Beacon.Round, ":rand": []byte(w.Beacon.Randomness), ":sig": []byte(w.Beacon.Signature), ":now": w.Now.UnixMilli(),
	})
	if err != nil {
		return err
	}
	ev, err := vals(map[string]any{":three": tier1.SaleDrawn})
	if err != nil {
		return err
	}
	tbl := aws.String(s.cfg.EventsTable)
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: tbl, Key: s.key(saleKey(w.EventID)),
			UpdateExpression:          aws.String("SET drawn = :t, bround = :r, brand = :rand, bsig = :sig, drawnAt = :now"),
			ConditionExpression:       aws.String("attribute_exists(root) AND attribute_not_exists(drawn) AND (attribute_not_exists(cancelled) OR cancelled <> :t)"),
			ExpressionAttributeValues: v,
		}},
		{Update: &types.Update{
			TableName: tbl, Key: s.key(eventKey(w.EventID)),
			UpdateExpression: aws.String("SET salePhase = :three"), ExpressionAttributeValues: ev,
		}},
	}})
	if len(failedConditions(err)) > 0 {
		return tier1.ErrConflict
	}
	if err != nil {
		return wrap("commit draw "+w.EventID, err)
	}
	return nil
}

// putBlobs writes blobs 25 per BatchWriteItem, retrying what DynamoDB
// leaves unprocessed.
func (s *Store) putBlobs(ctx context.Context, eventID string, first int, blobs [][]byte) error {
	var reqs []types.WriteRequest
	for i, b := range blobs {
		item := s.key(blobKey(eventID, first+i))
		item["b"] = &types.AttributeValueMemberB{Value: b}
		item["size"] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(b))}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	for len(reqs) > 0 {
		n := min(len(reqs), 25)
		batch := reqs[:n]
		reqs = reqs[n:]
		for attempt := 0; len(batch) > 0; attempt++ {
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{s.cfg.EventsTable: batch},
			})
			if err != nil {
				return wrap("draw blobs "+eventID, err)
			}
			batch = out.UnprocessedItems[s.cfg.EventsTable]
			if len(batch) > 0 {
				if attempt >= 8 {
					return fmt.Errorf("dynamostore: draw blobs %s: %w", eventID, tier1.ErrThrottled)
				}
				if err := sleep(ctx, backoff(attempt)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// DrawBlob reads one blob.
func (s *Store) DrawBlob(ctx context.Context, eventID string, i int) ([]byte, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.cfg.EventsTable), Key: s.key(blobKey(eventID, i)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("read draw "+eventID, err)
	}
	b, ok := out.Item["b"].(*types.AttributeValueMemberB)
	if !ok {
		return nil, tier1.ErrNotFound
	}
	return b.Value, nil
}
