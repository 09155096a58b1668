package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/token"
)

// Tier 1 in `vwr local`: the same handlers the Lambdas run, served at
// /vwr-api/vwr/… with the /vwr-api prefix stripped (as CloudFront does in
// front of API Gateway), through tier1api's API Gateway v2 adapter. The store
// is the Redis the queue uses (embedded or REDIS_URL) unless
// VWR_TIER1_STORE=dynamodb; a ticker stands in for the EventBridge schedule.

// Tier1Prefix is where `vwr local` mounts Tier 1.
const Tier1Prefix = "/vwr-api"

// demoTier1Tick is the advancer tick under -demo unless -tier1-tick is given:
// fast enough that one person sees the line move.
const demoTier1Tick = 2 * time.Second

var tier1Flags struct {
	tick time.Duration
}

// tier1Services remembers the Tier 1 service mounted on each local stack, for
// the demo (tests run several stacks in one process).
var tier1Services sync.Map // *localStack → *tier1.Service

func init() {
	registerLocal(localExtension{
		Name: "tier1",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&tier1Flags.tick, "tier1-tick", 0,
				"Tier 1 advancer tick, e.g. 1s for fast development (default ADVANCER_TICK_SECONDS, else 10s; 2s with -demo)")
		},
		Mount: mountTier1,
	})
}

func mountTier1(ctx context.Context, s *localStack) error {
	tick, err := tier1Tick(s)
	if err != nil {
		return err
	}
	log := s.Log.With("component", "tier1")
	store, storeNote, err := localTier1Store(ctx, s)
	if err != nil {
		return err
	}
	svc := tier1.New(store, s.Tier1Keys, s.Clock, tier1.Config{TickEvery: tick, Logger: log})
	deps := tier1api.Deps{
		Service: svc, Clock: s.Clock, Logger: log,
		// vwr local speaks plain http; a Secure cookie would never be sent back.
		InsecureCookie: true,
	}
	adminToken := s.Getenv("VWR_ADMIN_TOKEN")
	if adminToken == "" {
		adminToken = defaultAdminToken(s.Addr)
	}
	hs := tier1api.NewHandlers(deps, tier1api.AdminOptions{Token: adminToken})
	s.Handle(Tier1Prefix+"/", http.StripPrefix(Tier1Prefix, tier1api.NewHTTPHandler(hs.Routes())))
	adv := tier1api.NewAdvancer(deps, tier1api.AdvancerOptions{})
	s.Go(adv.RunLocal)
	tier1Services.Store(s, svc)
	s.Go(func(ctx context.Context) { <-ctx.Done(); tier1Services.Delete(s) })

	base := "http://" + browsable(s.Addr) + Tier1Prefix
	s.Notef("Tier 1 at %s/vwr/… on %s; advancer ticks every %s", Tier1Prefix, storeNote, tick)
	s.Notef("Tier 1 admin takes Authorization: Bearer %s (choose it with VWR_ADMIN_TOKEN), e.g.: VWR_ADMIN_TOKEN=%s vwr admin status -url %s -event <id>",
		adminToken, adminToken, base)
	return nil
}

// tier1Tick picks the advancer tick: -tier1-tick, else ADVANCER_TICK_SECONDS,
// else 2s under -demo, else the production 10s.
func tier1Tick(s *localStack) (time.Duration, error) {
	tick := tier1Flags.tick
	if tick == 0 {
		if v := s.Getenv("ADVANCER_TICK_SECONDS"); v != "" {
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
				return 0, fmt.Errorf("ADVANCER_TICK_SECONDS must be a positive integer, not %q", v)
			}
			tick = time.Duration(n) * time.Second
		} else if webFlags.demo {
			tick = demoTier1Tick
		} else {
			tick = tier1.DefaultTickEvery
		}
	}
	if tick < 100*time.Millisecond {
		return 0, fmt.Errorf("-tier1-tick must be at least 100ms, not %s", tick)
	}
	return tick, nil
}

// localTier1Store returns the Redis store on the stack's Redis, or DynamoDB
// (tables created if missing) when VWR_TIER1_STORE=dynamodb.
func localTier1Store(ctx context.Context, s *localStack) (tier1.Store, string, error) {
	switch kind := s.Getenv("VWR_TIER1_STORE"); kind {
	case "", tier1api.StoreRedis:
		return redisstore.New(s.Redis), "the queue's Redis", nil
	case tier1api.StoreDynamoDB:
		cfg := dynamostore.Config{
			EventsTable:    s.Getenv("VWR_TIER1_EVENTS_TABLE"),
			PositionsTable: s.Getenv("VWR_TIER1_POSITIONS_TABLE"),
			Endpoint:       s.Getenv("AWS_ENDPOINT_URL"),
			Region:         s.Getenv("AWS_REGION"),
		}.WithDefaults()
		ds, err := dynamostore.New(ctx, cfg)
		if err != nil {
			return nil, "", fmt.Errorf("VWR_TIER1_STORE=dynamodb: %w", err)
		}
		if err := ds.CreateTables(ctx); err != nil {
			return nil, "", fmt.Errorf("VWR_TIER1_STORE=dynamodb: %w", err)
		}
		return ds, fmt.Sprintf("DynamoDB tables %s and %s (endpoint %s)", cfg.EventsTable, cfg.PositionsTable,
			orDefault(cfg.Endpoint, "AWS default")), nil
	default:
		return nil, "", fmt.Errorf("VWR_TIER1_STORE must be %q or %q, not %q", tier1api.StoreRedis, tier1api.StoreDynamoDB, kind)
	}
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
