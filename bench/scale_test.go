package bench

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/eventsettings"
	esredis "github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/loadtest/idle"
	"github.com/vwr-go/vwr/internal/redistrips"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/app"
)

var (
	benchBefore     = flag.Bool("bench.before", false, "BenchmarkTier2Scale: store the figures as the 'before' column of bench/results.json")
	benchDevice     = flag.Bool("bench.device", false, "BenchmarkTier2Scale: store the figures as the 16-core device's column of bench/results.json (scripts/device-tier2.sh)")
	scaleInstances  = flag.Int("bench.instances", 4, "BenchmarkTier2Scale: Tier 2 instances sharing the load")
	scaleIdleEvents = flag.Int("bench.idle-events", 20000, "BenchmarkTier2Scale: configured events of the idle measurement")
	scaleIdleFor    = flag.Duration("bench.idle-duration", 30*time.Second, "BenchmarkTier2Scale: measured idle time (one stale sweep interval)")
)

// BenchmarkTier2Scale measures what a production poll costs Redis: checks
// carry a Tier 1 pass on an event configured in a settings store (Tier 1's
// Redis store, on a server apart from the queue's, so that only the
// queue's Redis is measured), served by several instances over HTTP. It
// also counts the nodes one check touches on the project's 3-node Cluster,
// and the commands/s a fleet sends while 20,000 events hold visitors and
// nobody waits. The figures go to bench/results.json's tier2Scale (after,
// or before with -bench.before); the rest of the file is kept. BenchmarkSuite
// runs it too. Run it once: -benchtime 1x.
func BenchmarkTier2Scale(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime 1x")
	}
	root := testenv.RepoRoot(b)
	res := readResults(b, root)
	m := measureTier2Scale(b, root)
	switch {
	case *benchBefore:
		res.Tier2Scale.Before = &m
	case *benchDevice:
		res.Tier2Scale.Device = &m
	default:
		res.Tier2Scale.After = &m
	}
	writeResults(b, root, res)
}

// keptTier2Before is the "before" column of bench/results.json, which no
// later run measures again.
func keptTier2Before(tb testing.TB, root string) *Tier2Scale {
	tb.Helper()
	return readResults(tb, root).Tier2Scale.Before
}

// measureTier2Scale is BenchmarkTier2Scale's measurement.
func measureTier2Scale(b *testing.B, root string) Tier2Scale {
	m := Tier2Scale{MeasuredAt: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: machine(),
		Commit: versions(b, root).Commit, Instances: *scaleInstances, Connections: *benchConns,
		DurationSeconds: benchDuration.Seconds(), Scenarios: map[string]ScaleScenario{}}
	own := testenv.NewOwnRedis(b)
	fleet := newFleet(b, *scaleInstances, func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: own.Addr, PoolSize: 64})
	})
	admin := redis.NewClient(&redis.Options{Addr: own.Addr})
	b.Cleanup(func() { admin.Close() })
	fleet.serveHTTP(b)
	stop := fleet.runJobs()

	const pollUsers = 10000
	pollEvent := fleet.configure(b, "polls", 1)
	fleet.join(b, pollEvent, pollUsers)
	prof, err := os.Create(filepath.Join(root, "bench", "scale-cpu.out"))
	if err != nil {
		b.Fatal(err)
	}
	for _, sc := range Scenarios {
		ev := pollEvent
		switch sc {
		case "joins":
			ev = fleet.configure(b, "joins", 1)
		case "direct":
			ev = fleet.configure(b, "direct", 1_000_000_000)
		}
		if sc == "polls" {
			// The same polls with every one the store's step, on the same
			// fleet at the same load: the baseline of the memory's figures.
			for _, a := range fleet.apps {
				a.Service.AnswerFromMemory(false)
			}
			st := fleet.load(b, admin, ev, sc, pollUsers)
			m.PollsFromStore = &st
			b.Logf("tier 2 scale, polls from the store: %+v", st)
			for _, a := range fleet.apps {
				a.Service.AnswerFromMemory(true)
			}
			if err := pprof.StartCPUProfile(prof); err != nil {
				b.Fatal(err)
			}
		}
		got := fleet.load(b, admin, ev, sc, pollUsers)
		if sc == "polls" {
			pprof.StopCPUProfile()
		}
		m.Scenarios[sc] = got
		b.Logf("tier 2 scale, %s: %+v", sc, got)
	}
	prof.Close()
	if _, err := exec.LookPath("go"); err != nil {
		// The device machine has no Go toolchain: its script brings the
		// profile back, and `go tool pprof -top` reads it beside the same
		// test binary where Go is.
		b.Logf("no go toolchain here: the CPU profile stays in %s for go tool pprof", prof.Name())
	} else if exe, err := os.Executable(); err == nil {
		out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount", "10", exe, prof.Name()).Output()
		if err != nil {
			b.Fatalf("go tool pprof: %v", err)
		}
		path := filepath.Join(b.TempDir(), "scale-pprof.txt")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			b.Fatal(err)
		}
		m.PprofTop = pprofTop(b, path)
	}
	stop()
	if p := m.Scenarios["polls"].RedisMicrosPerCheck; p > 0 {
		m.ModelledSingleEventCeiling = round1(1e6 / p)
	}
	m.Cluster = measureClusterPoll(b)
	b.Logf("tier 2 scale, cluster: %+v", m.Cluster)
	m.Idle = measureIdle(b, *scaleIdleEvents, *scaleInstances, *scaleIdleFor)
	b.Logf("tier 2 scale, idle: %+v", m.Idle)
	return m
}

