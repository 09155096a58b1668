package bench

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/loadtest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

var (
	benchRounds   = flag.Int("bench.rounds", 3, "A/B rounds per scenario")
	benchDuration = flag.Duration("bench.duration", 4*time.Second, "measured load per run (after a 0.5 s warm-up)")
	benchConns    = flag.Int("bench.conns", 32, "concurrent connections of the load generator")
	benchVisitors = flag.Int("bench.visitors", 10000, "visitors of the loadtest")
	benchOnly     = flag.String("bench.only", "", "measure only this part and keep the rest of bench/results.json: recovery or estimates (the two wait-estimate rehearsals)")
	benchSale     = flag.Int("bench.sale-visitors", 100000, "visitors of the sale rehearsal (0: none)")
)

// BenchmarkSuite is `make bench` after the Go benchmarks: it measures
// everything BENCHMARKS.md reports, in one run on one redis-server of its
// own, writes bench/results.json and renders BENCHMARKS.md from it. It
// expects bench/gobench.txt and bench/pprof-top.txt from the Makefile's
// earlier steps. Run it once: -benchtime 1x.
func BenchmarkSuite(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime 1x")
	}
	root := testenv.RepoRoot(b)
	own := testenv.NewOwnRedis(b)
	rdb := redis.NewClient(&redis.Options{Addr: own.Addr})
	defer rdb.Close()
	ctx := context.Background()

	res := Results{MeasuredAt: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: machine(), Versions: versions(b, root)}
	bins := b.TempDir()
	if *benchOnly == "recovery" {
		run(b, root, nil, "go", "build", "-o", filepath.Join(bins, "vwr"), "./cmd/vwr")
		old, err := os.ReadFile(filepath.Join(root, "bench", "results.json"))
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(old, &res); err != nil {
			b.Fatal(err)
		}
		res.Recovery = recoveryRuns(b, root, bins, own.Addr, versions(b, root).Commit)
		writeResults(b, root, res)
		return
	} else if *benchOnly == "estimates" {
		run(b, root, nil, "go", "build", "-o", filepath.Join(bins, "vwr"), "./cmd/vwr")
		old, err := os.ReadFile(filepath.Join(root, "bench", "results.json"))
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(old, &res); err != nil {
			b.Fatal(err)
		}
		commit := versions(b, root).Commit
		res.Loadtest = rehearsal(b, root, bins, own.Addr, commit, true)
		res.SaleRehearsal = saleRehearsal(b, root, bins, own.Addr, commit)
		// The commands list names the rehearsals as they ran now.
		var cmds []string
		for _, c := range res.Commands {
			if !strings.Contains(c, " loadtest -visitors "+strconv.Itoa(*benchVisitors)+" ") && !strings.Contains(c, "bench/loadtest-sale") {
				cmds = append(cmds, c)
			}
		}
		res.Commands = append(cmds, res.Loadtest.Command)
		if res.SaleRehearsal != nil {
			res.Commands = append(res.Commands, res.SaleRehearsal.Command)
		}
		writeResults(b, root, res)
		return
	} else if *benchOnly != "" {
		b.Fatalf("-bench.only %q: only recovery or estimates can be measured alone", *benchOnly)
	}
	for _, c := range [][]string{
		{"go", "build", "-o", filepath.Join(bins, "queue"), "./services/queue/cmd/queue"},
		{"go", "build", "-o", filepath.Join(bins, "floor"), "./bench/floor"},
		{"go", "build", "-o", filepath.Join(bins, "vwr"), "./cmd/vwr"},
	} {
		run(b, root, nil, c...)
	}
	res.Commands = []string{
		"go test -run '^$' -bench 'Check' -benchmem -benchtime 20000x ./bench/ | tee bench/gobench.txt",
		"go test -run '^$' -bench 'CheckHTTP' -benchtime 20000x -cpuprofile bench/cpu.out -o bench/bench.test ./bench/ && go tool pprof -top -nodecount 10 bench/bench.test bench/cpu.out > bench/pprof-top.txt",
		fmt.Sprintf("go test -run '^$' -bench '^BenchmarkSuite$' -benchtime 1x -timeout 120m ./bench/ -bench.rounds %d -bench.duration %s -bench.conns %d -bench.visitors %d -bench.sale-visitors %d",
			*benchRounds, *benchDuration, *benchConns, *benchVisitors, *benchSale),
	}
	res.GoBenchmarks = goBench(b, filepath.Join(root, "bench", "gobench.txt"))
	res.PprofTop = pprofTop(b, filepath.Join(root, "bench", "pprof-top.txt"))

	script := checkScript(b, root)
	if err := script.Load(ctx, rdb).Err(); err != nil {
		b.Fatal(err)
	}

	// Tier 2 check: bin/queue (A) and the floor (B), same Redis, same load.
	secret := token.RandomSecret()
	qAddr, fAddr := freeAddr(b), freeAddr(b)
	logf, err := os.Create(filepath.Join(b.TempDir(), "queue.log"))
	if err != nil {
		b.Fatal(err)
	}
	svc := startProc(b, filepath.Join(bins, "queue"), nil, []string{
		"QUEUE_LISTEN_ADDR=" + qAddr, "REDIS_URL=redis://" + own.Addr, "QUEUE_ENTRY_TOKEN_SECRET=" + secret,
		"QUEUE_USER_HEADER=X-User-Id", "QUEUE_ADMIN_TOKEN=bench", "QUEUE_THRESHOLD=1", "QUEUE_OPEN_EVENTS=true",
		// Polled users must not go stale between rounds.
		"QUEUE_SEEN_TTL_SECONDS=3600",
	}, logf)
	floor := startProc(b, filepath.Join(bins, "floor"), []string{"-addr", fAddr, "-redis", "redis://" + own.Addr,
		"-secret", secret, "-threshold", "1"}, nil, nil)
	waitHTTP(b, "http://"+qAddr+"/healthz")
	waitTCP(b, fAddr)

	const pollUsers = 10000
	pollEvent := "bench-polls"
	populate(b, rdb, script, pollEvent, pollUsers, 1, func(i int) string { return fmt.Sprintf("u:%012d", i) })
	res.LoadGenerator = fmt.Sprintf("Load generator: Go net/http client in the benchmark process, %d keep-alive connections, POST /api/queue/check/{event} with X-User-Id, %.1f s measured after 0.5 s of warm-up per run; "+
		"joins: a new user per request on a fresh event with threshold 1; polls: %d users already queued, picked at random; direct: a new user per request with threshold 1,000,000 (each answer mints an entry token). "+
		"bin/queue runs with its default logging (LOG_LEVEL=info).", *benchConns, benchDuration.Seconds(), pollUsers)
	res.CheckServiceRps, res.CheckFloorRps, res.ServiceOverFloor = map[string]float64{}, map[string]float64{}, map[string]float64{}
	res.ServiceCPUMicrosPerCheck, res.FloorCPUMicrosPerCheck, res.Rounds = map[string]float64{}, map[string]float64{}, map[string][]Round{}
	for _, sc := range Scenarios {
		var sRps, fRps, ratios, sCPU, fCPU []float64
		for round := 1; round <= *benchRounds; round++ {
			var rd Round
			for _, side := range []struct {
				name string
				addr string
				proc *exec.Cmd
				rps  *float64
				cpu  *float64
			}{{"queue", qAddr, svc, &rd.ServiceRps, &rd.ServiceCPUMicros}, {"floor", fAddr, floor, &rd.FloorRps, &rd.FloorCPUMicros}} {
				ev := pollEvent
				if sc != "polls" {
					ev = fmt.Sprintf("bench-%s-%s-%d-%d", sc, side.name, round, time.Now().UnixNano()%1e9)
				}
				if sc == "direct" {
					setThreshold(b, qAddr, ev, 1000000)
				}
				*side.rps, *side.cpu = loadRun(b, "http://"+side.addr+"/api/queue/check/"+ev, sc, pollUsers, side.proc.Process.Pid)
			}
			res.Rounds[sc] = append(res.Rounds[sc], rd)
			sRps, fRps = append(sRps, rd.ServiceRps), append(fRps, rd.FloorRps)
			ratios = append(ratios, rd.ServiceRps/rd.FloorRps)
			sCPU, fCPU = append(sCPU, rd.ServiceCPUMicros), append(fCPU, rd.FloorCPUMicros)
			b.Logf("%s round %d: queue %.0f/s (%.1f µs CPU), floor %.0f/s (%.1f µs CPU)", sc, round, rd.ServiceRps, rd.ServiceCPUMicros, rd.FloorRps, rd.FloorCPUMicros)
		}
		res.CheckServiceRps[sc], res.CheckFloorRps[sc] = round1(median(sRps)), round1(median(fRps))
		res.ServiceOverFloor[sc] = round3(median(ratios))
		res.ServiceCPUMicrosPerCheck[sc], res.FloorCPUMicrosPerCheck[sc] = round1(median(sCPU)), round1(median(fCPU))
	}
	_ = svc.Process.Kill()
	_ = floor.Process.Kill()

	// The same script under redis-benchmark.
	res.CheckRawRps, res.ServiceOverRaw = map[string]float64{}, map[string]float64{}
	for _, sc := range Scenarios {
		ev, uid, rnd, th := "bench-raw-"+sc, "u:__rand_int__", "100000000", "1"
		switch sc {
		case "polls":
			ev, rnd = pollEvent, strconv.Itoa(pollUsers)
		case "direct":
			th = "1000000000"
		}
		res.CheckRawRps[sc] = round1(redisBenchmark(b, own.Addr, script.Hash(), ev, uid, rnd, th))
		res.ServiceOverRaw[sc] = round3(res.CheckServiceRps[sc] / res.CheckRawRps[sc])
		b.Logf("redis-benchmark %s: %.0f/s", sc, res.CheckRawRps[sc])
	}
	res.Commands = append(res.Commands, fmt.Sprintf("redis-benchmark -h 127.0.0.1 -p PORT -c %d -n 200000 -r R --csv EVALSHA <sha of lib.lua+check.lua> %d %s u:__rand_int__ %s",
		*benchConns, len(eventKeys("E")), strings.Join(eventKeys("E"), " "), strings.ReplaceAll(strings.Join(checkArgs("1", "NOW", "TH"), " "), "  ", " '' ")))

	// Redis bytes per waiting user.
	const waiters = 100000
	memEvent := "bench-memory"
	populate(b, rdb, script, memEvent, waiters, 1, func(i int) string { return "w:" + strconv.Itoa(i) })
	total, err := loadtest.EventMemory(ctx, rdb, memEvent)
	if err != nil {
		b.Fatal(err)
	}
	queued, err := rdb.ZCard(ctx, "{"+memEvent+"}:queue").Result()
	if err != nil {
		b.Fatal(err)
	}
	res.RedisBytesPerWaitingUser, res.RedisBytesUsers = round1(float64(total)/float64(queued)), waiters

	res.SingleEventCeiling = ceiling(res.CheckRawRps["joins"])

	// Tier 1 capacity on DynamoDB (moto).
	moto := testenv.Moto(b)
	for _, shards := range []int{1, 4, 16} {
		id := testenv.UniqueID(b)
		dir := b.TempDir()
		env := []string{"REDIS_URL=redis://" + own.Addr, "VWR_TIER1_STORE=dynamodb", "AWS_ENDPOINT_URL=" + moto,
			"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
			"VWR_TIER1_EVENTS_TABLE=" + id + "-events", "VWR_TIER1_POSITIONS_TABLE=" + id + "-positions"}
		const visitors = 2000
		run(b, root, env, filepath.Join(bins, "vwr"), "loadtest", "-visitors", strconv.Itoa(visitors), "-rate", "200", "-shards", strconv.Itoa(shards),
			"-threshold", "400", "-dwell", "1s", "-event", "cap"+strconv.Itoa(shards), "-out", dir, "-quiet", "-timeout", "10m")
		rep := readReport(b, dir)
		o := rep.BackendOpsPerVisitor
		t1 := Tier1Capacity{Shards: shards, Visitors: visitors, DynamoWritesPerVisitor: o.DynamoWrites, DynamoReadsPerVisitor: o.DynamoReads,
			HottestPartitionWriteShare: o.HottestPartitionWriteShare, HottestItemWriteShare: o.HottestItemWriteShare, ImpliedEnterCapacity: o.ImpliedEnterCapacity}
		if o.HottestPartitionWriteShare > 0 {
			t1.WritesPerSecondAtLimit = float64(int(1000/o.HottestPartitionWriteShare + 0.5))
		}
		res.Tier1Capacity = append(res.Tier1Capacity, t1)
		b.Logf("tier 1, %d shards: %+v", shards, t1)
	}
	res.Commands = append(res.Commands, "VWR_TIER1_STORE=dynamodb AWS_ENDPOINT_URL=<moto> vwr loadtest -visitors 2000 -rate 200 -shards N -threshold 400 -dwell 1s   # N = 1, 4, 16")

	res.Loadtest = rehearsal(b, root, bins, own.Addr, res.Versions.Commit, false)
	res.Commands = append(res.Commands, res.Loadtest.Command)
	res.SaleRehearsal = saleRehearsal(b, root, bins, own.Addr, res.Versions.Commit)
	if res.SaleRehearsal != nil {
		res.Commands = append(res.Commands, res.SaleRehearsal.Command)
	}

	res.Recovery = recoveryRuns(b, root, bins, own.Addr, res.Versions.Commit)
	// A scheduled sale's close and draw at scale, in a process of its own.
	res.DrawScale = measureDrawScale(b, root)
	// What a production poll costs Redis, beside the "before" column kept
	// from bench/results.json.
	res.Tier2Scale.Before = keptTier2Before(b, root)
	after := measureTier2Scale(b, root)
	res.Tier2Scale.After = &after
	res.Commands = append(res.Commands, "go test -run '^$' -bench '^BenchmarkTier2Scale$' -benchtime 1x ./bench/   # inside BenchmarkSuite")
	writeResults(b, root, res)
}

