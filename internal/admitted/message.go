// Package admitted owns the "admitted" notification's schema: the message the
// Tier 2 queue publishes to SQS FIFO (internal/notify) and the consumer
// (internal/admitted/consumer) parses, with its deduplication id.
package admitted

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/ids"
)

// Action is the only action vwr publishes.
const Action = "admitted"

// jtiPattern accepts the entry token ids internal/token mints (URL-safe
// base64 or hex) with room to spare, and nothing that could smuggle markup.
var jtiPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ErrMalformed marks a message the consumer can never process. It becomes a
// batch item failure and, after maxReceiveCount receives, lands in the DLQ.
var ErrMalformed = errors.New("admitted: malformed message")

// Message is the body of one SQS notification. It deliberately carries the
// entry token's id (jti) and never the bearer token itself: anyone able to
// read the queue could otherwise walk through the gate as that user.
// EntryTokenID is derived by the queue from the admission (queue.EntryTokenID),
// so the worker can report it before the token is minted; it is optional here
// so older producers still parse.
type Message struct {
	Action       string    `json:"action"`
	EventID      string    `json:"eventId"`
	UserID       string    `json:"userId"`
	EntryTokenID string    `json:"entryTokenId,omitempty"`
	ExpiresAt    time.Time `json:"expiresAt"`
	Timestamp    time.Time `json:"timestamp"`
}

// DedupID is the SQS MessageDeduplicationId and the consumer's idempotency
// key for one admission: hex SHA-256 of "userId:eventId". It is always a
// legal SQS id (64 hex chars) and does not reveal the user id.
func DedupID(userID, eventID string) string {
	sum := sha256.Sum256([]byte(userID + ":" + eventID))
	return hex.EncodeToString(sum[:])
}

// DedupID returns the message's deduplication id.
func (m Message) DedupID() string { return DedupID(m.UserID, m.EventID) }

// Validate reports why m cannot be processed, wrapping ErrMalformed.
func (m Message) Validate() error {
	switch {
	case m.Action != Action:
		return fmt.Errorf("%w: action %q", ErrMalformed, m.Action)
	case !ids.Valid(m.EventID):
		return fmt.Errorf("%w: eventId", ErrMalformed)
	case !ids.ValidUser(m.UserID):
		return fmt.Errorf("%w: userId", ErrMalformed)
	case m.EntryTokenID != "" && !jtiPattern.MatchString(m.EntryTokenID):
		return fmt.Errorf("%w: entryTokenId", ErrMalformed)
	case m.Timestamp.IsZero():
		return fmt.Errorf("%w: timestamp", ErrMalformed)
	case m.ExpiresAt.IsZero():
		return fmt.Errorf("%w: expiresAt", ErrMalformed)
	}
	return nil
}

// Encode returns the JSON body for m.
func (m Message) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Parse decodes and validates a message body. Unknown fields are rejected so
// that a producer smuggling extra data (a bearer token, say) is noticed.
func Parse(body string) (Message, error) {
	var m Message
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return Message{}, fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}
