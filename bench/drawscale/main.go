// Command drawscale closes and draws one scheduled sale whose tickets are
// already in Redis, the way the advancer Lambda does (tier1.Service over
// the Redis store: list, sort, Merkle root, commit R; then fetch and verify
// the beacon round, order, write the chunks), and prints how long each
// took as JSON. bench.BenchmarkDrawScale seeds the tickets and runs this in
// its own process, with GOMEMLIMIT as a 1,024 MB Lambda gets it, to read
// the process's peak memory. Bench code, never shipped.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/draw/localbeacon"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/token"
)

// Result is what one run printed.
type Result struct {
	Tickets      int64   `json:"tickets"`
	CloseSeconds float64 `json:"closeSeconds"`
	DrawSeconds  float64 `json:"drawSeconds"`
	// LiveHeapPeakMiB is the largest live heap a garbage collection found
	// (runtime/metrics /gc/heap/live:bytes, sampled every 50 ms): what the
	// draw needs, garbage not counted. The parent reads the peak RSS.
	LiveHeapPeakMiB float64 `json:"liveHeapPeakMiB"`
}

// setup is what the seeding process and this one share: the local beacon
// stand-in (same seed, same genesis, so the same chain), the event and the
// opening.
type setup struct {
	seed    []byte
	genesis time.Time
	event   string
	opens   time.Time
}

// handler answers HTTP requests from an in-process handler.
type handler struct{ h http.Handler }

func (t handler) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	prefix := flag.String("prefix", "", "the store's key prefix")
	event := flag.String("event", "", "event id")
	opens := flag.Int64("opens", 0, "the opening, unix seconds")
	genesis := flag.Int64("genesis", 0, "the stand-in's genesis, unix seconds")
	seed := flag.String("seed", "", "the stand-in's seed, hex")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the close and draw here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "drawscale:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	sd, err := hex.DecodeString(*seed)
	if err != nil || *event == "" {
		fmt.Fprintln(os.Stderr, "drawscale: -event, -opens, -genesis and -seed (hex) are required")
		os.Exit(2)
	}
	s := setup{seed: sd, genesis: time.Unix(*genesis, 0), event: *event, opens: time.Unix(*opens, 0)}
	res, err := run(context.Background(), *addr, *prefix, s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drawscale:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func run(ctx context.Context, addr, prefix string, s setup) (Result, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	clk := clock.NewManual(s.opens)
	lb, err := localbeacon.New(clk, s.seed, s.genesis, 3*time.Second)
	if err != nil {
		return Result{}, err
	}
	dc := tier1.DrawConfig{
		Chain:  lb.Info(),
		Beacon: draw.Client{URL: "http://beacon", Chain: lb.Info(), HTTP: &http.Client{Transport: handler{lb}}},
		Margin: tier1.DefaultDrawMargin,
	}
	keys, err := token.NewKeyRing("bench", []byte("drawscale-secret-0123456789abcdef"))
	if err != nil {
		return Result{}, err
	}
	svc := tier1.New(redisstore.New(rdb, redisstore.WithPrefix(prefix)), keys, clk,
		tier1.Config{Draw: dc, Logger: slog.New(slog.DiscardHandler)})

	var peak uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()

	t0 := time.Now()
	if _, err := svc.Tick(ctx); err != nil { // the advancer's close at the opening
		return Result{}, err
	}
	closeSec := time.Since(t0).Seconds()
	doc, err := svc.DrawDoc(ctx, s.event)
	if err != nil || doc.Status != draw.StatusDrawing || doc.N == nil {
		return Result{}, fmt.Errorf("after the close: %+v, %v", doc, err)
	}
	clk.Set(doc.RoundAt)
	t1 := time.Now()
	out, err := svc.Draw(ctx, s.event)
	if err != nil || out != tier1.DrawDone {
		return Result{}, fmt.Errorf("draw: %q, %v", out, err)
	}
	drawSec := time.Since(t1).Seconds()
	close(stop)
	<-done
	return Result{Tickets: *doc.N, CloseSeconds: closeSec, DrawSeconds: drawSec, LiveHeapPeakMiB: float64(peak) / (1 << 20)}, nil
}