// rehearsal is the 10,000-visitor rehearsal: Tier 1 releases 400/s while
// Tier 2 drains 1,000 per 5 s dwell, so a Tier 2 line forms and both tiers'
// wait estimates are put to the test. alone: it runs apart from the rest of
// the suite, so it says when and at what load.
func rehearsal(b *testing.B, root, bins, redisAddr, commit string, alone bool) LoadtestSummary {
	args := []string{"loadtest", "-visitors", strconv.Itoa(*benchVisitors), "-rate", "500", "-threshold", "1000", "-dwell", "5s", "-shards", "4", "-batch", "400", "-out", "bench/loadtest", "-quiet"}
	l := runRehearsal(b, root, bins, redisAddr, commit, args, "bench/loadtest")
	if !alone {
		l.MeasuredAt, l.Commit, l.LoadAverage = "", "", 0
	}
	b.Logf("rehearsal: %+v", l)
	return l
}

// saleRehearsal is -bench.sale-visitors (100,000) arriving as a sale opens
// — 1,500/s at first, falling by e every 67 s, so 59 % come within the
// first minute and the rest in a tail — on 16 shards, with Tier 1 and Tier
// 2 letting in 600/s: the Tier 1 line grows for a minute and waits reach
// about a minute.
func saleRehearsal(b *testing.B, root, bins, redisAddr, commit string) *LoadtestSummary {
	if *benchSale <= 0 {
		return nil
	}
	args := []string{"loadtest", "-visitors", strconv.Itoa(*benchSale), "-arrival", "sale", "-rate", "1500", "-threshold", "3000", "-dwell", "5s",
		"-shards", "16", "-batch", "600", "-concurrency", "512", "-event", "sale", "-timeout", "40m", "-out", "bench/loadtest-sale", "-quiet"}
	l := runRehearsal(b, root, bins, redisAddr, commit, args, "bench/loadtest-sale")
	b.Logf("sale rehearsal: %+v", l)
	return &l
}

