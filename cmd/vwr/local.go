package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/smithy-go/middleware"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/redisconn"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue/app"
)

// `vwr local` runs the whole stack on one port for development. The Tier 2
// queue (API, admission worker, stale cleanup) is the core; other parts of
// the project plug in through localExtension from their own files
// (local_<name>.go), without touching this one: local_tier1.go mounts Tier 1
// and its advancer, local_sqs.go plugs the SQS notifier in through
// Configure, local_web.go serves the pages, the demo site and -demo.

func init() {
	register(&command{
		name:    "local",
		summary: "run the whole stack locally on one port (embedded Redis unless REDIS_URL is set)",
		run:     runLocal,
	})
}

// localExtension adds flags, configuration and routes to `vwr local`.
// Extensions run in registration order (file name order within the package).
type localExtension struct {
	// Name identifies the extension in errors.
	Name string
	// Flags declares the extension's flags on the `local` flag set.
	Flags func(fs *flag.FlagSet)
	// Configure runs after the defaults are settled and before the queue is
	// assembled; it may edit s.QueueConfig and s.QueueOptions (e.g. plug in
	// a Notifier, lower the threshold for a demo).
	Configure func(s *localStack) error
	// Mount runs once the queue is assembled; it adds routes with s.Handle
	// and background jobs with s.Go, and may print notes with s.Notef.
	Mount func(ctx context.Context, s *localStack) error
}

var localExtensions []localExtension

// registerLocal adds e to `vwr local`. Call it from an init function.
func registerLocal(e localExtension) { localExtensions = append(localExtensions, e) }

// localStack is everything one `vwr local` process runs, shared with the
// extensions.
type localStack struct {
	Addr  string       // listen address (-addr)
	URL   string       // where a browser reaches it (the port the kernel gave for :0)
	Log   *slog.Logger // JSON logs (requests, worker) on stderr
	Clock clock.Clock
	// Env is the process environment (tests inject their own).
	Env map[string]string

	// Redis is the client every part uses: a real server when REDIS_URL is
	// set, else the embedded Miniredis.
	Redis     redis.UniversalClient
	Miniredis *miniredis.Miniredis // nil when REDIS_URL is set

	// AdminToken is the admin token of both tiers unless VWR_ADMIN_TOKEN
	// and QUEUE_ADMIN_TOKEN are both set: whichever is set, else
	// local-admin on loopback, else random.
	AdminToken string

	// Tier1Keys sign and verify Tier 1 passes: from VWR_TIER1_TOKEN_KEYS or
	// generated for this run. The queue verifies with the same ring, so a
	// Tier 1 extension mints with it.
	Tier1Keys *token.KeyRing

	// QueueConfig and QueueOptions assemble the Tier 2 queue; extensions may
	// edit them in Configure.
	QueueConfig  app.Config
	QueueOptions app.Options
	// Queue is the assembled Tier 2 runtime (set before Mount runs).
	Queue *app.App
	// Tier1DynamoOptions are SDK middlewares for Tier 1's DynamoDB client
	// (`vwr loadtest` counts operations per partition with them).
	Tier1DynamoOptions []func(*middleware.Stack) error
	// SQSEndpoint, when set, is where the SQS notifier sends instead of the
	// SDK's own endpoint (`vwr loadtest` puts a proxy it can cut there).
	SQSEndpoint string

	// externalQueue leaves serving the queue's API and running its jobs
	// to the caller (`vwr loadtest`, which restarts Tier 2 instances).
	externalQueue bool

	out      io.Writer
	mux      *http.ServeMux
	patterns map[string]bool
	jobs     []func(context.Context)
	stops    []func()
}

// Getenv reads one variable of the stack's environment.
func (s *localStack) Getenv(k string) string { return s.Env[k] }

// Handle registers h on the shared mux. A pattern registered twice is a
// wiring bug and panics at start-up, naming the pattern.
func (s *localStack) Handle(pattern string, h http.Handler) {
	if s.patterns[pattern] {
		panic(fmt.Sprintf("vwr local: route %q registered twice", pattern))
	}
	s.patterns[pattern] = true
	s.mux.Handle(pattern, h)
}