// cmdCounter is a go-redis hook counting the commands and round trips a
// client sends, by command name.
type cmdCounter struct {
	mu     sync.Mutex
	byName map[string]int64
	trips  int64
}

func newCmdCounter() *cmdCounter { return &cmdCounter{byName: map[string]int64{}} }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}
func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds...)
		return next(ctx, cmds)
	}
}
func (c *cmdCounter) add(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	for _, cmd := range cmds {
		c.byName[strings.ToLower(cmd.Name())]++
	}
}

// take returns the counts since the last take and starts again.
func (c *cmdCounter) take() (map[string]int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, t := c.byName, c.trips
	c.byName, c.trips = map[string]int64{}, 0
	return m, t
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// fleet is several Tier 2 instances assembled as bin/queue does (app.Open),
// sharing the queue's Redis, a settings store and the Tier 1 keys.
type fleet struct {
	apps   []*app.App
	urls   []string
	count  *cmdCounter // every instance's queue-Redis commands
	cs     *esredis.Store
	t1     *token.KeyRing
	prefix string
}

const scaleTier1Secret = "bench-tier1-secret-0123456789abcdef"

func newFleet(tb testing.TB, n int, dial func() redis.UniversalClient, env ...string) *fleet {
	tb.Helper()
	crdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(tb), PoolSize: 64})
	tb.Cleanup(func() { crdb.Close() })
	f := &fleet{count: newCmdCounter(), cs: esredis.New(crdb, testenv.UniqueID(tb)+":"), prefix: testenv.UniqueID(tb) + ":"}
	vars := map[string]string{
		"QUEUE_ENTRY_TOKEN_SECRET": token.RandomSecret(), "VWR_TIER1_TOKEN_KEYS": "t1:" + scaleTier1Secret,
		"QUEUE_ADMIN_TOKEN": "bench", "QUEUE_SEEN_TTL_SECONDS": "3600",
	}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	cfg, err := app.FromEnv(vars)
	if err != nil {
		tb.Fatal(err)
	}
	if f.t1, err = token.ParseKeyRing(cfg.Tier1TokenKeys); err != nil {
		tb.Fatal(err)
	}
	for range n {
		rdb := dial()
		rdb.AddHook(f.count)
		tb.Cleanup(func() { rdb.Close() })
		a, err := app.Open(cfg, app.Options{Redis: rdb, ConfigStore: f.cs, KeyPrefix: f.prefix, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { a.Close() })
		a.Preload(context.Background())
		f.apps = append(f.apps, a)
	}
	return f
}

