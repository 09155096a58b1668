// Command floor is the honest reference for Tier 2's check (BENCHMARKS.md):
// the least a server must do to answer POST /api/queue/check/{eventId} the
// way bin/queue does. It reads the user id from a trusted header, runs the
// store's own check (services/queue/redisstore: check.lua with one EVALSHA
// pipelined with the SADD, so the script's keys and arguments cannot drift
// from the service's), mints the same entry token when the user is active,
// and writes the same JSON. No queue.Service (settings, epoch cache, notices),
// no metrics, no logging, no config layers. It is bench code, never
// shipped: `make bench` builds and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/httpapi"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379", "Redis URL")
	header := flag.String("header", "X-User-Id", "trusted user id header")
	secret := flag.String("secret", os.Getenv("QUEUE_ENTRY_TOKEN_SECRET"), "entry token secret")
	threshold := flag.Int64("threshold", 1000, "default threshold")
	ttl := flag.Duration("ttl", 10*time.Minute, "active TTL")
	tokenTTL := flag.Duration("token-ttl", queue.DefaultEntryTokenTTL, "entry token lifetime (at most the slot)")
	flag.Parse()

	opt, err := redis.ParseURL(*redisURL)
	check(err)
	store := redisstore.New(redis.NewClient(opt), redisstore.Options{})
	check(store.Load(context.Background()))
	keys, err := token.NewKeyRing("", []byte(*secret))
	check(err)
	f := &floor{store: store, keys: keys, header: *header, threshold: *threshold, ttl: *ttl, tokenTTL: *tokenTTL}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/queue/check/{eventId}", f.check)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

type floor struct {
	store     *redisstore.Store
	keys      *token.KeyRing
	header    string
	threshold int64
	ttl       time.Duration
	tokenTTL  time.Duration
}

// view is bin/queue's check answer (services/queue/httpapi viewBody).
type view struct {
	Queued        bool   `json:"queued"`
	Status        string `json:"status"`
	EventID       string `json:"eventId"`
	Position      int64  `json:"position"`
	PeopleAhead   int64  `json:"peopleAhead"`
	PeopleBehind  int64  `json:"peopleBehind"`
	QueueSize     int64  `json:"queueSize"`
	EstimatedWait int    `json:"estimatedWait"`
	NextPoll      int    `json:"nextPoll"`
	CurrentUsers  int64  `json:"currentUsers"`
	Threshold     int64  `json:"threshold"`
	EntryToken    string `json:"entryToken,omitempty"`
	ExpiresAt     string `json:"expiresAt,omitempty"`
	Recovering    bool   `json:"recovering"` // always false: the floor keeps no epoch
}

func (f *floor) check(w http.ResponseWriter, r *http.Request) {
	ev, uid := r.PathValue("eventId"), r.Header.Get(f.header)
	if !queue.ValidID(ev) || !queue.ValidUser(uid) {
		fail(w, http.StatusBadRequest, "bad event or user", "invalid")
		return
	}
	now := time.Now()
	// No epoch known: the store starts one when it is missing and never
	// opens a recovery window, which the floor does not model.
	snap, err := f.store.Check(r.Context(), queue.CheckInput{EventID: ev, UserID: uid, Score: now.UnixMilli(), Now: now,
		ActiveTTL: f.ttl, DefaultThreshold: f.threshold, Epoch: queue.EpochInput{Candidate: token.NewTokenID()},
		Idle: min(queue.DefaultActiveIdle, f.ttl)})
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "unavailable", "unavailable")
		return
	}
	v := view{Status: string(snap.Status), EventID: ev, QueueSize: snap.QueueSize, CurrentUsers: snap.ActiveCount, Threshold: snap.Threshold}
	if snap.Status == queue.StatusQueued {
		v.Queued, v.Position, v.PeopleAhead = true, snap.Rank+1, snap.Rank
		v.PeopleBehind = max(snap.QueueSize-snap.Rank-1, 0)
		v.EstimatedWait = queue.EstimateQueued(v.Position, snap, now)
		v.NextPoll = queue.NextPoll(queue.StatusQueued, v.Position)
		jsonhttp.WriteJSON(w, http.StatusOK, v)
		return
	}
	// The service's short token: renewed by each check while the slot runs.
	exp := snap.ExpiresAt
	tokExp := now.Add(f.tokenTTL)
	if exp.Before(tokExp) {
		tokExp = exp
	}
	v.NextPoll = queue.NextPoll(queue.StatusActive, 0)
	tok, err := f.keys.IssueEntry(token.Entry{EventID: ev, UserID: uid, ID: queue.EntryTokenID(ev, uid, exp), IssuedAt: now, ExpiresAt: tokExp, SlotEndsAt: exp})
	if err != nil {
		fail(w, http.StatusInternalServerError, "internal", "internal")
		return
	}
	v.EntryToken, v.ExpiresAt = tok, exp.UTC().Format(time.RFC3339)
	if left := int(math.Ceil(tokExp.Sub(now).Seconds())); left > 0 {
		http.SetCookie(w, &http.Cookie{Name: httpapi.EntryCookie, Value: tok, Path: "/", MaxAge: left, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	jsonhttp.WriteJSON(w, http.StatusOK, v)
}

func fail(w http.ResponseWriter, status int, msg, code string) {
	jsonhttp.WriteJSON(w, status, map[string]string{"error": msg, "code": code})
}