// runRehearsal runs `vwr loadtest args` with Tier 2 on the suite's
// redis-server and Tier 1 on one of its own (the embedded Redis cannot take
// a sale's opening: connection pool timeouts at 1,500 enters/s), and sums
// up its report in out (relative to root), saying when and at what load it
// ran.
func runRehearsal(b *testing.B, root, bins, redisAddr, commit string, args []string, out string) LoadtestSummary {
	tier1 := testenv.NewOwnRedis(b)
	at, load := time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine().LoadAverage
	run(b, root, []string{"REDIS_URL=redis://" + redisAddr, "VWR_TIER1_REDIS_URL=redis://" + tier1.Addr}, append([]string{filepath.Join(bins, "vwr")}, args...)...)
	dir := filepath.Join(root, filepath.FromSlash(out))
	_ = os.Remove(filepath.Join(dir, "vwr.log"))
	l := summarize(readReport(b, dir), "REDIS_URL=redis://127.0.0.1:PORT VWR_TIER1_REDIS_URL=redis://127.0.0.1:PORT2 vwr "+strings.Join(args, " "), out)
	l.MeasuredAt, l.Commit, l.LoadAverage = at, commit, load
	return l
}

// summarize is a rehearsal's report as LoadtestSummary.
func summarize(rep loadtest.Report, command, plots string) LoadtestSummary {
	w := rep.WaitEstimateError
	l := LoadtestSummary{
		Command: command, Arrival: rep.Visitors.Arrival, RatePerSecond: rep.Visitors.RatePerSecond, Plots: plots,
		Visitors: rep.Visitors.Total, Admitted: rep.Visitors.Admitted, LostVisitors: rep.LostVisitors,
		InversionsTier1: rep.Inversions.Tier1, InversionsTier2: rep.Inversions.Tier2, MaxActive: rep.MaxActive, Threshold: rep.Threshold,
		OverAdmissions: rep.OverAdmissions, WaitErrorMedian: w.Median, WaitErrorP90: w.P90,
		RequestsPerSecond: rep.ThroughputPerSecond.Requests, AdmissionsPerSecond: rep.ThroughputPerSecond.Admissions,
		DurationSeconds: rep.Visitors.DurationSeconds, RedisCommandsPerRequest: rep.BackendOpsPerVisitor.RedisCommandsPerRequest,
		RedisBytesPerWaiter: rep.RedisBytesPerWaiter, Tier2CheckP99Ms: rep.LatencyMs["tier2.check"].P99,
		StepLateMsP99: rep.Visitors.StepLateMs.P99,
	}
	if w.Later != nil {
		l.WaitErrorLaterMedian, l.WaitErrorLaterP90 = w.Later.Median, w.Later.P90
	}
	if t1 := w.Tier1; t1 != nil {
		l.WaitErrorTier1Median, l.WaitErrorTier1P90 = t1.Median, t1.P90
		if t1.Later != nil {
			l.WaitErrorTier1LaterMedian, l.WaitErrorTier1LaterP90 = t1.Later.Median, t1.Later.P90
		}
		if t1.PeopleAhead != nil {
			l.PeopleAheadWithinBound, l.PeopleAheadP90OfLine = t1.PeopleAhead.WithinBound, t1.PeopleAhead.P90OfLine
		}
	}
	return l
}

