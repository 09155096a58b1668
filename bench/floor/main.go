// Command floor is the honest reference for Tier 2's check (BENCHMARKS.md):
// the least a server must do to answer POST /api/queue/check/{eventId} the
// way bin/queue does. It reads the user id from a trusted header, sends the
// same check.lua (read from services/queue/redisstore at start) with one
// EVALSHA pipelined with the SADD, mints the same entry token when the user
// is active, and writes the same JSON. No metrics, no logging, no config
// layers. It is bench code, never shipped: `make bench` builds and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379", "Redis URL")
	luaDir := flag.String("lua", "services/queue/redisstore", "folder holding lib.lua and check.lua")
	header := flag.String("header", "X-User-Id", "trusted user id header")
	secret := flag.String("secret", os.Getenv("QUEUE_ENTRY_TOKEN_SECRET"), "entry token secret")
	threshold := flag.Int64("threshold", 1000, "default threshold")
	ttl := flag.Duration("ttl", 10*time.Minute, "active TTL")
	flag.Parse()

	lib, err := os.ReadFile(filepath.Join(*luaDir, "lib.lua"))
	check(err)
	chk, err := os.ReadFile(filepath.Join(*luaDir, "check.lua"))
	check(err)
	opt, err := redis.ParseURL(*redisURL)
	check(err)
	rdb := redis.NewClient(opt)
	script := redis.NewScript(string(lib) + string(chk))
	check(script.Load(context.Background(), rdb).Err())
	keys, err := token.NewKeyRing("", []byte(*secret))
	check(err)
	f := &floor{rdb: rdb, script: script, keys: keys, header: *header, threshold: *threshold, ttl: *ttl}
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
	rdb       *redis.Client
	script    *redis.Script
	keys      *token.KeyRing
	header    string
	threshold int64
	ttl       time.Duration
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
}

func (f *floor) check(w http.ResponseWriter, r *http.Request) {
	ev, uid := r.PathValue("eventId"), r.Header.Get(f.header)
	if !queue.ValidID(ev) || !queue.ValidUser(uid) {
		fail(w, http.StatusBadRequest, "bad event or user", "invalid")
		return
	}
	now := time.Now()
	// The key layout of services/queue/redisstore/keys.go, in its KEYS order.
	tag := "{" + ev + "}"
	ks := []string{tag + ":queue", tag + ":active", tag + ":seen", tag + ":threshold", tag + ":admissions", tag + ":rank-pending", tag + ":retired"}
	pipe := f.rdb.Pipeline()
	cmd := f.script.EvalSha(r.Context(), pipe, ks, uid, now.UnixMilli(), now.UnixMilli(), f.ttl.Milliseconds(), f.threshold,
		queue.RateWindow.Milliseconds(), "0")
	pipe.SAdd(r.Context(), "queue:active-events", ev)
	if _, err := pipe.Exec(r.Context()); err != nil {
		fail(w, http.StatusServiceUnavailable, "unavailable", "unavailable")
		return
	}
	rep, err := cmd.Slice()
	if err != nil || len(rep) < 8 {
		fail(w, http.StatusInternalServerError, "internal", "internal")
		return
	}
	n := func(i int) int64 { v, _ := rep[i].(int64); return v }
	status, _ := rep[0].(string)
	v := view{Status: status, EventID: ev, QueueSize: n(3), CurrentUsers: n(4), Threshold: n(5)}
	if status == "queued" {
		v.Queued, v.Position, v.PeopleAhead = true, n(2)+1, n(2)
		v.PeopleBehind = max(n(3)-n(2)-1, 0)
		v.EstimatedWait = queue.EstimateWait(v.Position, n(6))
		v.NextPoll = queue.NextPoll(queue.StatusQueued, v.Position)
		jsonhttp.WriteJSON(w, http.StatusOK, v)
		return
	}
	exp := time.UnixMilli(n(7))
	v.NextPoll = queue.NextPoll(queue.StatusActive, 0)
	tok, err := f.keys.IssueEntry(token.Entry{EventID: ev, UserID: uid, ID: queue.EntryTokenID(ev, uid, exp), IssuedAt: now, ExpiresAt: exp})
	if err != nil {
		fail(w, http.StatusInternalServerError, "internal", "internal")
		return
	}
	v.EntryToken, v.ExpiresAt = tok, exp.UTC().Format(time.RFC3339)
	if left := int(math.Ceil(exp.Sub(now).Seconds())); left > 0 {
		http.SetCookie(w, &http.Cookie{Name: "urr-entry-token", Value: tok, Path: "/", MaxAge: left, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	jsonhttp.WriteJSON(w, http.StatusOK, v)
}

func fail(w http.ResponseWriter, status int, msg, code string) {
	jsonhttp.WriteJSON(w, status, map[string]string{"error": msg, "code": code})
}
