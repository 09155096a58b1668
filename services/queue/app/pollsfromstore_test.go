package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestPollsFromStoreAsksRedisForEveryPoll: with QUEUE_POLLS_FROM_STORE=true
// no queued poll is answered from memory (every answer is exact, the
// store's), while the same polls without it are answered from memory; the
// second half shows the first could fail.
func TestPollsFromStoreAsksRedisForEveryPoll(t *testing.T) {
	t.Parallel()
	for _, fromStore := range []bool{true, false} {
		cfg, err := FromEnv(map[string]string{"QUEUE_POLLS_FROM_STORE": map[bool]string{true: "true", false: "false"}[fromStore]})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.PollsFromStore != fromStore {
			t.Fatalf("QUEUE_POLLS_FROM_STORE read as %v", cfg.PollsFromStore)
		}
		// One slot and batches of one: the visitor ten places back is beyond
		// the places that always ask the store (the free slots and two batches).
		cfg.OpenEvents, cfg.EntryTokenSecret, cfg.UserHeader, cfg.Threshold, cfg.AdmissionBatchSize = true, secret, "X-User-Id", 1, 1
		rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
		t.Cleanup(func() { rdb.Close() })
		a, err := Open(cfg, Options{Redis: rdb, KeyPrefix: testenv.UniqueID(t) + ":", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		a.Preload(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, job := range a.Jobs() {
			wg.Add(1)
			go func() { defer wg.Done(); job(ctx) }()
		}
		srv := httptest.NewServer(a.Handler())
		ev := testenv.UniqueID(t)
		poll := func(uid string) (status string, exact bool) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/queue/check/"+ev, nil)
			req.Header.Set("X-User-Id", uid)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var v struct {
				Status           string `json:"status"`
				PeopleAheadExact bool   `json:"peopleAheadExact"`
			}
			if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
				t.Fatalf("check %s = %d", uid, resp.StatusCode)
			}
			return v.Status, v.PeopleAheadExact
		}
		for i := range 10 {
			poll(fmt.Sprintf("u%d", i))
		}
		polls, fromMemory := 0, 0
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && (fromStore || fromMemory == 0); polls++ {
			status, exact := poll("u9")
			if status != "queued" {
				t.Fatalf("u9 behind one slot and eight visitors: %s", status)
			}
			if !exact {
				fromMemory++
			}
			time.Sleep(20 * time.Millisecond)
		}
		srv.Close()
		cancel()
		wg.Wait()
		switch {
		case fromStore && fromMemory > 0:
			t.Errorf("QUEUE_POLLS_FROM_STORE=true: %d of %d queued polls answered from memory", fromMemory, polls)
		case fromStore && polls < 20:
			t.Errorf("only %d polls in 3 s", polls)
		case !fromStore && fromMemory == 0:
			t.Errorf("default: none of %d queued polls answered from memory in 3 s", polls)
		}
	}
}
