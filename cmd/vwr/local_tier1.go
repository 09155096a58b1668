package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/draw/localbeacon"
	"github.com/vwr-go/vwr/internal/eventsettings"
	esdynamo "github.com/vwr-go/vwr/internal/eventsettings/dynamostore"
	esredis "github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/eventsettings/settingsstore"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/tier1/tier1app"
	"github.com/vwr-go/vwr/internal/tier1/tier1store"
	"github.com/vwr-go/vwr/internal/token"
)

// Tier 1 in `vwr local`: the same net/http handlers the Lambdas run behind
// API Gateway, served at /vwr-api/vwr/… with the /vwr-api prefix stripped (as
// CloudFront does in front of API Gateway). The store is Redis unless
// VWR_TIER1_STORE says otherwise: an embedded one of its own beside the
// queue's embedded one, or the queue's server with REDIS_URL
// (localTier1Store); a ticker stands in for the EventBridge schedule.

// Tier1Prefix is where `vwr local` mounts Tier 1.
const Tier1Prefix = "/vwr-api"

// demoTier1Tick is the advancer tick under -demo unless -tier1-tick is given:
// fast enough that one person sees the line move.
const demoTier1Tick = 2 * time.Second

var tier1Flags struct {
	tick      time.Duration
	demoOpens time.Duration
}

// tier1Services remembers the Tier 1 service mounted on each local stack, for
// the demo (tests run several stacks in one process).
var tier1Services sync.Map // *localStack → *tier1.Service

// localChains remembers the beacon stand-in's chain hash of each local
// stack that has one (-demo-opens), for the verify command the demo prints.
var localChains sync.Map // *localStack → chain hash, hex

func init() {
	registerLocal(localExtension{
		Name: "tier1",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&tier1Flags.tick, "tier1-tick", 0,
				"Tier 1 advancer tick, e.g. 1s for fast development (default ADVANCER_TICK_SECONDS, else 10s; 2s with -demo)")
			fs.DurationVar(&tier1Flags.demoOpens, "demo-opens", 0,
				"with -demo: schedule the demo event to open this long after start (e.g. 1m), with a pre-queue drawn by a local beacon stand-in served at /beacon/")
		},
		Configure: configureTier1,
		Mount:     mountTier1,
	})
}

// localTier1 is what configureTier1 settles for mountTier1.
type localTier1 struct {
	cfg       tier1app.Config
	tick      time.Duration
	store     tier1store.Store
	storeNote string
}

// tier1Setups remembers each local stack's localTier1 between Configure and Mount.
var tier1Setups sync.Map // *localStack → *localTier1

// configureTier1 opens Tier 1's store before the queue is assembled, so that
// the queue reads its event settings (QUEUE_OPEN_EVENTS=false) from the
// very store Tier 1 runs on, as in a deployment.
func configureTier1(s *localStack) error {
	cfg, err := tier1app.FromEnv(s.Env)
	if err != nil {
		return err
	}
	if s.Getenv("VWR_TIER1_STORE") == "" {
		cfg.Store = tier1app.StoreRedis // the queue's Redis, below
	}
	tick, err := tier1Tick(cfg)
	if err != nil {
		return err
	}
	if err := cfg.Validate(tier1app.NoPassMinting); err != nil {
		return err
	}
	store, settings, storeNote, err := localTier1Store(context.Background(), s, cfg)
	if err != nil {
		return err
	}
	if s.QueueOptions.ConfigStore == nil {
		s.QueueOptions.ConfigStore = settings
	}
	tier1Setups.Store(s, &localTier1{cfg: cfg, tick: tick, store: store, storeNote: storeNote})
	return nil
}

