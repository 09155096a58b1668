package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

// BenchmarkSaleCloseAndDraw1M closes and draws a pre-queue of a million
// tickets on a real redis-server through the Service, as the advancer
// does: HSCAN the list, sort, commit R and the counters, fetch and verify
// the beacon round (local stand-in), order, write the chunks. The tickets
// are seeded straight into the tickets hash (a million assigns would only
// measure the seeding). Reported: seconds to close, seconds to draw.
func BenchmarkSaleCloseAndDraw1M(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(b)})
	b.Cleanup(func() { _ = rdb.Close() })
	store := New(rdb, WithPrefix(testenv.UniqueID(b)+":"))
	var closeSec, drawSec float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		clk := clock.NewManual(storetest.Epoch)
		_, dc := storetest.Beacon(b, clk)
		svc := tier1.New(store, storetest.Keys(b), clk, tier1.Config{Draw: dc, Logger: slog.New(slog.DiscardHandler)})
		ev := fmt.Sprintf("bench-%d", i)
		opens := storetest.Epoch.Add(time.Hour)
		if _, err := svc.Schedule(ctx, ev, opens, time.Time{}); err != nil {
			b.Fatal(err)
		}
		seed(b, rdb, store.keys.tickets(ev), n)
		b.StartTimer()

		clk.Set(opens)
		t0 := time.Now()
		if ok, err := svc.Tick(ctx); err != nil || len(ok) == 0 || ok[0].Skipped != tier1.PhaseDrawing {
			b.Fatalf("close: %+v, %v", ok, err)
		}
		closeSec += time.Since(t0).Seconds()
		clk.Set(dc.Chain.TimeOf(dc.Chain.RoundAfter(opens.Add(dc.Margin))))
		t1 := time.Now()
		if out, err := svc.Draw(ctx, ev); err != nil || out != tier1.DrawDone {
			b.Fatalf("draw: %q, %v", out, err)
		}
		drawSec += time.Since(t1).Seconds()
	}
	b.ReportMetric(closeSec/float64(b.N), "close-s/op")
	b.ReportMetric(drawSec/float64(b.N), "draw-s/op")
}

func seed(b *testing.B, rdb *redis.Client, key string, n int) {
	b.Helper()
	ctx := context.Background()
	const batch = 10_000
	for lo := 0; lo < n; lo += batch {
		args := make([]any, 0, 2*batch)
		for i := lo; i < min(lo+batch, n); i++ {
			var h [32]byte
			_, _ = rand.Read(h[:])
			args = append(args, fmt.Sprintf("r%021d", i), hex.EncodeToString(h[:])+":1")
		}
		if err := rdb.HSet(ctx, key, args...).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
