// Package consumer is the Lambda handler that consumes the "admitted" SQS
// FIFO queue and turns each delivered message into exactly one count in the
// per-event, per-minute admission statistics. It knows nothing of DynamoDB;
// it records through the Store port (internal/admitted/dynamostore). It lives
// apart from the message schema (internal/admitted) so that the Tier 2 queue,
// which only publishes, does not link aws-lambda-go.
package consumer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vwr-go/vwr/internal/admitted"
)

// Store records admissions idempotently.
type Store interface {
	// Record claims m's idempotency key and counts the admission in its
	// event's minute bucket, both or neither. It returns false, nil when the
	// key was already claimed (the admission was counted before).
	Record(ctx context.Context, m admitted.Message) (applied bool, err error)
}

// Handler consumes batches of admitted notifications.
type Handler struct {
	store Store
	log   *slog.Logger
}

// NewHandler returns a Handler recording into store.
func NewHandler(store Store, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{store: store, log: log}
}

// Handle processes every record on its own and reports the failed ones, so
// SQS redelivers only those (the event source mapping sets
// ReportBatchItemFailures). It never returns an error: one bad record must not
// send the other nine back. The effect is a commutative count, so records
// after a failure in the same message group are still applied; AWS's advice to
// stop at the first failure in a FIFO batch exists for order-sensitive effects.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	start := time.Now()
	var applied, duplicate int
	for _, rec := range ev.Records {
		ok, err := h.handleRecord(ctx, rec)
		switch {
		case err != nil:
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			h.log.Warn("admitted: record failed",
				"messageId", rec.MessageId,
				"receiveCount", rec.Attributes["ApproximateReceiveCount"],
				"malformed", errors.Is(err, admitted.ErrMalformed),
				"err", err.Error())
		case ok:
			applied++
		default:
			duplicate++
		}
	}
	h.log.Info("admitted: batch",
		"records", len(ev.Records), "applied", applied, "duplicates", duplicate, "failed", len(resp.BatchItemFailures), "ms", time.Since(start).Milliseconds())
	return resp, nil
}

func (h *Handler) handleRecord(ctx context.Context, rec events.SQSMessage) (bool, error) {
	if rec.MessageId == "" {
		return false, admitted.ErrMalformed
	}
	m, err := admitted.Parse(rec.Body)
	if err != nil {
		return false, err
	}
	// A message group that disagrees with the body is not ours.
	if g, ok := rec.Attributes["MessageGroupId"]; ok && g != m.EventID {
		return false, errors.Join(admitted.ErrMalformed, errors.New("admitted: MessageGroupId does not match eventId"))
	}
	return h.store.Record(ctx, m)
}