// readResults reads bench/results.json, which a benchmark that measures
// only some figures keeps the others of.
func readResults(tb testing.TB, root string) Results {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "bench", "results.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(raw, &res); err != nil {
		tb.Fatal(err)
	}
	return res
}

// writeResults writes bench/results.json and BENCHMARKS.md's generated part.
func writeResults(b *testing.B, root string, res Results) {
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bench", "results.json"), append(out, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := updateMD(filepath.Join(root, "BENCHMARKS.md"), res); err != nil {
		b.Fatal(err)
	}
}

// recoveryRuns rehearses a sale that loses Tier 2's Redis 10 s in, with
// every Tier 2 default: once a FLUSHALL under running instances, once a
// FLUSHALL while both instances restart (a fifth of the admitted visitors
// also try their pass again).
func recoveryRuns(b *testing.B, root, bins, redisAddr, commit string) []RecoveryRun {
	var out []RecoveryRun
	window := queue.Config{}.WithDefaults().RecoveryWindow.Seconds()
	for _, fault := range []struct{ kind, extra string }{{"redis-flush", ""}, {"redis-flush+restart", "0.2"}} {
		dir := b.TempDir()
		args := []string{"loadtest", "-visitors", "1000", "-rate", "100", "-threshold", "100", "-dwell", "5s",
			"-fault", fault.kind + "@10s", "-event", "recovery-" + strings.ReplaceAll(fault.kind, "+", "-"), "-quiet"}
		if fault.extra != "" {
			args = append(args, "-reenter", fault.extra)
		}
		load := machine().LoadAverage
		at := time.Now().UTC().Format("2006-01-02 15:04 UTC")
		run(b, root, []string{"REDIS_URL=redis://" + redisAddr}, append([]string{filepath.Join(bins, "vwr")}, append(args, "-out", dir)...)...)
		rep := readReport(b, dir)
		rr := RecoveryRun{
			Command: "REDIS_URL=redis://127.0.0.1:PORT vwr " + strings.Join(args, " "), Fault: fault.kind, MeasuredAt: at, Commit: commit, LoadAverage: load,
			WindowSeconds: window, Visitors: rep.Visitors.Total, LostVisitors: rep.LostVisitors, InversionsTier2: rep.Inversions.Tier2,
			OverAdmissions: rep.OverAdmissions, AdmittedTwice: rep.AdmittedTwice, Reentered: rep.Visitors.Reentered,
			ReentryRefused: rep.Visitors.ReentryRefused, WaitErrorMedian: rep.WaitEstimateError.Median,
		}
		if len(rep.Faults) == 1 {
			rr.RecoverySeconds = rep.Faults[0].RecoverySeconds
		}
		b.Logf("recovery %s: %+v", fault.kind, rr)
		out = append(out, rr)
	}
	return out
}