// Go runs job in the background for the life of the process; it must return
// when ctx is done.
func (s *localStack) Go(job func(ctx context.Context)) { s.jobs = append(s.jobs, job) }

// OnStop runs stop once serving has ended: the HTTP server has drained and
// every Go job (the admission worker among them) has returned, so nothing
// produces work behind it. Stops run in reverse order, before Redis closes.
func (s *localStack) OnStop(stop func()) { s.stops = append(s.stops, stop) }

// Notef prints a start-up note for the human running `vwr local`.
func (s *localStack) Notef(format string, args ...any) {
	fmt.Fprintf(s.out, "vwr local: "+format+"\n", args...)
}

// Local-only defaults. The deployable binary has none of these.
const (
	localUserHeader = "X-User-Id"
	localAdminToken = "local-admin"
	localTier1Kid   = "local"
)

func runLocal(ctx context.Context, inv invocation) int {
	stdout, stderr := inv.Stdout, inv.Stderr
	fs := flag.NewFlagSet("vwr local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	for _, e := range localExtensions {
		if e.Flags != nil {
			e.Flags(fs)
		}
	}
	if err := fs.Parse(inv.Args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vwr local: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	s, err := newLocalStack(*addr, inv.Env, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "vwr local: %v\n", err)
		return exitError
	}
	defer s.close()
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "vwr local: listen %s: %v\n  Choose another address with -addr (e.g. -addr 127.0.0.1:8081), or `make run PORT=8081`.\n", s.Addr, err)
		return exitError
	}
	s.URL = "http://" + browsable(ln.Addr().String())
	if err := s.assemble(ctx); err != nil {
		ln.Close()
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "vwr local: stopped before Redis answered")
			return exitError
		}
		fmt.Fprintf(stderr, "vwr local: %v\n", err)
		return exitError
	}
	s.Notef("serving on %s (Ctrl-C to stop)", s.URL)
	if err := app.Serve(ctx, ln, s.mux, s.Log, s.jobs...); err != nil {
		fmt.Fprintf(stderr, "vwr local: %v\n", err)
		return exitError
	}
	return exitOK
}

