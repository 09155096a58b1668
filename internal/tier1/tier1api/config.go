package tier1api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	admitteddb "github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/token"
)

// Store kinds selected by VWR_TIER1_STORE.
const (
	StoreDynamoDB = "dynamodb"
	StoreRedis    = "redis"
)

// Config is what every Tier 1 Lambda reads from its environment. Each
// function reads the whole set; the template gives each only what it needs
// (the admin token only to admin, for instance).
type Config struct {
	Store     string             // VWR_TIER1_STORE: dynamodb (default) or redis
	Dynamo    dynamostore.Config // VWR_TIER1_EVENTS_TABLE, VWR_TIER1_POSITIONS_TABLE
	RedisURL  string             // VWR_TIER1_REDIS_URL, required when Store is redis
	TokenKeys string             // VWR_TIER1_TOKEN_KEYS "kid:secret,…"
	// MintsTokens makes TokenKeys required: assign and check mint passes;
	// status, admin and the advancer never do, so they are not given the
	// secret and run on a throwaway key instead.
	MintsTokens bool
	AdminToken  string // VWR_ADMIN_TOKEN, optional bearer for admin
	// AdmittedStatsTable is VWR_ADMITTED_STATS_TABLE, the SQS consumer's
	// per-minute admission counts. Optional; only admin reads it.
	AdmittedStatsTable string
	// AdvancerTicks is ADVANCER_TICKS (default 6); the gap between ticks is
	// ADVANCER_TICK_SECONDS, read into Service.TickEvery.
	AdvancerTicks int
	Service       tier1.Config // VWR_TIER1_* tuning, see tier1.ConfigFromEnv
}

// FromEnv reads, defaults and validates the configuration; mintsTokens
// says whether VWR_TIER1_TOKEN_KEYS is required.
func FromEnv(mintsTokens bool) (Config, error) {
	var errs []error
	c := Config{
		MintsTokens: mintsTokens,
		Store:       os.Getenv("VWR_TIER1_STORE"),
		RedisURL:    os.Getenv("VWR_TIER1_REDIS_URL"),
		TokenKeys:   os.Getenv("VWR_TIER1_TOKEN_KEYS"),
		AdminToken:  os.Getenv("VWR_ADMIN_TOKEN"),

		AdmittedStatsTable: strings.TrimSpace(os.Getenv("VWR_ADMITTED_STATS_TABLE")),
	}
	if v := os.Getenv("ADVANCER_TICKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, errors.New("ADVANCER_TICKS: not an integer"))
		}
		c.AdvancerTicks = n
	}
	var err error
	if c.Dynamo, err = dynamostore.FromEnv(); err != nil {
		errs = append(errs, err)
	}
	if c.Service, err = tier1.ConfigFromEnv(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	c = c.WithDefaults()
	return c, c.validate()
}

// WithDefaults fills every zero field with its default.
func (c Config) WithDefaults() Config {
	if c.Store == "" {
		c.Store = StoreDynamoDB
	}
	if c.AdvancerTicks == 0 {
		c.AdvancerTicks = DefaultAdvancerTicks
	}
	c.Dynamo = c.Dynamo.WithDefaults()
	c.Service = c.Service.WithDefaults()
	return c
}

