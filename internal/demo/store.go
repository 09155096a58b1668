package demo

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed purge.lua
	purgeLua string
	//go:embed hold.lua
	holdLua string
	//go:embed list.lua
	listLua string

	holdScript = redis.NewScript(purgeLua + "\n" + holdLua)
	listScript = redis.NewScript(purgeLua + "\n" + listLua)
)

// Store keeps seat holds in Redis. Its port is the narrowest go-redis
// interface that runs scripts, so a Client, ClusterClient or Ring all fit.
type Store struct {
	rdb redis.Scripter
}

// NewStore returns a Store on rdb.
func NewStore(rdb redis.Scripter) *Store { return &Store{rdb: rdb} }

// Hold holds seat for uid until now+ttl, unless someone else holds it or no
// seat is left.
func (s *Store) Hold(ctx context.Context, event string, v Venue, seat, uid string, ttl time.Duration, now time.Time) (Hold, error) {
	keys := []string{holdsKey(event), remainingKey(event), holdKey(event, seat)}
	res, err := holdScript.Run(ctx, s.rdb, keys, now.UnixMilli(), v.Total(), seat, uid, int64(ttl/time.Second)).Int64Slice()
	if err != nil {
		return Hold{}, fmt.Errorf("%w: hold %s/%s: %v", ErrUnavailable, event, seat, err)
	}
	if len(res) != 3 {
		return Hold{}, fmt.Errorf("%w: hold %s/%s: script returned %d values", ErrUnavailable, event, seat, len(res))
	}
	switch res[0] {
	case 0:
		return Hold{}, ErrSeatTaken
	case -1:
		return Hold{}, ErrSoldOut
	}
	return Hold{
		EventID:   event,
		SeatID:    seat,
		ExpiresAt: time.UnixMilli(res[2]).UTC(),
		Remaining: res[1],
		Already:   res[0] == 2,
	}, nil
}

// List returns every seat of the venue as uid sees it and the remaining count.
func (s *Store) List(ctx context.Context, event string, v Venue, uid string, now time.Time) ([]SeatState, int64, error) {
	ids := v.SeatIDs()
	keys := make([]string, 0, len(ids)+2)
	keys = append(keys, holdsKey(event), remainingKey(event))
	args := make([]any, 0, len(ids)+2)
	args = append(args, now.UnixMilli(), v.Total())
	for _, id := range ids {
		keys = append(keys, holdKey(event, id))
		args = append(args, id)
	}
	res, err := listScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: list %s: %v", ErrUnavailable, event, err)
	}
	if len(res) != 1+2*len(ids) {
		return nil, 0, fmt.Errorf("%w: list %s: script returned %d values", ErrUnavailable, event, len(res))
	}
	remaining, _ := res[0].(int64)
	seats := make([]SeatState, len(ids))
	for i, id := range ids {
		holder, _ := res[1+2*i].(string)
		exp, _ := res[2+2*i].(int64)
		st := SeatState{ID: id, Row: id[:1], Status: StatusAvailable}
		switch {
		case holder == "":
		case holder == uid:
			st.Status = StatusMine
			st.ExpiresAt = time.UnixMilli(exp).UTC()
		default:
			st.Status = StatusHeld
		}
		seats[i] = st
	}
	return seats, remaining, nil
}