func (f *fleet) serveHTTP(tb testing.TB) {
	for _, a := range f.apps {
		srv := httptest.NewServer(a.Handler())
		tb.Cleanup(srv.Close)
		f.urls = append(f.urls, srv.URL)
	}
}

// runJobs starts every instance's background jobs (worker, settings refresh).
func (f *fleet) runJobs() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, a := range f.apps {
		for _, job := range a.Jobs() {
			wg.Add(1)
			go func() { defer wg.Done(); job(ctx) }()
		}
	}
	return func() { cancel(); wg.Wait() }
}

// configure opens an event with threshold th in the settings store and
// makes every instance see it.
func (f *fleet) configure(tb testing.TB, name string, th int64) string {
	tb.Helper()
	ev := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1e9)
	if _, err := f.cs.PutQueueSettings(context.Background(), ev, eventsettings.Settings{Threshold: th, Open: true}); err != nil {
		tb.Fatal(err)
	}
	f.refresh(tb)
	return ev
}

func (f *fleet) refresh(tb testing.TB) {
	tb.Helper()
	for _, a := range f.apps {
		if err := a.Settings.Refresh(context.Background()); err != nil {
			tb.Fatal(err)
		}
	}
}

func (f *fleet) pass(tb testing.TB, ev, uid string, pos int64) string {
	now := time.Now()
	p, err := f.t1.IssueTier1(token.Tier1{Subject: uid, EventID: ev, Position: pos, IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func pollUser(i int) string { return fmt.Sprintf("u:%012d", i) }

// join puts n pass holders into ev's line (the first one gets the slot).
func (f *fleet) join(tb testing.TB, ev string, n int) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := f.apps[w%len(f.apps)]
			for i := w; i < n; i += 16 {
				_, err := a.Service.Check(context.Background(), ev, queue.Identity{UserID: pollUser(i), Position: int64(i + 1), Pass: true})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

// warm has every instance answer each of the first n poll users once
// (Service.Check, as their page's poll would).
func (f *fleet) warm(tb testing.TB, ev string, n int) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16*len(f.apps))
	for _, a := range f.apps {
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 16 {
					if _, err := a.Service.Check(context.Background(), ev, queue.Identity{UserID: pollUser(i), Position: int64(i + 1), Pass: true}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

// load runs the scenario against every instance in turn (connection w to
// instance w mod n) for benchDuration after a warm-up, and reads what
// Redis spent meanwhile.
func (f *fleet) load(tb testing.TB, admin *redis.Client, ev, scenario string, pollUsers int) ScaleScenario {
	tb.Helper()
	passes := make([]string, 0, pollUsers)
	if scenario == "polls" {
		for i := range pollUsers {
			passes = append(passes, f.pass(tb, ev, pollUser(i), int64(i+1)))
		}
		// The steady state of a line: a waiting page polls for minutes,
		// over every instance, so each instance has answered each visitor
		// once from the store (that first poll is a store step, as is a
		// join) and remembers them (services/queue/lines.go).
		f.warm(tb, ev, pollUsers)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *benchConns, MaxIdleConns: *benchConns}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	var seq, okN, memN, bad atomic.Int64
	var measuring atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range *benchConns {
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
				var pass string
				if scenario == "polls" {
					pass = passes[rng.IntN(pollUsers)]
				} else {
					i := seq.Add(1)
					pass = f.pass(tb, ev, "n:"+strconv.FormatInt(i, 10), i)
				}
				req, _ := http.NewRequest(http.MethodPost, url, nil)
				req.Header.Set("Authorization", "Bearer "+pass)
				resp, err := client.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.Add(1)
					continue
				}
				if measuring.Load() {
					okN.Add(1)
					if bytes.Contains(body, []byte(`"peopleAheadExact":false`)) {
						memN.Add(1)
					}
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	s0 := redisInfo(tb, admin)
	f.count.take()
	okN.Store(0)
	memN.Store(0)
	measuring.Store(true)
	t0 := time.Now()
	time.Sleep(*benchDuration)
	measuring.Store(false)
	n, el := okN.Load(), time.Since(t0)
	sent, trips := f.count.take()
	s1 := redisInfo(tb, admin)
	close(stop)
	wg.Wait()
	if bad.Load() > 0 {
		tb.Fatalf("%s: %d failed checks", scenario, bad.Load())
	}
	tb.Logf("%s: Redis time by command (commandstats, scripts' inner commands too): %s", scenario, s1.topByMicros(s0, 8))
	if n == 0 {
		tb.Fatalf("%s: no check answered", scenario)
	}
	return ScaleScenario{
		Checks: n, ChecksPerSecond: round1(float64(n) / el.Seconds()),
		// Three decimals: answers from memory cost Redis well under a µs
		// each, and the modelled ceiling divides by this.
		RedisMicrosPerCheck:           round3(s1.topLevelMicros(s0, sent) / float64(n)),
		RedisMainThreadMicrosPerCheck: round3((s1.mainCPU - s0.mainCPU) / float64(n)),
		RedisCommandsPerCheck:         round3(float64(sum(sent)) / float64(n)),
		RoundTripsPerCheck:            round3(float64(trips) / float64(n)),
		FromMemoryShare:               round3(float64(memN.Load()) / float64(n)),
	}
}

// redisStats are the parts of INFO the measurement reads.
type redisStats struct {
	calls, usec map[string]float64 // by command name, as INFO commandstats
	mainCPU     float64            // µs of the main thread (user + sys)
}

func redisInfo(tb testing.TB, rdb *redis.Client) redisStats {
	tb.Helper()
	raw, err := rdb.Info(context.Background(), "commandstats", "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	s := redisStats{calls: map[string]float64{}, usec: map[string]float64{}}
	for _, l := range strings.Split(raw, "\n") {
		l = strings.TrimSpace(l)
		if name, rest, ok := strings.Cut(l, ":"); ok && strings.HasPrefix(name, "cmdstat_") {
			name = strings.TrimPrefix(name, "cmdstat_")
			for _, kv := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				x, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "calls":
					s.calls[name] = x
				case "usec":
					s.usec[name] = x
				}
			}
		} else if k, v, ok := strings.Cut(l, ":"); ok && (k == "used_cpu_user_main_thread" || k == "used_cpu_sys_main_thread") {
			x, _ := strconv.ParseFloat(v, 64)
			s.mainCPU += x * 1e6
		}
	}
	return s
}

// topByMicros lists the n commands that took Redis the most time since
// s0, with their calls and µs.
func (s redisStats) topByMicros(s0 redisStats, n int) string {
	type c struct {
		name      string
		calls, us float64
	}
	var cs []c
	for name, calls := range s.calls {
		cs = append(cs, c{name, calls - s0.calls[name], s.usec[name] - s0.usec[name]})
	}
	slices.SortFunc(cs, func(a, b c) int { return cmp.Compare(b.us, a.us) })
	var parts []string
	for _, x := range cs[:min(n, len(cs))] {
		parts = append(parts, fmt.Sprintf("%s %.0f calls %.0f µs", x.name, x.calls, x.us))
	}
	return strings.Join(parts, "; ")
}

// topLevelMicros is the commandstats time of the commands clients sent
// since s0. INFO counts a command a script runs both on its own line and
// inside the script's time, so each name's time counts in the share of its
// calls that clients sent (sent, from the hook): a script's own line all of
// it, a command only scripts run none of it.
func (s redisStats) topLevelMicros(s0 redisStats, sent map[string]int64) float64 {
	var us float64
	for name, calls := range s.calls {
		d := calls - s0.calls[name]
		if d <= 0 {
			continue
		}
		share := min(1, float64(sent[name])/d)
		us += share * (s.usec[name] - s0.usec[name])
	}
	return us
}

// measureClusterPoll polls 30 configured events, each with a line, through
// one instance on the project's 3-node Cluster, and counts the nodes each
// check's commands went to.
func measureClusterPoll(tb testing.TB) ClusterPoll {
	const events, perEvent, checks = 30, 20, 3000
	addrs := testenv.RedisCluster(tb)
	f := newFleet(tb, 1, func() redis.UniversalClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		c.OnNewNode(func(n *redis.Client) { n.AddHook(redistrips.NodeHook(n.Options().Addr)) })
		return c
	})
	h := f.apps[0].Handler()
	var evs []string
	for i := range events {
		ev := f.configure(tb, "cluster"+strconv.Itoa(i), 1)
		f.join(tb, ev, perEvent)
		evs = append(evs, ev)
	}
	passes := map[string][]string{}
	for _, ev := range evs {
		for i := range perEvent {
			passes[ev] = append(passes[ev], f.pass(tb, ev, pollUser(i), int64(i+1)))
		}
	}
	f.count.take()
	rng := rand.New(rand.NewPCG(1, 2))
	var nodes int
	perEv := map[string]map[string]bool{}
	for range checks {
		ev := evs[rng.IntN(events)]
		req := httptest.NewRequest(http.MethodPost, "/api/queue/check/"+ev, nil)
		req.Header.Set("Authorization", "Bearer "+passes[ev][rng.IntN(perEvent)])
		ctx, tr := redistrips.WithNodes(req.Context())
		req = req.WithContext(ctx)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			tb.Fatalf("cluster check: %d %s", rec.Code, rec.Body)
		}
		reached := tr.Set()
		nodes += len(reached)
		if perEv[ev] == nil {
			perEv[ev] = map[string]bool{}
		}
		for n := range reached {
			perEv[ev][n] = true
		}
	}
	sent, trips := f.count.take()
	multi := 0
	for _, ns := range perEv {
		if len(ns) > 1 {
			multi++
		}
	}
	return ClusterPoll{Nodes: len(addrs), Events: events, Checks: checks,
		NodesPerCheck:         round3(float64(nodes) / checks),
		EventsOnTwoNodes:      multi,
		RedisCommandsPerCheck: round3(float64(sum(sent)) / checks),
		RoundTripsPerCheck:    round3(float64(trips) / checks)}
}

// measureIdle configures n events, gives each one visitor holding a slot
// (nobody waits anywhere, and no slot frees while it measures: the idle
// limit is the slot's length, 10 minutes), runs the instances' jobs until
// their first passes have ranked and logged those direct admissions, and
// counts the commands they send to the queue's Redis per second.
func measureIdle(tb testing.TB, n, instances int, d time.Duration) IdleLoad {
	own := testenv.NewOwnRedis(tb)
	f := newFleet(tb, instances, func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: own.Addr, PoolSize: 64})
	}, "QUEUE_ACTIVE_IDLE_SECONDS", "600")
	ctx := context.Background()
	evs, err := idle.Populate(ctx, f.cs, f.apps, n)
	if err != nil {
		tb.Fatal(err)
	}
	stop := f.runJobs()
	admin := redis.NewClient(&redis.Options{Addr: own.Addr})
	defer admin.Close()
	if _, err := idle.Settle(ctx, admin, f.prefix, evs, f.apps, 3*time.Minute); err != nil {
		tb.Fatal(err)
	}
	f.count.take()
	t0 := time.Now()
	time.Sleep(d)
	sent, trips := f.count.take()
	el := time.Since(t0).Seconds()
	stop()
	// One admission pass of one instance, alone: the second of two, since
	// the first may read the listed events for the schedule's safety net
	// (once per stale cleanup interval, counted in the idle rate above).
	for range 2 {
		f.count.take()
		if _, err := f.apps[0].Worker.AdmitOnce(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	pass, _ := f.count.take()
	perPass := float64(sum(pass))
	every := queue.WorkerConfig{}.WithDefaults().AdmissionInterval.Seconds()
	// The fleet's periodic pass is one worker's at a time (a lease).
	const passes = 1
	return IdleLoad{Events: n, Instances: instances, Seconds: round1(el),
		CommandsPerSecond:         round1(float64(sum(sent)) / el),
		RoundTripsPerSecond:       round1(float64(trips) / el),
		CommandsPerPass:           perPass,
		ModelledCommandsPerSecond: round1(perPass * passes / every),
		PassesPerInterval:         passes}
}
