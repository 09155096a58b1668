// Package demo is the protected ticketing site that vwr local puts behind the
// waiting room (seeds 001/003): an event page that shows the Tier 2 queue page
// until the visitor holds an entry token and then a seat map, a seat list API
// and a seat hold API guarded by the queue's gate. Holds live in Redis
// (SET seat:hold:{E}:{seat} uid NX EX 300) together with the remaining-seat
// count, both changed by one Lua script so that they never disagree.
package demo

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the seat domain; http.go maps them to status codes in one place.
var (
	ErrUnknownEvent = errors.New("demo: unknown event")
	ErrInvalidSeat  = errors.New("demo: invalid seat")
	ErrSeatTaken    = errors.New("demo: seat taken")
	ErrSoldOut      = errors.New("demo: sold out")
	ErrUnavailable  = errors.New("demo: store unavailable")
)

// Venue is an event's seat layout: Rows rows (A, B, …) of PerRow seats.
type Venue struct {
	Name   string
	Rows   int
	PerRow int
}

// MaxRows and MaxPerRow bound a venue so that one list script stays small.
const (
	MaxRows   = 26
	MaxPerRow = 40
)

func (v Venue) validate() error {
	if v.Rows < 1 || v.Rows > MaxRows || v.PerRow < 1 || v.PerRow > MaxPerRow {
		return fmt.Errorf("demo: venue %q: rows must be 1..%d and seats per row 1..%d", v.Name, MaxRows, MaxPerRow)
	}
	return nil
}

// Total is the number of seats.
func (v Venue) Total() int { return v.Rows * v.PerRow }

// SeatIDs lists the seats in row order: A1, A2, …, B1, ….
func (v Venue) SeatIDs() []string {
	ids := make([]string, 0, v.Total())
	for r := 0; r < v.Rows; r++ {
		for n := 1; n <= v.PerRow; n++ {
			ids = append(ids, fmt.Sprintf("%c%d", 'A'+r, n))
		}
	}
	return ids
}

// Has reports whether id is one of the venue's seats.
func (v Venue) Has(id string) bool {
	if len(id) < 2 || len(id) > 3 || id[0] < 'A' || int(id[0]-'A') >= v.Rows {
		return false
	}
	n := 0
	for _, c := range id[1:] {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return id[1] != '0' && n >= 1 && n <= v.PerRow
}

// SeatState is one seat as the list API shows it to one visitor.
type SeatState struct {
	ID        string    `json:"id"`
	Row       string    `json:"row"`
	Status    string    `json:"status"` // available | held | mine
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// Seat statuses.
const (
	StatusAvailable = "available"
	StatusHeld      = "held"
	StatusMine      = "mine"
)

// Hold is a seat held for a visitor.
type Hold struct {
	EventID   string    `json:"eventId"`
	SeatID    string    `json:"seatId"`
	ExpiresAt time.Time `json:"expiresAt"`
	Remaining int64     `json:"remaining"`
	// Already is true when this visitor held the seat before this call.
	Already bool `json:"already"`
}
