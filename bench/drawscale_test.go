package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw/localbeacon"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/token"
)

var (
	drawSizes   = flag.String("bench.draw", "1000000,10000000", "tickets of each sale BenchmarkDrawScale closes and draws")
	drawProfDir = flag.String("bench.drawprofile", "", "with BenchmarkDrawScale: write each run's CPU profile to this folder")
)

func drawProfile(n int) []string {
	if *drawProfDir == "" {
		return nil
	}
	return []string{"-cpuprofile", filepath.Join(*drawProfDir, fmt.Sprintf("draw-%d.pprof", n))}
}

// lambdaMemLimitMiB is what tier1app sets GOMEMLIMIT to in a 1,024 MB
// Lambda: 90 % of its memory.
const lambdaMemLimitMiB = 1024 * 9 / 10

// BenchmarkDrawScale is `make bench-draw`: it measures the draw figures of
// BENCHMARKS.md alone, keeping every other figure of bench/results.json.
// BenchmarkSuite measures the same as part of `make bench`.
func BenchmarkDrawScale(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime 1x")
	}
	root := testenv.RepoRoot(b)
	res := readResults(b, root)
	res.DrawScale = measureDrawScale(b, root)
	writeResults(b, root, res)
}

// measureDrawScale seeds a sale of each size into a redis-server of its
// own and runs bench/drawscale on it, reading that process's peak RSS.
func measureDrawScale(tb testing.TB, root string) DrawScale {
	tb.Helper()
	ds := DrawScale{
		MeasuredAt: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: machine(), Commit: versions(tb, root).Commit,
		GoMemLimitMiB: lambdaMemLimitMiB, GoMaxProcs: 1,
		Command: "go test -run '^$' -bench '^BenchmarkDrawScale$' -benchtime 1x -timeout 60m ./bench/ -bench.draw " + *drawSizes,
	}
	bin := filepath.Join(tb.TempDir(), "drawscale")
	run(tb, root, nil, "go", "build", "-o", bin, "./bench/drawscale")
	own := testenv.NewOwnRedis(tb)
	rdb := redis.NewClient(&redis.Options{Addr: own.Addr})
	defer rdb.Close()
	ctx := context.Background()
	for _, f := range strings.Split(*drawSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			tb.Fatalf("-bench.draw: %q", f)
		}
		seed := make([]byte, 32)
		_, _ = rand.Read(seed)
		genesis := time.Now().Add(-time.Hour).Truncate(time.Second)
		clk := clock.NewManual(time.Now().Truncate(time.Second))
		lb, err := localbeacon.New(clk, seed, genesis, 3*time.Second)
		if err != nil {
			tb.Fatal(err)
		}
		prefix, event, opens := fmt.Sprintf("scale%d:", n), "scale", clk.Now().Add(time.Hour)
		keys, _ := token.NewKeyRing("bench", []byte("drawscale-secret-0123456789abcdef"))
		svc := tier1.New(redisstore.New(rdb, redisstore.WithPrefix(prefix)), keys, clk,
			tier1.Config{Draw: tier1.DrawConfig{Chain: lb.Info(), Margin: tier1.DefaultDrawMargin}, Logger: slog.New(slog.DiscardHandler)})
		if _, err := svc.Schedule(ctx, event, opens, time.Time{}); err != nil {
			tb.Fatal(err)
		}
		seedTickets(tb, rdb, prefix+"vwr1:{"+event+"}:tickets", n)
		cmd := exec.Command(bin, append([]string{"-redis", own.Addr, "-prefix", prefix, "-event", event, "-opens", strconv.FormatInt(opens.Unix(), 10),
			"-genesis", strconv.FormatInt(genesis.Unix(), 10), "-seed", hex.EncodeToString(seed)}, drawProfile(n)...)...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMEMLIMIT=%.0fMiB", ds.GoMemLimitMiB), fmt.Sprintf("GOMAXPROCS=%d", ds.GoMaxProcs))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			tb.Fatalf("drawscale %d: %v", n, err)
		}
		var r DrawScaleRun
		if err := json.Unmarshal(out, &r); err != nil || r.Tickets != int64(n) {
			tb.Fatalf("drawscale %d answered %q (%v)", n, out, err)
		}
		// Linux reports ru_maxrss in KiB.
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		r.PeakRSSMiB = round1(float64(ru.Maxrss) / 1024)
		r.CPUSeconds = round1((time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Seconds())
		r.CloseSeconds, r.DrawSeconds, r.LiveHeapPeakMiB = round1(r.CloseSeconds), round1(r.DrawSeconds), round1(r.LiveHeapPeakMiB)
		tb.Logf("draw at scale: %+v", r)
		ds.Runs = append(ds.Runs, r)
		// Freeing ten million fields takes Redis longer than a read timeout.
		if err := rdb.Do(ctx, "FLUSHALL", "ASYNC").Err(); err != nil {
			tb.Fatal(err)
		}
	}
	return ds
}

// seedTickets writes n random tickets into a sale's tickets hash the way
// ticket.lua stores them, 10,000 fields per HSET, eight HSETs a pipeline.
func seedTickets(tb testing.TB, rdb *redis.Client, key string, n int) {
	tb.Helper()
	ctx := context.Background()
	const batch = 10_000
	for lo := 0; lo < n; lo += 8 * batch {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for b := lo; b < min(lo+8*batch, n); b += batch {
				args := make([]any, 0, 2*batch)
				for i := b; i < min(b+batch, n); i++ {
					var h [32]byte
					_, _ = rand.Read(h[:])
					args = append(args, fmt.Sprintf("r%021d", i), hex.EncodeToString(h[:])+":1")
				}
				p.HSet(ctx, key, args...)
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}