// loadRun drives url for benchDuration after a warm-up and returns checks/s
// and the server process's CPU µs per check over the measured part.
func loadRun(tb testing.TB, url, scenario string, pollUsers, pid int) (rps, cpuMicros float64) {
	tb.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: *benchConns, MaxIdleConns: *benchConns}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	var seq, okN, bad atomic.Int64
	var measuring atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range *benchConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for {
				select {
				case <-stop:
					return
				default:
				}
				uid := fmt.Sprintf("n:%d", seq.Add(1))
				if scenario == "polls" {
					uid = fmt.Sprintf("u:%012d", rng.IntN(pollUsers))
				}
				req, _ := http.NewRequest(http.MethodPost, url, nil)
				req.Header.Set("X-User-Id", uid)
				resp, err := client.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				_, _ = bufio.NewReader(resp.Body).WriteTo(devNull{})
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.Add(1)
					continue
				}
				if measuring.Load() {
					okN.Add(1)
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	cpu0 := procCPU(tb, pid)
	okN.Store(0)
	measuring.Store(true)
	t0 := time.Now()
	time.Sleep(*benchDuration)
	measuring.Store(false)
	n, el := okN.Load(), time.Since(t0)
	cpu1 := procCPU(tb, pid)
	close(stop)
	wg.Wait()
	if bad.Load() > 0 {
		tb.Fatalf("%s: %d failed checks", url, bad.Load())
	}
	return round1(float64(n) / el.Seconds()), round1(float64(cpu1-cpu0) / float64(n))
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

// procCPU is a process's user+system CPU time in µs, from /proc/PID/stat.
func procCPU(tb testing.TB, pid int) int64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	// Fields after "pid (comm) ": state is [0], utime [11], stime [12], in clock ticks.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return (ut + st) * 1e6 / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports here.
const clockTicks = 100

func checkScript(tb testing.TB, root string) *redis.Script {
	tb.Helper()
	lib, err := os.ReadFile(filepath.Join(root, "services/queue/redisstore/lib.lua"))
	if err != nil {
		tb.Fatal(err)
	}
	chk, err := os.ReadFile(filepath.Join(root, "services/queue/redisstore/check.lua"))
	if err != nil {
		tb.Fatal(err)
	}
	return redis.NewScript(string(lib) + string(chk))
}

// eventKeys is check.lua's KEYS list for ev, from the store's keys.go (the
// one place keys come from; redis-benchmark needs the names spelled out).
// TestRawCheckMatchesStore fails when the raw call and the store differ.
func eventKeys(ev string) []string { return redisstore.EventKeys("", ev) }

// checkArgs is check.lua's ARGV after the user id, as redisstore.Check sends
// them for a visitor with a Tier 1 pass (score: its position) and no entry
// token, from an instance that has seen no epoch yet (so no recovery window
// ever opens), with the default idle limit and no durable ledger.
func checkArgs(score, now, threshold string) []string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return []string{score, now, "600000", threshold, ms(queue.RateWindow), "0", "", "bench-epoch", "0", "0",
		"p", ms(queue.DefaultActiveIdle), "0", ms(queue.ServedRetention)}
}

