package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/demo"
	esredis "github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/loadtest"
	"github.com/vwr-go/vwr/internal/loadtest/idle"
	"github.com/vwr-go/vwr/internal/redisconn"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/services/queue/app"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

// `vwr loadtest` rehearses a sale (internal/loadtest). Without -base it
// starts its own stack in this process: `vwr local` (Tier 1, one Tier 2
// instance and its worker) plus a second Tier 2 instance on the same Redis,
// so that tier2-kill has one to kill. Tier 1 keeps its state apart from
// Tier 2's Redis, as DynamoDB does in production: on an embedded Redis of
// its own, on the Redis at VWR_TIER1_REDIS_URL (another server; the
// embedded one limits large rehearsals), or on DynamoDB when
// VWR_TIER1_STORE=dynamodb (moto locally).

func init() {
	register(&command{
		name:    "loadtest",
		summary: "rehearse a sale: simulated visitors, faults, report.json and plots",
		run:     runLoadtest,
	})
}

func runLoadtest(ctx context.Context, inv invocation) int {
	fs := flag.NewFlagSet("vwr loadtest", flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	var cfg loadtest.Config
	var faults loadtest.Faults
	fs.IntVar(&cfg.Visitors, "visitors", 10000, "visitors to simulate")
	fs.StringVar(&cfg.Arrival, "arrival", loadtest.ArrivalBurst, "arrival curve: burst (constant flood), poisson, ramp (0 → rate) or sale (rate at the opening, falling by e every visitors÷rate s)")
	fs.Float64Var(&cfg.Rate, "rate", 500, "arrivals per second")
	base := fs.String("base", "", "URL of a running vwr (Tier 1 at /vwr-api, Tier 2 at /api/queue); empty: start one in this process")
	fs.IntVar(&cfg.Shards, "shards", 4, "Tier 1 counter shards for the event")
	fs.Int64Var(&cfg.Threshold, "threshold", 500, "Tier 2 threshold for the event")
	out := fs.String("out", "loadtest-out", "folder for report.json and the SVG plots")
	fs.Var(&faults, "fault", "KIND@DURATION after the first arrival, repeatable; KIND: "+strings.Join(loadtest.FaultKinds, ", "))
	fs.DurationVar(&cfg.Dwell, "dwell", 5*time.Second, "how long an admitted visitor stays before leaving (±20 %)")
	fs.IntVar(&cfg.Seats, "seats", 0, fmt.Sprintf("each admitted visitor first holds one of this many seats on the protected site (1..%d, in at most %d rows of %d, rounded up to a full grid; 0: no seat holds)", demo.MaxRows*demo.MaxPerRow, demo.MaxRows, demo.MaxPerRow))
	fs.Float64Var(&cfg.Reenter, "reenter", 0, "share (0..1) of admitted visitors who leave and try again with the same Tier 1 pass (report: admittedTwice, visitors.reentered/reentryRefused)")
	fs.IntVar(&cfg.Batch, "batch", 0, "Tier 1 advance per tick (default threshold ÷ dwell in seconds)")
	fs.Int64Var(&cfg.Pow, "pow", 0, "activate the event with a proof of work of N expected hashes; visitors solve it as the page does (0: none)")
	fs.Int64Var(&cfg.PowTickets, "pow-tickets", loadtest.DefaultPowTickets, "K in the report's powCost: what K arrivals cost one client")
	fs.StringVar(&cfg.Event, "event", "loadtest", "event id")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed for arrivals and jitter")
	fs.IntVar(&cfg.Concurrency, "concurrency", 256, "requests in flight at most")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Minute, "give up on visitors still waiting after this long")
	fs.Float64Var(&cfg.JunkRate, "junk-rate", 200, "junk-events: unconfigured event ids per second")
	fs.IntVar(&cfg.AheadSampleEvery, "ahead-sample-every", loadtest.DefaultAheadSampleEvery, "one queued poll in N reads the visitor's exact rank before and after, for waitEstimateError.peopleAheadError (in-process only)")
	var so stackOptions
	fs.DurationVar(&so.sqsDownFor, "sqs-down-for", 10*time.Second, "sqs-down: how long SQS stays unreachable")
	fs.IntVar(&so.instances, "tier2-instances", 2, "Tier 2 instances of the in-process stack, sharing its Redis (1..16)")
	fs.IntVar(&so.idleEvents, "idle-events", 0, "after the sale, measure Redis commands/s while idle beside this many more configured events, each holding one admitted visitor (backendOpsPerVisitor.idleCommandsPerSecond; in-process on REDIS_URL's redis-server; 0: no idle phase)")
	fs.DurationVar(&so.idleFor, "idle-duration", 30*time.Second, "-idle-events: how long the idle phase is measured")
	quiet := fs.Bool("quiet", false, "no progress line")
	if err := fs.Parse(inv.Args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(inv.Stderr, "vwr loadtest: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if cfg.Visitors < 1 || cfg.Threshold < 1 || cfg.Shards < 1 || cfg.Concurrency < 1 || cfg.AheadSampleEvery < 1 {
		fmt.Fprintln(inv.Stderr, "vwr loadtest: -visitors, -threshold, -shards, -concurrency and -ahead-sample-every must be at least 1")
		return exitUsage
	}
	if cfg.Reenter < 0 || cfg.Reenter > 1 {
		fmt.Fprintln(inv.Stderr, "vwr loadtest: -reenter must be from 0 to 1")
		return exitUsage
	}
	if cfg.Seats < 0 || cfg.Seats > demo.MaxRows*demo.MaxPerRow {
		fmt.Fprintf(inv.Stderr, "vwr loadtest: -seats must be 0..%d\n", demo.MaxRows*demo.MaxPerRow)
		return exitUsage
	}
	if so.instances < 1 || so.instances > 16 || so.idleEvents < 0 || so.idleFor <= 0 {
		fmt.Fprintln(inv.Stderr, "vwr loadtest: -tier2-instances must be 1..16, -idle-events at least 0 and -idle-duration positive")
		return exitUsage
	}
	if *base != "" && (so.idleEvents > 0 || so.instances != 2) {
		fmt.Fprintln(inv.Stderr, "vwr loadtest: -idle-events and -tier2-instances shape the in-process stack; with -base the target is what it is")
		return exitUsage
	}
	cfg.Faults = faults
	if !*quiet {
		cfg.Progress = inv.Stderr
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr loadtest: %v\n", err)
		return exitError
	}

	var target loadtest.Target
	if *base != "" {
		target = loadtest.Target{
			Describe: *base, Base: strings.TrimRight(*base, "/"),
			Tier1AdminToken: orDefault(inv.getenv("VWR_ADMIN_TOKEN"), localAdminToken),
			Tier2AdminToken: orDefault(inv.getenv("QUEUE_ADMIN_TOKEN"), localAdminToken),
		}
	} else {
		logf, err := os.Create(filepath.Join(*out, "vwr.log"))
		if err != nil {
			fmt.Fprintf(inv.Stderr, "vwr loadtest: %v\n", err)
			return exitError
		}
		defer logf.Close()
		st, err := startLoadtestStack(ctx, inv.Env, cfg, so, logf)
		if err != nil {
			fmt.Fprintf(inv.Stderr, "vwr loadtest: %v\n", err)
			return exitError
		}
		defer st.stop()
		target = st.target
	}
	res, err := loadtest.Run(ctx, cfg, target)
	if err != nil && !errors.Is(err, loadtest.ErrIdlePhase) {
		fmt.Fprintf(inv.Stderr, "vwr loadtest: %v\n", err)
		return exitError
	}
	idleErr := err
	if err := loadtest.WriteOutputs(*out, res); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr loadtest: %v\n", err)
		return exitError
	}
	loadtest.Summary(inv.Stdout, res.Report)
	fmt.Fprintf(inv.Stdout, "  wrote %s, %s and %s in %s\n", loadtest.ReportFile, loadtest.VisitsFile, strings.Join(loadtest.Plots, ", "), *out)
	if idleErr != nil {
		// The sale's report is written; the idle figure is missing.
		fmt.Fprintf(inv.Stderr, "vwr loadtest: %v\n", idleErr)
		return exitError
	}
	return exitOK
}