func (c Config) validate() error {
	var errs []error
	switch c.Store {
	case StoreDynamoDB:
	case StoreRedis:
		if c.RedisURL == "" {
			errs = append(errs, errors.New("VWR_TIER1_REDIS_URL is required when VWR_TIER1_STORE=redis"))
		}
	default:
		errs = append(errs, fmt.Errorf("VWR_TIER1_STORE must be %q or %q, not %q", StoreDynamoDB, StoreRedis, c.Store))
	}
	if c.TokenKeys == "" {
		if c.MintsTokens {
			errs = append(errs, errors.New("VWR_TIER1_TOKEN_KEYS is required (kid:secret, secret at least 32 bytes)"))
		}
	} else if _, err := token.ParseKeyRing(c.TokenKeys); err != nil {
		errs = append(errs, fmt.Errorf("VWR_TIER1_TOKEN_KEYS: %w", err))
	}
	if c.AdvancerTicks < 1 || c.AdvancerTicks > 60 {
		errs = append(errs, errors.New("ADVANCER_TICKS must be in [1, 60]"))
	}
	if err := c.Service.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Open builds the configured store and the Service over it. The returned
// close function releases the store's connections.
func Open(ctx context.Context, c Config, clk clock.Clock) (*tier1.Service, func() error, error) {
	keys, err := keyRing(c)
	if err != nil {
		return nil, nil, err
	}
	var store tier1.Store
	closeFn := func() error { return nil }
	switch c.Store {
	case StoreRedis:
		opt, err := redis.ParseURL(c.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("VWR_TIER1_REDIS_URL: %w", err)
		}
		rdb := redis.NewClient(opt)
		store, closeFn = redisstore.New(rdb), rdb.Close
	default:
		ds, err := dynamostore.New(ctx, c.Dynamo)
		if err != nil {
			return nil, nil, err
		}
		store = ds
	}
	return tier1.New(store, keys, clk, c.Service), closeFn, nil
}

// OpenQueueAdmissions returns the reader of the SQS consumer's stats table
// for the admin status, or nil when VWR_ADMITTED_STATS_TABLE is unset. It
// uses the SDK's own resolution (AWS_REGION, AWS_ENDPOINT_URL) like the
// DynamoDB store.
func OpenQueueAdmissions(ctx context.Context, c Config) (QueueAdmissions, error) {
	if c.AdmittedStatsTable == "" {
		return nil, nil
	}
	var loadOpts []func(*awsconfig.LoadOptions) error
	if c.Dynamo.Region != "" {
		loadOpts = append(loadOpts, awsconfig.WithRegion(c.Dynamo.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("VWR_ADMITTED_STATS_TABLE: load AWS config: %w", err)
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if c.Dynamo.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Dynamo.Endpoint)
		}
	})
	r, err := admitteddb.NewStatsReader(db, c.AdmittedStatsTable, clock.System{})
	if err != nil {
		return nil, fmt.Errorf("VWR_ADMITTED_STATS_TABLE: %w", err)
	}
	return r, nil
}

func keyRing(c Config) (*token.KeyRing, error) {
	if c.TokenKeys == "" && !c.MintsTokens {
		// Never signs anything that leaves the process.
		return token.NewKeyRing("unused", []byte(token.RandomSecret()))
	}
	keys, err := token.ParseKeyRing(c.TokenKeys)
	if err != nil {
		return nil, fmt.Errorf("VWR_TIER1_TOKEN_KEYS: %w", err)
	}
	return keys, nil
}

// Boot is a Lambda's cold start: JSON logs on stdout, configuration from the
// environment, the store and Service built once, EMF metrics on stdout. A
// failure is logged with the variable to fix, and the caller exits.
func Boot(ctx context.Context, function string, mintsTokens bool) (Deps, Config, error) {
	return boot(ctx, function, mintsTokens, os.Stdout)
}

func boot(ctx context.Context, function string, mintsTokens bool, out io.Writer) (Deps, Config, error) {
	logger := slog.New(slog.NewJSONHandler(out, nil)).With("fn", function)
	slog.SetDefault(logger)
	cfg, err := FromEnv(mintsTokens)
	if err != nil {
		logger.Error("tier1 config", "err", err)
		return Deps{}, Config{}, err
	}
	cfg.Service.Logger = logger
	svc, _, err := Open(ctx, cfg, clock.System{})
	if err != nil {
		logger.Error("tier1 store", "err", err)
		return Deps{}, Config{}, err
	}
	return Deps{Service: svc, Logger: logger, Metrics: NewMetrics(out, nil)}.withDefaults(), cfg, nil
}
