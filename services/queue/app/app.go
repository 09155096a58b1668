package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/eventsettings"
	"github.com/vwr-go/vwr/internal/eventsettings/settingsstore"
	"github.com/vwr-go/vwr/internal/redisconn"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/gate"
	"github.com/vwr-go/vwr/services/queue/httpapi"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

// Options are the parts a caller may inject instead of building them from
// Config.
type Options struct {
	// Redis is used instead of a client for Config.RedisURL or
	// RedisClusterAddrs (vwr local passes an embedded miniredis). App.Close
	// does not close an injected client.
	Redis redis.UniversalClient
	// KeyPrefix is prepended to every Redis key (tests share one Redis).
	KeyPrefix string
	// Notifier hears about admissions; nil means queue.NopNotifier (the
	// SQS notifier plugs in here).
	Notifier queue.Notifier
	// Clock drives the domain, tokens and the gate; nil means the wall clock.
	Clock clock.Clock
	// Logger gets JSON request and worker logs; nil means slog.Default().
	Logger *slog.Logger
	// ConfigStore holds the event settings when events must be configured
	// (QUEUE_OPEN_EVENTS=false); nil opens the store Config.SettingsStore
	// names. When it is an eventsettings.Ledger too, it keeps the ledger;
	// with open events it is optional, and only its ledger is used.
	ConfigStore eventsettings.Store
}

// App is an assembled Tier 2 runtime.
type App struct {
	Config    Config
	Redis     redis.UniversalClient
	Store     *redisstore.Store
	Service   *queue.Service
	Worker    *queue.Worker
	Settings  *eventsettings.Cache // nil with QUEUE_OPEN_EVENTS=true
	Metrics   *httpapi.Metrics
	API       *httpapi.API
	Gate      *gate.Gate
	EntryKeys *token.KeyRing
	Tier1Keys *token.KeyRing // nil when VWR_TIER1_TOKEN_KEYS is unset
	Log       *slog.Logger
	// Clock is the injected clock, or the wall clock shifted to agree with
	// Redis TIME (see ClockSync).
	Clock clock.Clock

	offset        *clock.Offset // nil when a clock was injected
	ownsRedis     bool
	closeSettings func() error
	// jobLog is Log for the background jobs: a failure they repeat on
	// every pass while Redis is down is written once per JobLogEvery.
	jobLog *slog.Logger
}

// JobLogEvery is how often a background job's repeated failure is logged.
const JobLogEvery = 30 * time.Second

