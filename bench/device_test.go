package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/eventsettings"
	esredis "github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
)

var (
	deviceQueue     = flag.String("bench.device-queue", "", "BenchmarkTier2Device: the bin/queue binary it starts (go build -o … ./services/queue/cmd/queue)")
	deviceInstances = flag.String("bench.device-instances", "1,4", "BenchmarkTier2Device: bin/queue processes sharing the load, one fleet per number")
	deviceConns     = flag.String("bench.device-conns", "64,256", "BenchmarkTier2Device: keep-alive connections of the load generator, one run per number")
	deviceLine      = flag.Int("bench.device-line", 100000, "BenchmarkTier2Device: visitors queued in the event's line")
	deviceDuration  = flag.Duration("bench.device-duration", 5*time.Second, "BenchmarkTier2Device: measured load per run (after 1 s of warm-up)")
	deviceRounds    = flag.Int("bench.device-rounds", 1, "BenchmarkTier2Device: rounds over every fleet")
)

// BenchmarkTier2Device measures one event's queued-poll throughput across
// the cores of one machine (scripts/device-tier2.sh runs it on the lent
// 16-core device): 1 and several bin/queue processes on one redis-server,
// each with answers from memory off (QUEUE_POLLS_FROM_STORE=true: every poll
// is the store's step, the path before memory) and on. Polls are
// production's: a Tier 1 pass on an event configured in a settings store
// (Tier 1's Redis store, on a redis-server of its own so that only the
// queue's is measured), over HTTP, at random over a line of
// -bench.device-line visitors behind one slot. It reads the queue Redis's
// main-thread CPU (INFO cpu), the CPU of the bin/queue processes and of
// the load generator (this process), and writes bench/results.json's
// tier2Device (the rest of the file is kept). Run it once: -benchtime 1x.
func BenchmarkTier2Device(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime 1x")
	}
	if *deviceQueue == "" {
		b.Fatal("-bench.device-queue names the bin/queue binary (scripts/device-tier2.sh builds it)")
	}
	root := testenv.RepoRoot(b)
	res := readResults(b, root)
	measureTier2Device(b, root, func(d Tier2Device) {
		// After every run, so that a run cut short keeps what it measured.
		res.Tier2Device = &d
		writeResults(b, root, res)
	})
}

func intList(tb testing.TB, name, s string) []int {
	tb.Helper()
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			tb.Fatalf("-%s %q: want positive whole numbers separated by commas", name, s)
		}
		out = append(out, n)
	}
	return out
}