func mountTier1(ctx context.Context, s *localStack) error {
	v, ok := tier1Setups.LoadAndDelete(s)
	if !ok {
		return fmt.Errorf("tier1: not configured")
	}
	setup := v.(*localTier1)
	cfg, tick, store, storeNote := setup.cfg, setup.tick, setup.store, setup.storeNote
	log := s.Log.With("component", "tier1")
	svcCfg := cfg.Service()
	svcCfg.TickEvery, svcCfg.Logger = tick, log
	svcCfg.Pow.Keys = tier1app.PowKeys(s.Tier1Keys)
	if tier1Flags.demoOpens > 0 {
		d, err := localDrawBeacon(s, cfg)
		if err != nil {
			return err
		}
		svcCfg.Draw = d
	}
	svc := tier1.New(store, s.Tier1Keys, s.Clock, svcCfg)
	deps := tier1api.Deps{
		Service: svc, Clock: s.Clock, Logger: log, Log: cfg.Log,
		// vwr local speaks plain http; a Secure cookie would never be sent back.
		InsecureCookie: true,
		ClientHeader:   cfg.ClientIPHeader,
	}
	adminToken := orDefault(cfg.AdminToken, s.AdminToken)
	api := tier1api.New(deps, tier1api.AdminOptions{Token: adminToken})
	s.Handle(Tier1Prefix+"/", http.StripPrefix(Tier1Prefix, api.Handler()))
	adv := tier1api.NewAdvancer(deps, tier1api.AdvancerOptions{})
	s.Go(adv.RunLocal)
	tier1Services.Store(s, svc)
	s.Go(func(ctx context.Context) { <-ctx.Done(); tier1Services.Delete(s) })

	s.Notef("Tier 1 at %s/vwr/… on %s; advancer ticks every %s", Tier1Prefix, storeNote, tick)
	s.Notef("operate events with: vwr admin <action> -url %s -event <id> (vwr admin -h lists the actions)", s.URL)
	return nil
}

// tier1Tick picks the advancer tick: -tier1-tick, else ADVANCER_TICK_SECONDS,
// else 2s under -demo, else the production default.
func tier1Tick(cfg tier1app.Config) (time.Duration, error) {
	tick := tier1Flags.tick
	switch {
	case tick != 0:
	case cfg.AdvancerTick != 0:
		tick = cfg.AdvancerTick.D()
	case webFlags.demo:
		tick = demoTier1Tick
	default:
		tick = cfg.Service().TickEvery
	}
	if tick < 100*time.Millisecond {
		return 0, fmt.Errorf("-tier1-tick must be at least 100ms, not %s", tick)
	}
	return tick, nil
}

// localTier1Store returns the Redis store unless VWR_TIER1_STORE chose
// otherwise: on an embedded Redis of its own when the queue's is embedded
// too, so that a FLUSHALL of the queue's Redis cannot reach Tier 1's state
// or the event settings kept with it; on the queue's server with REDIS_URL
// (the instance then writes the settings back after a flush). DynamoDB
// tables are created if missing. The event settings store is on the same
// backend (the same client where there is one), as in a deployment.
func localTier1Store(ctx context.Context, s *localStack, cfg tier1app.Config) (tier1store.Store, eventsettings.StoreLedger, string, error) {
	if cfg.Store == tier1app.StoreRedis && cfg.RedisURL == "" {
		if s.Miniredis == nil {
			return redisstore.New(s.Redis), esredis.New(s.Redis, ""), "the queue's Redis", nil
		}
		m, err := miniredis.Run()
		if err != nil {
			return nil, nil, "", fmt.Errorf("start Tier 1's embedded Redis: %w", err)
		}
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		s.Go(func(ctx context.Context) { fastForward(ctx, m) })
		s.OnStop(func() { _ = rdb.Close(); m.Close() })
		return redisstore.New(rdb), esredis.New(rdb, ""), "an embedded Redis of its own, apart from the queue's", nil
	}
	var store tier1store.Store
	if cfg.Store == tier1app.StoreDynamoDB && len(s.Tier1DynamoOptions) > 0 {
		d := cfg.Dynamo()
		d.APIOptions = s.Tier1DynamoOptions
		ds, err := dynamostore.New(ctx, d)
		if err != nil {
			return nil, nil, "", err
		}
		store = ds
	} else {
		var closeStore func() error
		var err error
		if store, closeStore, err = tier1store.Open(ctx, cfg.StoreConfig()); err != nil {
			return nil, nil, "", err
		}
		s.OnStop(func() { _ = closeStore() })
	}
	if ds, ok := store.(*dynamostore.Store); ok {
		if err := ds.CreateTables(ctx); err != nil {
			return nil, nil, "", fmt.Errorf("VWR_TIER1_STORE=dynamodb: %w", err)
		}
		d := cfg.Dynamo()
		// The settings share Tier 1's client, and so its middlewares.
		db, ok := ds.Client().(esdynamo.API)
		if !ok {
			return nil, nil, "", fmt.Errorf("VWR_TIER1_STORE=dynamodb: the client %T cannot serve the event settings", ds.Client())
		}
		settings := esdynamo.New(db, esdynamo.Config{EventsTable: d.EventsTable, PositionsTable: d.PositionsTable})
		return ds, settings, fmt.Sprintf("DynamoDB tables %s and %s", d.EventsTable, d.PositionsTable), nil
	}
	sc := cfg.StoreConfig()
	settings, closeSettings, err := settingsstore.Open(ctx, settingsstore.Config{Store: sc.Store, RedisURL: sc.RedisURL})
	if err != nil {
		return nil, nil, "", err
	}
	s.OnStop(func() { _ = closeSettings() })
	return store, settings, "the Redis at VWR_TIER1_REDIS_URL", nil
}