// startSeatSite serves, when the run holds seats, the demo ticketing site
// with a venue of cfg.Seats seats for the run's event, behind the queue's
// gate like the protected site of `vwr local -demo`; its seats live in Tier
// 2's Redis. It returns the site's base, or "" when no seats are held.
func startSeatSite(ctx context.Context, st *loadtestStack, s *localStack, cfg loadtest.Config) (string, error) {
	if cfg.Seats == 0 {
		return "", nil
	}
	venue := seatVenue(cfg.Seats)
	site, err := demo.New(demo.Config{
		EntryKeys: s.Queue.EntryKeys, Redis: s.Redis, Venues: map[string]demo.Venue{cfg.Event: venue},
		Clock: s.Clock, Logger: s.Log.With("component", "seats"),
	})
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: s.Queue.Gate.Wrap(site.Handler()), ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(ln) }()
	st.stops = append(st.stops, func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

// seatVenue is the smallest grid of at most demo.MaxRows rows of at most
// demo.MaxPerRow seats that holds n seats: exactly n when n factors so.
func seatVenue(n int) demo.Venue {
	best := demo.Venue{Name: "vwr loadtest", Rows: demo.MaxRows, PerRow: demo.MaxPerRow}
	for rows := 1; rows <= demo.MaxRows; rows++ {
		perRow := (n + rows - 1) / rows
		if perRow <= demo.MaxPerRow && rows*perRow < best.Total() {
			best.Rows, best.PerRow = rows, perRow
		}
	}
	return best
}

// loadtestStack is the in-process system under test.
type loadtestStack struct {
	target loadtest.Target
	stops  []func()
}

func (st *loadtestStack) stop() {
	for i := len(st.stops) - 1; i >= 0; i-- {
		st.stops[i]()
	}
}

// stackOptions shape the in-process stack.
type stackOptions struct {
	sqsDownFor time.Duration // sqs-down's outage
	instances  int           // Tier 2 instances
	idleEvents int           // configured events beside the sale, for the idle phase (0: none)
	idleFor    time.Duration // the idle phase's measurement
}

// startLoadtestStack starts `vwr local` and more Tier 2 instances (two in
// all unless so says), with the settings a rehearsal needs unless the
// environment sets them.
func startLoadtestStack(ctx context.Context, environ map[string]string, cfg loadtest.Config, so stackOptions, logw io.Writer) (_ *loadtestStack, err error) {
	st := &loadtestStack{}
	defer func() {
		if err != nil {
			st.stop()
		}
	}()
	// go-redis reports dial failures during Redis faults itself; into the log, not over the progress bar.
	redis.SetLogger(redisLogger{logw})
	env := maps.Clone(environ)
	setDefault := func(k, v string) {
		if env[k] == "" {
			env[k] = v
		}
	}
	setDefault("ADVANCER_TICK_SECONDS", "1")
	// The worker may fill every free slot in one pass.
	setDefault("QUEUE_ADMISSION_BATCH_SIZE", strconv.FormatInt(min(cfg.Threshold, 10000), 10))
	setDefault("LOG_LEVEL", "warn")
	// Configured events: the run configures its event through the admin API,
	// which keeps the threshold in the durable store, and junk ids are refused.
	setDefault("QUEUE_OPEN_EVENTS", "false")
	if so.idleEvents > 0 {
		if env["REDIS_URL"] == "" {
			return nil, errors.New("-idle-events reads INFO commandstats, which the embedded Redis lacks: set REDIS_URL to a redis-server")
		}
		// The idle events' holders keep their slots (up to the slot's
		// length, 10 minutes) rather than freeing them as the idle phase runs.
		setDefault("QUEUE_ACTIVE_IDLE_SECONDS", "600")
	}
	var counter *dynamostore.Counter
	tier1Store := "redis"
	switch {
	case env["VWR_TIER1_STORE"] == "dynamodb":
		tier1Store = "dynamodb"
		counter = dynamostore.NewCounter()
	case env["VWR_TIER1_REDIS_URL"] != "":
		// A Redis of the caller's for Tier 1 (a real server takes more
		// enters than the embedded one); it must not be Tier 2's.
		if env["VWR_TIER1_REDIS_URL"] == env["REDIS_URL"] {
			return nil, errors.New("VWR_TIER1_REDIS_URL must not be Tier 2's REDIS_URL: a Redis fault would hit Tier 1 too")
		}
		env["VWR_TIER1_STORE"] = "redis"
	default:
		// Tier 1 apart from Tier 2's Redis, so a Redis fault hits Tier 2 only.
		m1, err := miniredis.Run()
		if err != nil {
			return nil, fmt.Errorf("start Tier 1's embedded Redis: %w", err)
		}
		st.stops = append(st.stops, m1.Close)
		env["VWR_TIER1_STORE"], env["VWR_TIER1_REDIS_URL"] = "redis", "redis://"+m1.Addr()
		fastForwardJob(ctx, st, m1)
	}

	// The extensions' flags at their defaults, as a plain `vwr local` has them.
	lfs := flag.NewFlagSet("vwr local", flag.ContinueOnError)
	for _, e := range localExtensions {
		if e.Flags != nil {
			e.Flags(lfs)
		}
	}
	if err := lfs.Parse(nil); err != nil {
		return nil, err
	}
	s, err := newLocalStack("127.0.0.1:0", env, logw, logw)
	if err != nil {
		return nil, err
	}
	st.stops = append(st.stops, s.close)
	if counter != nil {
		s.Tier1DynamoOptions = append(s.Tier1DynamoOptions, counter.Register)
	}
	// SQS through a proxy the sqs-down fault can cut.
	var sqsProxy *faultProxy
	if env["SQS_ENABLED"] == "true" {
		u, err := url.Parse(env["AWS_ENDPOINT_URL"])
		if err != nil || u.Host == "" {
			return nil, errors.New("SQS_ENABLED under vwr loadtest needs AWS_ENDPOINT_URL (moto or LocalStack) so that sqs-down can cut it")
		}
		if sqsProxy, err = newFaultProxy(u.Host); err != nil {
			return nil, err
		}
		st.stops = append(st.stops, sqsProxy.Close)
		s.SQSEndpoint = u.Scheme + "://" + sqsProxy.Addr()
	}
	for _, f := range cfg.Faults {
		if f.Kind == loadtest.FaultSQSDown && sqsProxy == nil {
			return nil, errors.New("sqs-down needs SQS on: SQS_ENABLED=true, SQS_QUEUE_URL and AWS_ENDPOINT_URL (e.g. moto)")
		}
		if f.Kind == loadtest.FaultTier2Kill && so.instances < 2 {
			return nil, errors.New("tier2-kill needs -tier2-instances 2 or more: the last one is killed")
		}
		if f.Kind == loadtest.FaultRedisRestart && s.Miniredis == nil {
			return nil, errors.New("redis-restart needs the Redis the tool started: unset REDIS_URL")
		}
	}
	// The event settings (and Tier 2's ledger) on a Redis of their own,
	// which settings-flush flushes: the redis-server at
	// VWR_SETTINGS_REDIS_URL (another one than Tier 2's), else an embedded
	// one, which logs thousands of direct admissions (-idle-events) to the
	// ledger only at a few hundred a second.
	var msrdb *redis.Client
	if u := env["VWR_SETTINGS_REDIS_URL"]; u != "" {
		if u == env["REDIS_URL"] {
			return nil, errors.New("VWR_SETTINGS_REDIS_URL must not be Tier 2's REDIS_URL: settings-flush would flush Tier 2's line, and the idle phase count the settings' commands")
		}
		o, err := redis.ParseURL(u)
		if err != nil {
			return nil, fmt.Errorf("VWR_SETTINGS_REDIS_URL: %w", err)
		}
		msrdb = redis.NewClient(o)
	} else {
		ms, err := miniredis.Run()
		if err != nil {
			return nil, fmt.Errorf("start the settings store's embedded Redis: %w", err)
		}
		st.stops = append(st.stops, ms.Close)
		fastForwardJob(ctx, st, ms)
		msrdb = redis.NewClient(&redis.Options{Addr: ms.Addr()})
	}
	st.stops = append(st.stops, func() { _ = msrdb.Close() })
	settings := esredis.New(msrdb, "")
	s.QueueOptions.ConfigStore = settings

	rc := loadtest.NewRedisCounter()
	s.Redis.AddHook(rc)
	// The tool's own reads of Tier 2's Redis (exact ranks, memory) go on a
	// client of their own, uncounted.
	var tool redis.UniversalClient
	if s.Miniredis != nil {
		tool = redis.NewClient(&redis.Options{Addr: s.Miniredis.Addr()})
	} else if tool, err = redisconn.Open(s.QueueConfig.RedisURL, s.QueueConfig.RedisClusterAddrs); err != nil {
		return nil, err
	}
	st.stops = append(st.stops, func() { _ = tool.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.URL = "http://" + ln.Addr().String()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// Both Tier 2 instances are the rehearsal's to restart: the stack
	// builds the first one's App (Tier 1 and the seat site use its keys)
	// but neither serves it nor runs its jobs.
	s.externalQueue = true
	if err := s.assemble(runCtx); err != nil {
		cancel()
		ln.Close()
		return nil, err
	}
	// open builds a fresh Tier 2 App with its own client on the queue's
	// Redis, counted like the first.
	open := func(name string) func() (*app.App, redis.UniversalClient, error) {
		return func() (*app.App, redis.UniversalClient, error) {
			var rdb redis.UniversalClient
			if s.Miniredis != nil {
				rdb = redis.NewClient(&redis.Options{Addr: s.Miniredis.Addr()})
			} else if rdb, err = redisconn.Open(s.QueueConfig.RedisURL, s.QueueConfig.RedisClusterAddrs); err != nil {
				return nil, nil, err
			}
			rdb.AddHook(rc)
			opts := s.QueueOptions // the same notifier, clock, settings store and anything else the stack set
			opts.Redis, opts.Logger = rdb, s.Log.With("instance", name)
			a, err := app.Open(s.QueueConfig, opts)
			if err != nil {
				rdb.Close()
				return nil, nil, err
			}
			return a, rdb, nil
		}
	}
	ins := make([]*tier2Instance, so.instances)
	for i := range ins {
		ins[i] = &tier2Instance{open: open(strconv.Itoa(i + 1))}
	}
	in1 := ins[0]
	in1.run(runCtx, s.Queue, nil)
	st.stops = append(st.stops, in1.stop)
	// The first instance shares the stack's listener: its routes go to it,
	// the rest (Tier 1, the pages) to the stack.
	root := http.NewServeMux()
	for _, p := range s.Queue.API.Routes() {
		root.Handle(p, in1)
	}
	root.Handle("/", s.mux)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := app.Serve(runCtx, ln, tier2Marked(rc, cfg.Event, root), s.Log, s.jobs...); err != nil {
			s.Log.Error("loadtest stack", "err", err.Error())
		}
	}()
	st.stops = append(st.stops, func() { cancel(); <-served })

	// The other Tier 2 instances: each its own client, server and worker.
	bases := []string{"http://" + ln.Addr().String()}
	var kill func()
	for _, in := range ins[1:] {
		if err := in.restart(runCtx); err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			in.stop()
			return nil, err
		}
		srv := &http.Server{Handler: tier2Marked(rc, cfg.Event, in), ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn)}
		go func() { _ = srv.Serve(ln) }()
		var once sync.Once
		kill = func() {
			once.Do(func() {
				_ = srv.Close() // abrupt: open connections are cut, as a crash would
				in.stop()
			})
		}
		st.stops = append(st.stops, kill)
		bases = append(bases, "http://"+ln.Addr().String())
	}

	var idleEvents []string
	var populated time.Duration
	if so.idleEvents > 0 {
		start := time.Now()
		apps := make([]*app.App, len(ins))
		for i, in := range ins {
			in.mu.Lock()
			apps[i] = in.app
			in.mu.Unlock()
		}
		evs, err := idle.Populate(ctx, settings, apps, so.idleEvents)
		if err != nil {
			return nil, err
		}
		idleEvents, populated = evs, time.Since(start)
	}

	site, err := startSeatSite(runCtx, st, s, cfg)
	if err != nil {
		return nil, err
	}
	redisDesc := "embedded Redis"
	if s.Miniredis == nil {
		redisDesc = "Redis at " + redisconn.Describe(s.Redis)
	}
	st.target = loadtest.Target{
		Describe:        fmt.Sprintf("in-process vwr local (Tier 1 on %s, %d Tier 2 instances on %s)", tier1Store, len(ins), redisDesc),
		Base:            bases[0],
		Tier2:           bases,
		Tier1AdminToken: orDefault(env["VWR_ADMIN_TOKEN"], localAdminToken),
		Tier2AdminToken: s.QueueConfig.AdminToken,
		Site:            site,
		Inject: func(ctx context.Context, kind string) (string, error) {
			switch kind {
			case loadtest.FaultRedisFlush:
				return "FLUSHALL on Tier 2's Redis", s.Redis.FlushAll(ctx).Err()
			case loadtest.FaultRedisFlushRestart:
				if err := s.Redis.FlushAll(ctx).Err(); err != nil {
					return "", err
				}
				start := time.Now()
				if err := restartAll(runCtx, ins...); err != nil {
					return "", err
				}
				return fmt.Sprintf("FLUSHALL on Tier 2's Redis, and all %d Tier 2 instances restarted at once (back after %.1f s, knowing nothing)", len(ins), time.Since(start).Seconds()), nil
			case loadtest.FaultSettingsFlush:
				return "FLUSHALL on the settings store", msrdb.FlushAll(ctx).Err()
			case loadtest.FaultRedisRestart:
				m := s.Miniredis
				if m == nil {
					return "", errors.New("redis-restart needs the Redis the tool started (unset REDIS_URL)")
				}
				m.Close()
				if err := clock.Sleep(ctx, 2*time.Second); err != nil {
					return "", err
				}
				if err := m.Restart(); err != nil {
					return "", err
				}
				m.FlushAll() // an empty restart: nothing was persisted
				return "embedded Redis down for 2 s, back empty", nil
			case loadtest.FaultSQSDown:
				sqsProxy.SetCut(true)
				err := clock.Sleep(ctx, so.sqsDownFor)
				sqsProxy.SetCut(false)
				return fmt.Sprintf("SQS unreachable for %s; notifications by outcome when it came back: %s", so.sqsDownFor, sqsOutcomes(s)), err
			case loadtest.FaultTier2Kill:
				kill()
				return fmt.Sprintf("Tier 2 instance %d of %d killed (connections cut, worker stopped)", len(ins), len(ins)), nil
			}
			return "", fmt.Errorf("%s is not supported by the in-process target", kind)
		},
		ExactRank: func(ctx context.Context, event, user string) (int64, bool, error) {
			n, err := tool.ZRank(ctx, redisstore.LineKey(s.QueueOptions.KeyPrefix, event), user).Result()
			if errors.Is(err, redis.Nil) {
				return 0, false, nil
			}
			return n, err == nil, err
		},
		Backend: func() loadtest.BackendCounts {
			byKind, background := rc.Counts()
			b := loadtest.BackendCounts{Tier1Store: tier1Store, Tier2: byKind, RedisBackground: background}
			if counter != nil {
				cs := counter.Stats()
				b.DynamoReads, b.DynamoWrites = cs.Reads, cs.Writes
				b.HottestItemShare, b.HottestPartShare = cs.HottestWriteShare(), cs.HottestPartitionWriteShare()
			}
			return b
		},
		ResetBackend: func() {
			rc.Reset()
			if counter != nil {
				counter.Reset()
			}
		},
	}
	if len(idleEvents) > 0 {
		st.target.Idle = func(ctx context.Context) (*loadtest.IdleReport, error) {
			apps := make([]*app.App, len(ins))
			for i, in := range ins {
				in.mu.Lock()
				apps[i] = in.app
				in.mu.Unlock()
			}
			settled, err := idle.Settle(ctx, tool, s.QueueOptions.KeyPrefix, idleEvents, apps, 3*time.Minute)
			if err != nil {
				return nil, err
			}
			l, err := idle.Measure(ctx, tool, so.idleFor)
			if err != nil {
				return nil, err
			}
			return &loadtest.IdleReport{Events: len(idleEvents), Instances: len(ins), Seconds: math.Round(l.Seconds*10) / 10, Commands: l.Commands,
				ByCommand: l.ByCommand, PopulateSeconds: math.Round(populated.Seconds()*10) / 10, SettleSeconds: math.Round(settled.Seconds()*10) / 10}, nil
		}
	}
	if s.Miniredis == nil {
		st.target.RedisMemory = func(ctx context.Context, event string) (int64, error) {
			return loadtest.EventMemory(ctx, tool, event)
		}
	}
	return st, nil
}