func measureTier2Device(b *testing.B, root string, save func(Tier2Device)) {
	instances := intList(b, "bench.device-instances", *deviceInstances)
	conns := intList(b, "bench.device-conns", *deviceConns)
	v := versions(b, root)
	d := Tier2Device{MeasuredAt: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: machine(), Commit: v.Commit, Redis: v.Redis,
		LineSize: *deviceLine, DurationSeconds: deviceDuration.Seconds(),
		Command: fmt.Sprintf("bench.test -test.run '^$' -test.bench '^BenchmarkTier2Device$' -test.benchtime 1x -bench.device-queue bin/queue -bench.device-instances %s -bench.device-conns %s -bench.device-line %d -bench.device-duration %s -bench.device-rounds %d",
			*deviceInstances, *deviceConns, *deviceLine, *deviceDuration, *deviceRounds)}
	ctx := context.Background()
	queueRedis, settingsRedis := testenv.NewOwnRedis(b), testenv.NewOwnRedis(b)
	admin := redis.NewClient(&redis.Options{Addr: queueRedis.Addr})
	sdb := redis.NewClient(&redis.Options{Addr: settingsRedis.Addr})
	b.Cleanup(func() { admin.Close(); sdb.Close() })
	const ev = "device-polls"
	if _, err := esredis.New(sdb, "").PutQueueSettings(ctx, ev, eventsettings.Settings{Threshold: 1, Open: true}); err != nil {
		b.Fatal(err)
	}
	t1, err := token.ParseKeyRing("t1:" + scaleTier1Secret)
	if err != nil {
		b.Fatal(err)
	}
	passes := make([]string, *deviceLine)
	now := time.Now()
	for i := range passes {
		if passes[i], err = t1.IssueTier1(token.Tier1{Subject: pollUser(i), EventID: ev, Position: int64(i + 1), IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			b.Fatal(err)
		}
	}
	env := []string{
		"REDIS_URL=redis://" + queueRedis.Addr, "QUEUE_ENTRY_TOKEN_SECRET=" + token.RandomSecret(),
		"VWR_TIER1_TOKEN_KEYS=t1:" + scaleTier1Secret, "VWR_TIER1_STORE=redis", "VWR_TIER1_REDIS_URL=redis://" + settingsRedis.Addr,
		// Queued visitors must not go stale between fleets.
		"QUEUE_SEEN_TTL_SECONDS=3600",
	}
	logs := b.TempDir()

	// The line: every visitor joins once through one instance (the first
	// gets the slot), as their page's first poll would.
	join := startDeviceFleet(b, 1, true, env, logs, ev, passes[0])
	t0 := time.Now()
	if err := visitAll(join.urls, ev, passes, 64); err != nil {
		b.Fatal(err)
	}
	join.stop()
	b.Logf("line of %d joined in %.1f s", len(passes), time.Since(t0).Seconds())
	if n, err := admin.DBSize(ctx).Result(); err != nil || n == 0 {
		b.Fatalf("queue Redis after the joins: %d keys, %v", n, err)
	}

	for round := 1; round <= *deviceRounds; round++ {
		for _, n := range instances {
			for _, memory := range []bool{false, true} {
				f := startDeviceFleet(b, n, !memory, env, logs, ev, passes[0])
				if memory {
					// The steady state of a line (as BenchmarkTier2Scale):
					// each instance has answered each visitor once.
					t0 := time.Now()
					var wg sync.WaitGroup
					errs := make(chan error, n)
					for _, u := range f.urls {
						wg.Add(1)
						go func() { defer wg.Done(); errs <- visitAll([]string{u}, ev, passes, 64) }()
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						if err != nil {
							b.Fatal(err)
						}
					}
					b.Logf("%d instances warmed in %.1f s", n, time.Since(t0).Seconds())
				}
				for _, c := range conns {
					r := deviceLoad(b, admin, f, ev, passes, c)
					r.Round, r.Instances, r.FromMemory, r.Connections = round, n, memory, c
					d.Runs = append(d.Runs, r)
					save(d)
					b.Logf("round %d, %d instances, memory %v, %d conns: %.0f polls/s, Redis main thread %.0f %% (/proc: %.0f %%; %.1f µs/poll, %.3f cmds/poll), bin/queue %.1f cores, generator %.1f cores, machine %.1f cores busy, p99 %.1f ms, from memory %.1f %%, queued %.1f %%",
						round, n, memory, c, r.PollsPerSecond, 100*r.RedisMainThreadCPU, 100*r.RedisMainThreadCPUProc, r.RedisMainThreadMicrosPerPoll, r.RedisCommandsPerPoll,
						r.QueueCPUCores, r.LoadGeneratorCPUCores, r.MachineBusyCores, r.P99Ms, 100*r.FromMemoryShare, 100*r.QueuedShare)
				}
				f.stop()
			}
		}
	}
}

// deviceFleet is bin/queue processes started by the benchmark.
type deviceFleet struct {
	cmds []*exec.Cmd
	urls []string
}

func startDeviceFleet(tb testing.TB, n int, fromStore bool, env []string, logs, ev, pass string) *deviceFleet {
	tb.Helper()
	f := &deviceFleet{}
	for i := range n {
		addr := freeAddr(tb)
		lf, err := os.CreateTemp(logs, fmt.Sprintf("queue-%d-*.log", i))
		if err != nil {
			tb.Fatal(err)
		}
		e := append(slices.Clone(env), "QUEUE_LISTEN_ADDR="+addr, "QUEUE_POLLS_FROM_STORE="+strconv.FormatBool(fromStore))
		f.cmds = append(f.cmds, startProc(tb, *deviceQueue, nil, e, lf))
		f.urls = append(f.urls, "http://"+addr)
	}
	// Ready once a poll is answered: /healthz pings Redis only, while an
	// instance answers 503 until its first settings read.
	for i, u := range f.urls {
		if got := ready(u+"/api/queue/check/"+ev, pass); got != "" {
			tb.Fatalf("bin/queue %d at %s did not answer a poll within 20 s: %s", i, u, got)
		}
	}
	return f
}

// ready polls url with pass until it answers 200, and returns "" or the
// last answer.
func ready(url, pass string) string {
	last := ""
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		code, body, err := devicePoll(http.DefaultClient, url, pass)
		if err == nil && code == http.StatusOK {
			return ""
		}
		last = fmt.Sprintf("%d %v %s", code, err, body)
	}
	return last
}

