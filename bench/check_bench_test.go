package bench

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/app"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// openQueue assembles Tier 2 as bin/queue does, on the test binary's
// redis-server, with a header identity and the given default threshold.
func openQueue(tb testing.TB, threshold string) (*app.App, http.Handler) {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(tb)})
	tb.Cleanup(func() { rdb.Close() })
	cfg, err := app.FromEnv(map[string]string{
		"QUEUE_ENTRY_TOKEN_SECRET": token.RandomSecret(), "QUEUE_USER_HEADER": "X-User-Id",
		"QUEUE_THRESHOLD": threshold, "QUEUE_ADMIN_TOKEN": "bench", "QUEUE_OPEN_EVENTS": "true",
	})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := app.Open(cfg, app.Options{Redis: rdb, KeyPrefix: testenv.UniqueID(tb) + ":", Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	if err := a.Store.Load(context.Background()); err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	a.API.Register(mux)
	return a, mux
}

// BenchmarkCheckService is the domain and store part of a check: one
// Service.Check (EVALSHA pipelined with SADD) per op, each op a new user
// joining a line (threshold 1).
func BenchmarkCheckService(b *testing.B) {
	a, _ := openQueue(b, "1")
	ev := testenv.UniqueID(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := a.Service.Check(ctx, ev, queue.Identity{UserID: "u" + strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckHTTP is the whole check request inside the process: routing,
// identity, Service.Check, the entry token when active, metrics, the request
// log at the default level and the JSON answer; no network to the client.
// Sub-benchmarks: a new user joining a line, a queued user polling, and a
// direct entry (token minted); ns/op is per check with GOMAXPROCS
// goroutines sending at once.
func BenchmarkCheckHTTP(b *testing.B) {
	for _, sc := range []struct {
		name, threshold string
		users           int // 0: a new user per op
	}{{"joins", "1", 0}, {"polls", "1", 1000}, {"direct", "1000000", 0}} {
		b.Run(sc.name, func(b *testing.B) {
			_, h := openQueue(b, sc.threshold)
			ev := testenv.UniqueID(b)
			do := func(uid string) {
				req := httptest.NewRequest(http.MethodPost, "/api/queue/check/"+ev, nil)
				req.Header.Set("X-User-Id", uid)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("check: %d %s", rec.Code, rec.Body)
				}
			}
			for i := range sc.users {
				do("p" + strconv.Itoa(i))
			}
			var seq atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			// In parallel, as a server runs: the profile then shows the
			// handler's CPU rather than one connection waiting on Redis.
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					if sc.users > 0 {
						do("p" + strconv.Itoa(int(i)%sc.users))
					} else {
						do("u" + strconv.Itoa(int(i)))
					}
				}
			})
		})
	}
}