// tier1Of returns the Tier 1 service mounted on s, or nil.
func tier1Of(s *localStack) *tier1.Service {
	if v, ok := tier1Services.Load(s); ok {
		return v.(*tier1.Service)
	}
	return nil
}

// defaultAdminToken is the Tier 1 admin token when VWR_ADMIN_TOKEN is unset:
// a fixed, documented one on loopback (so README commands work as written),
// a random one anywhere else.
func defaultAdminToken(addr string) string {
	if isLoopback(addr) {
		return localAdminToken
	}
	return token.RandomSecret()
}

// localDrawBeacon starts a local beacon stand-in for -demo-opens: a chain of
// its own with a random key, served at /beacon/ for anyone who wants to look
// and fetched in-process by the draw. It is a demo: whoever runs it knows
// every round in advance.
func localDrawBeacon(s *localStack, cfg tier1app.Config) (tier1.DrawConfig, error) {
	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		return tier1.DrawConfig{}, err
	}
	now := s.Clock.Now()
	lb, err := localbeacon.New(s.Clock, seed, now.Add(-time.Hour).Truncate(time.Second), 3*time.Second)
	if err != nil {
		return tier1.DrawConfig{}, err
	}
	s.Handle("/beacon/", lb)
	// The waiting page trusts drand's public quicknet chain only; this
	// file names the stand-in so "Verify my place" can check its
	// signatures, and the page says the chain is not the public one.
	s.Handle("GET "+LocalChainPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(lb.InfoJSON()))
	}))
	hash := fmt.Sprintf("%x", []byte(lb.Info().Hash))
	localChains.Store(s, hash)
	s.Go(func(ctx context.Context) { <-ctx.Done(); localChains.Delete(s) })
	margin := cfg.DrawMargin
	if margin == 0 {
		margin = 2 * time.Second // a demo need not wait for a busy close
	}
	s.Notef("demo: pre-queue draw uses a local beacon stand-in (chain %s, NOT drand's public quicknet chain) at /beacon/%s/info", hash, hash)
	return tier1.DrawConfig{
		Chain:  lb.Info(),
		Beacon: draw.Client{URL: "http://local-beacon", Chain: lb.Info(), HTTP: &http.Client{Transport: handlerTransport{lb}}},
		Margin: margin,
	}, nil
}

// LocalChainPath is where vwr local -demo-opens serves its beacon
// stand-in's chain info for the waiting page (static/vwr/draw.js); a
// deployment serves nothing there, so its pages trust quicknet alone.
const LocalChainPath = "/vwr/local-chain.json"

// localChainOf is the stand-in's chain hash on s, or "".
func localChainOf(s *localStack) string {
	if v, ok := localChains.Load(s); ok {
		return v.(string)
	}
	return ""
}

// handlerTransport answers HTTP requests from an in-process handler.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}