// tier2Marked counts the Redis traffic of Tier 2's public requests for the
// sale's event (not the admin routes the sampler polls, nor junk events).
func tier2Marked(rc *loadtest.RedisCounter, event string, h http.Handler) http.Handler {
	marked := rc.Middleware(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.HasPrefix(p, "/api/queue/") && !strings.HasPrefix(p, "/api/queue/admin/") && strings.HasSuffix(p, "/"+event) {
			marked.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// fastForwardJob keeps an embedded Redis's TTL clock moving until the stack stops.
func fastForwardJob(ctx context.Context, st *loadtestStack, m *miniredis.Miniredis) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); fastForward(ctx, m) }()
	st.stops = append(st.stops, func() { cancel(); <-done })
}

// redisLogger writes go-redis's own messages to the run's log file.
type redisLogger struct{ w io.Writer }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	fmt.Fprintf(l.w, "go-redis: "+format+"\n", v...)
}

// sqsOutcomes reads vwr_sqs_notifications_total by result.
func sqsOutcomes(s *localStack) string {
	mfs, err := s.Queue.Metrics.Registry().Gather()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	var parts []string
	for _, mf := range mfs {
		if mf.GetName() != "vwr_sqs_notifications_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					parts = append(parts, fmt.Sprintf("%s %.0f", l.GetValue(), m.GetCounter().GetValue()))
				}
			}
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