// Open validates cfg (after WithDefaults) and builds the runtime. It does not
// contact Redis; /healthz does.
func Open(cfg Config, opts Options) (*App, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(opts.Redis == nil, !cfg.OpenEvents && opts.ConfigStore == nil); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	a := &App{Config: cfg, Log: log, Redis: opts.Redis, jobLog: applog.Quiet(log, JobLogEvery)}
	clk := opts.Clock
	if clk == nil {
		// Every instance takes "now" from the wall clock shifted to Redis
		// TIME, so that they agree on expiries and recovery windows.
		a.offset = clock.NewOffset(clock.System{})
		clk = a.offset
	}
	a.Clock = clk
	if a.Redis == nil {
		rdb, err := redisconn.Open(cfg.RedisURL, cfg.RedisClusterAddrs)
		if err != nil {
			return nil, err
		}
		a.Redis = rdb
		a.ownsRedis = true
	}
	var err error
	if a.EntryKeys, err = token.NewKeyRing("", []byte(cfg.EntryTokenSecret)); err != nil {
		return nil, fmt.Errorf("QUEUE_ENTRY_TOKEN_SECRET: %v", err)
	}
	if cfg.Tier1TokenKeys != "" {
		if a.Tier1Keys, err = token.ParseKeyRing(cfg.Tier1TokenKeys); err != nil {
			return nil, fmt.Errorf("VWR_TIER1_TOKEN_KEYS: %v", err)
		}
	}
	a.Metrics = httpapi.NewMetrics()
	a.Store = redisstore.New(a.Redis, redisstore.Options{Prefix: opts.KeyPrefix})
	a.Service = queue.New(a.Store, a.EntryKeys, clk, opts.Notifier, cfg.Queue())
	a.Service.SetObserver(a.Metrics)
	if !cfg.OpenEvents {
		cs := opts.ConfigStore
		if cs == nil {
			store, closeStore, err := settingsstore.Open(context.Background(), cfg.SettingsStore)
			if err != nil {
				a.Close()
				return nil, err
			}
			cs, a.closeSettings = store, closeStore
		}
		a.Settings = eventsettings.NewCache(cs, cfg.SettingsRefresh.D(), a.jobLog.With("component", "settings"))
		a.Service.UseSettings(a.Settings)
		if l, ok := cs.(eventsettings.Ledger); ok {
			// The settings store keeps each event's served record and
			// epoch too: promises hold across losing Redis and every instance.
			a.Service.UseLedger(queue.LedgerOver(l))
		}
	} else if l, ok := opts.ConfigStore.(eventsettings.Ledger); ok {
		// Open events with a store beside the queue's Redis (vwr local's
		// Tier 1 store): the served record keeps its durable copy there, so
		// a loss of the queue's Redis while the instance runs forgets no
		// leave and no served pass. Without settings there is no durable
		// epoch: a loss while every instance restarts goes unnoticed.
		a.Service.UseLedger(queue.LedgerOver(l))
	}
	a.Worker = queue.NewWorker(a.Service, cfg.Worker(), a.jobLog.With("component", "worker"))
	if cfg.PollsFromStore {
		a.Service.AnswerFromMemory(false)
	}
	a.API = httpapi.New(a.Service, httpapi.Config{
		Tier1Keys:    a.Tier1Keys,
		EntryKeys:    a.EntryKeys,
		UserHeader:   cfg.UserHeader,
		AdminToken:   cfg.AdminToken,
		CookieSecure: cfg.CookieSecure,
		Clock:        clk,
		Logger:       log,
		Log:          cfg.Log,
		Metrics:      a.Metrics,
	})
	if a.Gate, err = gate.New(cfg.Gate.Config(a.EntryKeys, clk)); err != nil {
		return nil, err
	}
	return a, nil
}

// Handler is the whole Tier 2 HTTP surface with a JSON 404 fallback.
func (a *App) Handler() http.Handler { return a.API.Handler() }

// Close releases the clients App dialled.
func (a *App) Close() error {
	var errs []error
	if a.closeSettings != nil {
		errs = append(errs, a.closeSettings())
	}
	if a.ownsRedis {
		errs = append(errs, a.Redis.Close())
	}
	return errors.Join(errs...)
}

// Jobs are the background loops an instance runs beside its HTTP server:
// the admission worker and, with configured events, the settings refresh.
func (a *App) Jobs() []func(context.Context) {
	jobs := []func(context.Context){a.Worker.Run}
	if a.Settings != nil {
		jobs = append(jobs, a.Settings.Run)
	}
	if a.offset != nil {
		jobs = append(jobs, a.clockSync)
	}
	return jobs
}

// ClockSyncInterval is how often an instance re-measures its offset to Redis TIME.
const ClockSyncInterval = 10 * time.Second

// clockSync keeps the offset to Redis TIME current until ctx is done.
func (a *App) clockSync(ctx context.Context) {
	t := time.NewTicker(ClockSyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.offset.Sync(ctx, a.Store.Time); err != nil && ctx.Err() == nil {
				a.jobLog.Warn("clock offset to Redis not measured; keeping the last one", "err", err.Error())
			}
		}
	}
}

// Warnings lists configuration that is legal but probably not intended, for
// the binaries to log at start.
func (a *App) Warnings() []string {
	var w []string
	if a.Tier1Keys == nil && a.Config.UserHeader == "" {
		w = append(w, "neither VWR_TIER1_TOKEN_KEYS nor QUEUE_USER_HEADER is set: every visitor request will get 401")
	}
	if a.Config.AdminToken == "" {
		w = append(w, "QUEUE_ADMIN_TOKEN is unset: admin endpoints are disabled (404)")
	}
	return w
}

// ShutdownTimeout bounds how long Serve waits for in-flight requests.
const ShutdownTimeout = 10 * time.Second