// populate runs check.lua for n users of ev in pipelines of 1,000.
func populate(tb testing.TB, rdb *redis.Client, s *redis.Script, ev string, n int, threshold int64, uid func(int) string) {
	tb.Helper()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	for i := 0; i < n; i += 1000 {
		pipe := rdb.Pipeline()
		for j := i; j < min(i+1000, n); j++ {
			args := []any{uid(j)}
			for _, a := range checkArgs(strconv.FormatInt(now+int64(j), 10), strconv.FormatInt(now, 10), strconv.FormatInt(threshold, 10)) {
				args = append(args, a)
			}
			s.EvalSha(ctx, pipe, eventKeys(ev), args...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			tb.Fatal(err)
		}
	}
}

func redisBenchmark(tb testing.TB, addr, sha, ev, uid, rnd, th string) float64 {
	tb.Helper()
	host, port, _ := net.SplitHostPort(addr)
	keys := eventKeys(ev)
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(*benchConns), "-n", "200000", "-r", rnd, "--csv", "EVALSHA", sha, strconv.Itoa(len(keys))}
	args = append(args, keys...)
	args = append(args, uid)
	args = append(args, checkArgs("1", strconv.FormatInt(time.Now().UnixMilli(), 10), th)...)
	out, err := exec.Command("redis-benchmark", args...).Output()
	if err != nil {
		tb.Fatalf("redis-benchmark (from redis-tools; `make testenv` installs it): %v", err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(rows) < 2 || len(rows[1]) < 2 {
		tb.Fatalf("redis-benchmark output %q: %v", out, err)
	}
	v, err := strconv.ParseFloat(rows[1][1], 64)
	if err != nil {
		tb.Fatalf("redis-benchmark rps %q: %v", rows[1][1], err)
	}
	return v
}

func setThreshold(tb testing.TB, addr, ev string, n int) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/api/queue/admin/threshold/"+ev, strings.NewReader(fmt.Sprintf(`{"threshold":%d}`, n)))
	req.Header.Set("Authorization", "Bearer bench")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("set threshold: %d", resp.StatusCode)
	}
}