// newLocalStack settles configuration: environment first, then local
// defaults for whatever is unset, each announced.
func newLocalStack(addr string, environ map[string]string, stdout, stderr io.Writer) (*localStack, error) {
	s := &localStack{
		Addr:     addr,
		Clock:    clock.System{},
		Env:      environ,
		out:      stdout,
		mux:      http.NewServeMux(),
		patterns: map[string]bool{},
	}
	cfg, err := app.FromEnv(environ)
	if err != nil {
		return nil, err
	}
	if err := cfg.Log.WithDefaults().Validate(); err != nil {
		return nil, err
	}
	s.Log = applog.New(stderr, cfg.Log)
	if cfg.RedisURL == "" && len(cfg.RedisClusterAddrs) == 0 {
		m, err := miniredis.Run()
		if err != nil {
			return nil, fmt.Errorf("start embedded Redis: %w", err)
		}
		s.Miniredis = m
		s.Redis = redis.NewClient(&redis.Options{Addr: m.Addr()})
		s.Notef("REDIS_URL and REDIS_CLUSTER_ADDRS unset: using embedded Redis (miniredis) on %s; state is lost on exit", m.Addr())
		// miniredis only expires keys when told time passed.
		s.Go(func(ctx context.Context) { fastForward(ctx, m) })
	} else {
		rdb, err := redisconn.Open(cfg.RedisURL, cfg.RedisClusterAddrs)
		if err != nil {
			return nil, err
		}
		// go-redis's own lines (failed dials) in the same format as ours.
		redisconn.UseLogger(s.Log)
		s.Redis = rdb
		s.Notef("using Redis at %s", redisconn.Describe(rdb))
	}
	if cfg.EntryTokenSecret == "" {
		cfg.EntryTokenSecret = token.RandomSecret()
		s.Notef("QUEUE_ENTRY_TOKEN_SECRET unset: generated a random entry-token secret for this run")
	}
	if cfg.Tier1TokenKeys == "" {
		cfg.Tier1TokenKeys = localTier1Kid + ":" + token.RandomSecret()
		s.Notef("VWR_TIER1_TOKEN_KEYS unset: generated Tier 1 key %q for this run", localTier1Kid)
	}
	if s.Tier1Keys, err = token.ParseKeyRing(cfg.Tier1TokenKeys); err != nil {
		return nil, fmt.Errorf("VWR_TIER1_TOKEN_KEYS: %v", err)
	}
	if cfg.UserHeader == "" {
		// A trusted identity header is only safe where nobody but this
		// machine can send requests; anywhere else the operator must name
		// the header their authenticating gateway sets.
		if !isLoopback(addr) {
			return nil, fmt.Errorf("-addr %s is not a loopback address: set QUEUE_USER_HEADER explicitly (the header your authenticating gateway sets), or listen on 127.0.0.1", addr)
		}
		cfg.UserHeader = localUserHeader
		s.Notef("QUEUE_USER_HEADER unset: trusting header %s as the user id (vwr local only; the deployable binary has no default)", localUserHeader)
	}
	// One admin token for both tiers unless both variables are set:
	// whichever is set serves the other tier too, as `vwr admin` sends it.
	s.AdminToken = orDefault(environ["VWR_ADMIN_TOKEN"], cfg.AdminToken)
	if s.AdminToken == "" {
		s.AdminToken = defaultAdminToken(addr)
		s.Notef("VWR_ADMIN_TOKEN and QUEUE_ADMIN_TOKEN unset: both tiers' admin endpoints take Authorization: Bearer %s", s.AdminToken)
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = s.AdminToken
	}
	if environ["QUEUE_OPEN_EVENTS"] == "" {
		// Trying things out: any event id works at once. Settings then live
		// in the queue's Redis only, which the deployable binary avoids.
		cfg.OpenEvents = true
		s.Notef("QUEUE_OPEN_EVENTS unset: any valid event id is an open event (vwr local only; QUEUE_OPEN_EVENTS=false serves only events configured with a threshold, as bin/queue does)")
	}
	s.QueueConfig = cfg
	s.QueueOptions = app.Options{Redis: s.Redis, Clock: s.Clock, Logger: s.Log}
	return s, nil
}

// assemble runs the extensions' Configure, builds the queue, mounts the
// Tier 2 routes and the extensions' routes, and finally the JSON 404.
func (s *localStack) assemble(ctx context.Context) error {
	for _, e := range localExtensions {
		if e.Configure != nil {
			if err := e.Configure(s); err != nil {
				return fmt.Errorf("%s: %w", e.Name, err)
			}
		}
	}
	q, err := app.Open(s.QueueConfig, s.QueueOptions)
	if err != nil {
		return err
	}
	s.Queue = q
	// Nothing is mounted, and "serving" is not said, until Redis answers
	// (and, with configured events, their settings are loaded).
	if err := q.WaitReady(ctx); err != nil {
		return err
	}
	if !s.externalQueue {
		q.API.Register(s.mux)
		for _, p := range q.API.Routes() {
			s.patterns[p] = true
		}
		for _, job := range q.Jobs() {
			s.Go(job)
		}
	}
	qc, wc := q.Config.Queue(), q.Config.Worker()
	s.Notef("Tier 2 queue: threshold %d, active TTL %s, admission every %s (batch %d), stale cleanup every %s",
		qc.Threshold, qc.ActiveTTL, wc.AdmissionInterval, qc.AdmissionBatchSize, wc.StaleCleanupInterval)
	for _, e := range localExtensions {
		if e.Mount != nil {
			if err := e.Mount(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", e.Name, err)
			}
		}
	}
	if !s.patterns["/"] {
		s.Handle("/", q.API.NotFound())
	}
	return nil
}

func (s *localStack) close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	if s.Queue != nil {
		_ = s.Queue.Close()
	}
	if s.Redis != nil {
		_ = s.Redis.Close()
	}
	if s.Miniredis != nil {
		s.Miniredis.Close()
	}
}

// fastForward advances miniredis' TTL clock with the wall clock, so that
// PX/EX keys (admission locks, ranking keys) expire as on a real server.
func fastForward(ctx context.Context, m *miniredis.Miniredis) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.FastForward(now.Sub(last))
			last = now
		}
	}
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
