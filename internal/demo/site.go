package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/gate"
)

// DefaultHoldTTL is how long a held seat stays held (seed 003: 5 minutes).
const DefaultHoldTTL = 300 * time.Second

// maxBody bounds request bodies, as on every vwr API.
const maxBody = 4 << 10

// Config wires the demo site.
type Config struct {
	// EntryKeys verifies urr-entry-token on the event page (the seat API is
	// verified by the gate in front of it).
	EntryKeys *token.KeyRing
	// Redis holds the seats.
	Redis redis.Scripter
	// Venues maps an event id to its seats. Events not listed have no seats.
	Venues map[string]Venue
	// HoldTTL is how long a hold lasts; default DefaultHoldTTL.
	HoldTTL time.Duration
	Clock   clock.Clock
	Logger  *slog.Logger
}

// WithDefaults fills the optional fields.
func (c Config) WithDefaults() Config {
	if c.HoldTTL == 0 {
		c.HoldTTL = DefaultHoldTTL
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	if c.EntryKeys == nil {
		return errors.New("demo: EntryKeys is required (the key ring of QUEUE_ENTRY_TOKEN_SECRET)")
	}
	if c.Redis == nil {
		return errors.New("demo: Redis is required")
	}
	if c.HoldTTL < time.Second {
		return errors.New("demo: HoldTTL must be at least 1s")
	}
	for id, v := range c.Venues {
		if !queue.ValidID(id) {
			return fmt.Errorf("demo: venue event id %q must match ^[A-Za-z0-9_-]{1,64}$", id)
		}
		if err := v.validate(); err != nil {
			return err
		}
	}
	return nil
}

// Site is the protected demo origin.
type Site struct {
	cfg   Config
	store *Store
	mux   *http.ServeMux
}

// New returns the site, or an error naming the bad setting.
func New(cfg Config) (*Site, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Site{cfg: cfg, store: NewStore(cfg.Redis), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /events/{event}", s.eventPage)
	s.mux.HandleFunc("GET /api/seats/{event}", s.listSeats)
	s.mux.HandleFunc("POST /api/seats/{event}/hold", s.holdSeat)
	s.mux.Handle("GET /demo/assets/", assetHandler())
	return s, nil
}

// Handler serves /events/{event}, /api/seats/… and /demo/assets/. Put the
// edge check (internal/edge) and the queue gate in front of it.
func (s *Site) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := s.mux.Handler(r); pattern == "" {
			writeError(w, errNotFound)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

var (
	errNotFound   = errors.New("demo: not found")
	errBadJSON    = errors.New("demo: bad json")
	errTooLarge   = errors.New("demo: body too large")
	errBadEvent   = errors.New("demo: invalid event id")
	errNoIdentity = errors.New("demo: no entry token identity")
)

// writeError writes err's answer (see errorAnswer) and returns its status.
func writeError(w http.ResponseWriter, err error) int {
	status, code, msg := errorAnswer(err)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "2")
	}
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
	return status
}

// errorAnswer is the one place that maps errors to HTTP answers.
func errorAnswer(err error) (status int, code, msg string) {
	status, code, msg = http.StatusInternalServerError, "internal", "internal error"
	switch {
	case errors.Is(err, errBadEvent):
		status, code, msg = http.StatusBadRequest, "invalid_event_id", "event id must match ^[A-Za-z0-9_-]{1,64}$"
	case errors.Is(err, errBadJSON):
		status, code, msg = http.StatusBadRequest, "invalid_json", `body must be JSON like {"seatId":"A1"}`
	case errors.Is(err, ErrInvalidSeat):
		status, code, msg = http.StatusBadRequest, "invalid_seat", "no such seat at this event"
	case errors.Is(err, errTooLarge):
		status, code, msg = http.StatusRequestEntityTooLarge, "body_too_large", "body over 4 KiB"
	case errors.Is(err, errNoIdentity):
		status, code, msg = http.StatusForbidden, "entry_token_required", "Queue entry token required"
	case errors.Is(err, ErrUnknownEvent):
		status, code, msg = http.StatusNotFound, "unknown_event", "this event has no seats"
	case errors.Is(err, errNotFound):
		status, code, msg = http.StatusNotFound, "not_found", "not found"
	case errors.Is(err, ErrSeatTaken):
		status, code, msg = http.StatusConflict, "seat_taken", "someone else is holding this seat"
	case errors.Is(err, ErrSoldOut):
		status, code, msg = http.StatusConflict, "sold_out", "no seats are left"
	case errors.Is(err, ErrUnavailable):
		status, code, msg = http.StatusServiceUnavailable, "unavailable", "seat store unavailable, retry shortly"
	}
	return status, code, msg
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// seatRequest is what both seat routes check first: the event's layout and
// the uid of the verified entry token the gate put in the context.
func (s *Site) seatRequest(r *http.Request) (event string, v Venue, uid string, err error) {
	event = r.PathValue("event")
	if !queue.ValidID(event) {
		return "", Venue{}, "", errBadEvent
	}
	v, ok := s.cfg.Venues[event]
	if !ok {
		return "", Venue{}, "", ErrUnknownEvent
	}
	e, ok := gate.EntryFrom(r.Context())
	if !ok || e.UserID == "" {
		return "", Venue{}, "", errNoIdentity
	}
	return event, v, e.UserID, nil
}

type seatList struct {
	EventID     string      `json:"eventId"`
	Name        string      `json:"name"`
	Total       int         `json:"total"`
	Remaining   int64       `json:"remaining"`
	HoldSeconds int         `json:"holdSeconds"`
	Seats       []SeatState `json:"seats"`
}

func (s *Site) listSeats(w http.ResponseWriter, r *http.Request) {
	event, v, uid, err := s.seatRequest(r)
	if err != nil {
		writeError(w, err)
		return
	}
	seats, remaining, err := s.store.List(r.Context(), event, v, uid, s.cfg.Clock.Now())
	if err != nil {
		s.cfg.Logger.Error("seat list failed", "event", event, "err", err)
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, seatList{
		EventID: event, Name: v.Name, Total: v.Total(), Remaining: max(remaining, 0),
		HoldSeconds: int(s.cfg.HoldTTL / time.Second), Seats: seats,
	})
}

func (s *Site) holdSeat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	event, v, uid, err := s.seatRequest(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var body struct {
		SeatID string `json:"seatId"`
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, errTooLarge)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeError(w, errBadJSON)
		return
	}
	if !v.Has(body.SeatID) {
		writeError(w, ErrInvalidSeat)
		return
	}
	h, err := s.store.Hold(r.Context(), event, v, body.SeatID, uid, s.cfg.HoldTTL, s.cfg.Clock.Now())
	status := http.StatusCreated
	if h.Already {
		status = http.StatusOK
	}
	if err != nil {
		status = writeError(w, err)
	} else {
		writeJSON(w, status, h)
	}
	// One line per hold at debug: a sale makes thousands (no per-request
	// INFO line); failures of the store at error.
	attrs := []any{"event", event, "uid", uid, "seat", body.SeatID, "status", status, "ms", time.Since(start).Milliseconds()}
	level := slog.LevelDebug
	if err != nil {
		attrs = append(attrs, "err", err)
		if status >= 500 {
			level = slog.LevelError
		}
	}
	s.cfg.Logger.Log(r.Context(), level, "seat hold", attrs...)
}