func readReport(tb testing.TB, dir string) loadtest.Report {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, loadtest.ReportFile))
	if err != nil {
		tb.Fatal(err)
	}
	var r loadtest.Report
	if err := json.Unmarshal(b, &r); err != nil {
		tb.Fatal(err)
	}
	return r
}

func run(tb testing.TB, dir string, env []string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func startProc(tb testing.TB, bin string, args, env []string, logw *os.File) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if logw != nil {
		cmd.Stdout, cmd.Stderr = logw, logw
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func freeAddr(tb testing.TB) string { return "127.0.0.1:" + strconv.Itoa(testenv.FreePort(tb)) }

func waitHTTP(tb testing.TB, url string) {
	tb.Helper()
	for range 100 {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("%s did not answer 200 within 10 s", url)
}

func waitTCP(tb testing.TB, addr string) {
	tb.Helper()
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("%s did not accept connections within 10 s", addr)
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.MemoryGiB = round1(kb / (1 << 20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAverage, _ = strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	}
	return m
}

func versions(tb testing.TB, root string) Versions {
	v := Versions{Go: runtime.Version()}
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "v=") {
				v.Redis = strings.TrimPrefix(f, "v=")
			}
		}
	}
	// A copy of the tree without its history (the device machine's) names
	// its commit in VWR_BENCH_COMMIT.
	if v.Commit = os.Getenv("VWR_BENCH_COMMIT"); v.Commit == "" {
		v.Commit = strings.TrimSpace(run(tb, root, nil, "git", "rev-parse", "--short", "HEAD"))
	}
	return v
}

// goBench reads `go test -bench` output.
func goBench(tb testing.TB, path string) []GoBench {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (make bench writes it first)", err)
	}
	var out []GoBench
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		g := GoBench{Name: f[0]}
		for i := 2; i+1 < len(f); i += 2 {
			x, _ := strconv.ParseFloat(f[i], 64)
			switch f[i+1] {
			case "ns/op":
				g.NsPerOp = x
			case "B/op":
				g.BytesPerOp = x
			case "allocs/op":
				g.AllocsPerOp = x
			}
		}
		out = append(out, g)
	}
	return out
}

// pprofTop keeps `go tool pprof -top`'s table: its header and ten rows.
func pprofTop(tb testing.TB, path string) []string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (make bench writes it first)", err)
	}
	var out []string
	on := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "flat%") {
			on = true
		}
		if on && strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	if len(out) > 11 {
		out = out[:11]
	}
	return out
}