// stop ends the processes with SIGTERM, as a deployment does.
func (f *deviceFleet) stop() {
	for _, c := range f.cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range f.cmds {
		_, _ = c.Process.Wait()
	}
}

// visitAll has each pass holder poll once through urls (worker w uses
// urls[w mod len]).
func visitAll(urls []string, ev string, passes []string, workers int) error {
	tr := &http.Transport{MaxIdleConnsPerHost: workers, MaxIdleConns: workers}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := urls[w%len(urls)] + "/api/queue/check/" + ev
			for i := next.Add(1) - 1; i < int64(len(passes)) && failed.Load() == nil; i = next.Add(1) - 1 {
				code, body, err := devicePoll(client, url, passes[i])
				if err != nil || code != http.StatusOK {
					failed.Store(fmt.Sprintf("visitor %d: %d %v %s", i, code, err, body))
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		return fmt.Errorf("visiting the line: %s", f)
	}
	return nil
}

func devicePoll(client *http.Client, url, pass string) (int, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	req.Header.Set("Authorization", "Bearer "+pass)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, body, err
}

// cpuSample is what the measurement reads before and after a run.
type cpuSample struct {
	at        time.Time
	redis     redisStats
	queue     float64 // CPU seconds of the bin/queue processes (procCPU)
	self      float64 // CPU seconds of this process (the load generator)
	redisMain float64 // CPU seconds of the queue Redis's main thread from /proc, -1 if unreadable
	busy      float64 // busy CPU seconds of the machine (/proc/stat), -1 if unreadable
	machine   float64 // all CPU seconds of the machine, -1 if unreadable
}

func sampleCPU(tb testing.TB, admin *redis.Client, f *deviceFleet) cpuSample {
	s := cpuSample{at: time.Now(), redis: redisInfo(tb, admin), redisMain: -1, busy: -1, machine: -1}
	// The main thread's own /proc entry (its id is the process id): a
	// second reading of what INFO cpu reports, from the kernel's side.
	if info, err := admin.Info(context.Background(), "server").Result(); err == nil {
		if _, rest, ok := strings.Cut(info, "process_id:"); ok {
			pid, _, _ := strings.Cut(rest, "\r\n")
			if b, err := os.ReadFile("/proc/" + pid + "/task/" + pid + "/stat"); err == nil {
				if _, rest, ok := strings.Cut(string(b), ") "); ok {
					if f := strings.Fields(rest); len(f) > 12 {
						u, _ := strconv.ParseFloat(f[11], 64)
						st, _ := strconv.ParseFloat(f[12], 64)
						s.redisMain = (u + st) / clockTicks
					}
				}
			}
		}
	}
	for _, c := range f.cmds {
		s.queue += float64(procCPU(tb, c.Process.Pid)) / 1e6
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.self = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		if line, _, _ := strings.Cut(string(b), "\n"); strings.HasPrefix(line, "cpu ") {
			var all, idle float64
			for i, x := range strings.Fields(line)[1:] {
				v, _ := strconv.ParseFloat(x, 64)
				all += v
				if i == 3 || i == 4 { // idle, iowait
					idle += v
				}
			}
			s.busy, s.machine = (all-idle)/clockTicks, all/clockTicks
		}
	}
	return s
}

// deviceLoad polls ev at random over the line through every instance in
// turn (connection w to instance w mod n), 1 s of warm-up, then
// -bench.device-duration measured.
func deviceLoad(tb testing.TB, admin *redis.Client, f *deviceFleet, ev string, passes []string, conns int) DeviceRun {
	tb.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxIdleConns: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var okN, queuedN, memN, bad atomic.Int64
	var measuring atomic.Bool
	var firstBad atomic.Value
	stop := make(chan struct{})
	lat := make([][]time.Duration, conns)
	var wg sync.WaitGroup
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := f.urls[w%len(f.urls)] + "/api/queue/check/" + ev
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				code, body, err := devicePoll(client, url, passes[rng.IntN(len(passes))])
				if err != nil || code != http.StatusOK {
					bad.Add(1)
					firstBad.CompareAndSwap(nil, fmt.Sprintf("%d %v %s", code, err, body))
					continue
				}
				if measuring.Load() {
					lat[w] = append(lat[w], time.Since(t0))
					okN.Add(1)
					if bytes.Contains(body, []byte(`"status":"queued"`)) {
						queuedN.Add(1)
					}
					if bytes.Contains(body, []byte(`"peopleAheadExact":false`)) {
						memN.Add(1)
					}
				}
			}
		}()
	}
	time.Sleep(time.Second)
	s0 := sampleCPU(tb, admin, f)
	measuring.Store(true)
	time.Sleep(*deviceDuration)
	measuring.Store(false)
	s1 := sampleCPU(tb, admin, f)
	close(stop)
	wg.Wait()
	if bad.Load() > 0 {
		tb.Fatalf("%d failed polls, the first: %v", bad.Load(), firstBad.Load())
	}
	n := okN.Load()
	if n == 0 {
		tb.Fatal("no poll answered")
	}
	el := s1.at.Sub(s0.at).Seconds()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return round1(float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000) }
	var cmds float64
	for name, c := range s1.redis.calls {
		if name != "info" {
			cmds += c - s0.redis.calls[name]
		}
	}
	tb.Logf("Redis time by command (commandstats, scripts' inner commands too): %s", s1.redis.topByMicros(s0.redis, 6))
	mainCPU := (s1.redis.mainCPU - s0.redis.mainCPU) / 1e6
	r := DeviceRun{
		Polls: n, Seconds: round3(el), PollsPerSecond: round1(float64(n) / el),
		QueuedShare: round3(float64(queuedN.Load()) / float64(n)), FromMemoryShare: round3(float64(memN.Load()) / float64(n)),
		RedisMainThreadCPU:           round3(mainCPU / el),
		RedisMainThreadMicrosPerPoll: round1(mainCPU * 1e6 / float64(n)),
		RedisCommandsPerPoll:         round3(cmds / float64(n)),
		QueueCPUCores:                round1((s1.queue - s0.queue) / el),
		QueueCPUMicrosPerPoll:        round1((s1.queue - s0.queue) * 1e6 / float64(n)),
		LoadGeneratorCPUCores:        round1((s1.self - s0.self) / el),
		P50Ms:                        pct(0.5), P99Ms: pct(0.99),
	}
	if s0.redisMain >= 0 && s1.redisMain >= 0 {
		r.RedisMainThreadCPUProc = round3((s1.redisMain - s0.redisMain) / el)
	}
	if s0.machine >= 0 && s1.machine > s0.machine {
		r.MachineBusyCores = round1((s1.busy - s0.busy) / el)
	}
	return r
}