// Serve runs h on ln and the given background jobs until ctx is done, then
// shuts the server down gracefully (in-flight requests finish, up to
// ShutdownTimeout) and waits for the jobs to return.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger, jobs ...func(context.Context)) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	jobCtx, stopJobs := context.WithCancel(ctx)
	defer stopJobs()
	var wg sync.WaitGroup
	for _, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job(jobCtx)
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		log.Info("shutting down", "timeout", ShutdownTimeout.String())
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
		err = srv.Shutdown(sctx)
		cancel()
		if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
	}
	stopJobs()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Preload puts the Lua scripts into Redis' script cache, so that even the
// first check after a Redis restart is one round trip. It only logs a
// failure: a cold cache costs one extra EVAL, and Redis being down at start
// must not stop the binary (it answers 503 until Redis is back).
func (a *App) Preload(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, redisconn.DialTimeout+redisconn.IOTimeout)
	defer cancel()
	if err := a.Store.Load(lctx); err != nil {
		a.Log.Warn("redis scripts not preloaded; the first calls will send them", "err", err.Error())
	}
	if a.offset != nil {
		if err := a.offset.Sync(lctx, a.Store.Time); err != nil {
			a.Log.Warn("clock offset to Redis not measured yet", "err", err.Error())
		}
	}
	if a.Settings != nil {
		// Until a first read succeeds every visitor gets 503, not a wrong 404.
		if err := a.Settings.Refresh(lctx); err != nil {
			a.Log.Warn("event settings not loaded yet; retrying every refresh", "err", err.Error())
		}
	}
}

// ready does what must succeed before an instance says it serves: the
// scripts are in Redis' cache (so Redis answers), the clock offset to Redis
// TIME is measured, and, with configured events, their settings are loaded
// from the settings store.
func (a *App) ready(ctx context.Context) error {
	if err := a.Store.Load(ctx); err != nil {
		return fmt.Errorf("redis at %s: %w", redisconn.Describe(a.Redis), err)
	}
	if a.offset != nil {
		if err := a.offset.Sync(ctx, a.Store.Time); err != nil {
			return fmt.Errorf("redis at %s: clock: %w", redisconn.Describe(a.Redis), err)
		}
	}
	if a.Settings != nil {
		if err := a.Settings.Refresh(ctx); err != nil {
			return fmt.Errorf("event settings store: %w", err)
		}
	}
	return nil
}

// Readiness retries back off from ReadyRetryMin, doubling, to ReadyRetryMax.
const (
	ReadyRetryMin = 250 * time.Millisecond
	ReadyRetryMax = 5 * time.Second
)

// WaitReady returns once Redis answers and, with configured events, the
// settings are loaded, or with ctx's error. Each failed try is one warning
// ("waiting for dependencies", what failed, the attempt and when the next
// one is) until the next try; nothing else is logged meanwhile.
func (a *App) WaitReady(ctx context.Context) error {
	wait := ReadyRetryMin
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, redisconn.DialTimeout+redisconn.IOTimeout)
		err := a.ready(rctx)
		cancel()
		if err == nil {
			if attempt > 1 {
				a.Log.Info("dependencies ready", "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.Log.Warn("waiting for dependencies", "err", err.Error(), "attempt", attempt, "retryIn", wait.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, ReadyRetryMax)
	}
}

// Run listens on Config.Addr and serves the API plus the admission worker
// until ctx is done. It is the whole deployable binary. While Redis or the
// settings store do not answer it serves already (every call that needs
// Redis is a 503, /healthz included) but says only "listening"; once they
// answer it starts the worker and says "serving".
func (a *App) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.Config.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w (choose another address with QUEUE_LISTEN_ADDR)", a.Config.Addr, err)
	}
	a.Log.Info("tier 2 queue listening", "addr", ln.Addr().String(), "redis", redisconn.Describe(a.Redis))
	jobs := []func(context.Context){func(ctx context.Context) {
		if a.WaitReady(ctx) != nil {
			return
		}
		a.Log.Info("tier 2 queue serving", "addr", ln.Addr().String(), "redis", redisconn.Describe(a.Redis))
		var wg sync.WaitGroup
		for _, job := range a.Jobs() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				job(ctx)
			}()
		}
		wg.Wait()
	}}
	return Serve(ctx, ln, a.Handler(), a.Log, jobs...)
}