// ceiling is one event's measured node ceiling (raw checks/s) and what Tier
// 1's defaults send at it: the advancer's release rate, plus a line of 1,000
// polling at the queue's own nextPoll for them.
func ceiling(raw float64) Ceiling {
	const line = 1000
	tick := tier1.DefaultTickEvery.Seconds()
	released := float64(tier1.DefaultBatch) / tick
	poll := queue.NextPoll(queue.StatusQueued, line)
	load := released + float64(line)/float64(poll)
	return Ceiling{
		ChecksPerSecond: raw, Tier1DefaultBatch: tier1.DefaultBatch, Tier1DefaultTickSeconds: tick,
		Note: fmt.Sprintf("Every key of an event carries the hash tag {event}, so one event lives in one Cluster slot on one node, and adding nodes does not raise this figure. "+
			"Tier 1's metering keeps an event under it: the advancer lets at most batchSize visitors through per tick (defaults: %d per %.0f s tick, %.0f/s). "+
			"Each released visitor costs Tier 2 one joining check and then one check per nextPoll (%d s while within the first %s places, %d s up to 5,000), "+
			"so an event's load is about released/s + queued visitors ÷ nextPoll: with the defaults and %s people in line, about %s checks/s, %.0f× below the measured node ceiling. "+
			"Raise batchSize × ticks per second only while that sum stays well under it.",
			tier1.DefaultBatch, tick, released, poll, "1,000", queue.NextPoll(queue.StatusQueued, 5000), "1,000", thousands(load), raw/load),
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }
func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// updateMD replaces the generated part of BENCHMARKS.md.
func updateMD(path string, r Results) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, BeginMarker), strings.Index(s, EndMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s: markers missing", path)
	}
	// Render ends the marker line itself: keep the rest without its newline,
	// or each update adds a blank line.
	rest := strings.TrimPrefix(s[j+len(EndMarker):], "\n")
	return os.WriteFile(path, []byte(s[:i]+Render(r)+rest), 0o644)
}

// TestRawCheckMatchesStore keeps the raw EVALSHA of populate and
// redis-benchmark on the store's contract: a user the raw call admits,
// redisstore.Check sees in the same active set, and the raw call then sees
// the store's queued user and the epoch it started, so the KEYS and ARGV
// above are check.lua's.
func TestRawCheckMatchesStore(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	script := checkScript(t, testenv.RepoRoot(t))
	if err := script.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	ev := "raw-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	populate(t, rdb, script, ev, 1, 1, func(int) string { return "raw-a" })

	store := redisstore.New(rdb, redisstore.Options{})
	now := time.Now()
	snap, err := store.Check(ctx, queue.CheckInput{EventID: ev, UserID: "store-b", Score: now.UnixMilli(), Now: now,
		ActiveTTL: 10 * time.Minute, DefaultThreshold: 1, Epoch: queue.EpochInput{Candidate: "store-epoch"},
		Pass: true, Idle: queue.DefaultActiveIdle})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Status != queue.StatusQueued || snap.ActiveCount != 1 || snap.Rank != 0 {
		t.Fatalf("store after a raw admission: %+v, want queued at rank 0 with 1 active", snap)
	}

	args := []any{"raw-c"}
	for _, a := range checkArgs(strconv.FormatInt(now.UnixMilli()+1, 10), strconv.FormatInt(now.UnixMilli(), 10), "1") {
		args = append(args, a)
	}
	rep, err := script.EvalSha(ctx, rdb, eventKeys(ev), args...).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) < 10 || rep[0] != "queued" || rep[2] != int64(1) || rep[4] != int64(1) || rep[9] != snap.Epoch.ID {
		t.Fatalf("raw check after the store's: %v, want queued at rank 1, 1 active, epoch %q", rep, snap.Epoch.ID)
	}
}

// TestCeilingNote keeps the single-event paragraph of bench/results.json on
// today's defaults (Tier 1's batch and tick, the queue's nextPoll): change
// one and this asks for a new `make bench`.
func TestCeilingNote(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "bench", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if got := ceiling(r.SingleEventCeiling.ChecksPerSecond); got != r.SingleEventCeiling {
		t.Fatalf("bench/results.json's single-event ceiling is stale: run `make bench`\nhave %+v\nwant %+v", r.SingleEventCeiling, got)
	}
}
