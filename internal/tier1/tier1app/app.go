package tier1app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/aws/aws-lambda-go/lambdacontext"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	admitteddb "github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/emf"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/tier1/tier1store"
)

// OpenStore builds the store c names (internal/tier1/tier1store; bin/queue
// reads Tier 2's settings from the same backend through
// internal/eventsettings/settingsstore). The AWS
// SDK takes region, credentials and AWS_ENDPOINT_URL (moto, LocalStack)
// from its own chain. close releases the store's connections.
func OpenStore(ctx context.Context, c Config) (store tier1.Store, close func() error, err error) {
	return tier1store.Open(ctx, c.StoreConfig())
}

// OpenQueueAdmissions returns the reader of the SQS consumer's stats table
// for the admin status, or nil when VWR_ADMITTED_STATS_TABLE is unset.
func OpenQueueAdmissions(ctx context.Context, c Config) (tier1api.QueueAdmissions, error) {
	if c.AdmittedStatsTable == "" {
		return nil, nil
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("VWR_ADMITTED_STATS_TABLE: load AWS config: %w", err)
	}
	r, err := admitteddb.NewStatsReader(dynamodb.NewFromConfig(awsCfg), c.AdmittedStatsTable, clock.System{})
	if err != nil {
		return nil, fmt.Errorf("VWR_ADMITTED_STATS_TABLE: %w", err)
	}
	return r, nil
}

// Function is one Tier 1 Lambda after its cold start.
type Function struct {
	Config Config
	Log    *slog.Logger
	// Deps are the handlers' dependencies: the Service on the configured
	// store, EMF metrics on stdout, the request log.
	Deps tier1api.Deps
	// Close releases the store's connections.
	Close func() error
}

// Boot is a Lambda's cold start: JSON logs on stdout, configuration from the
// environment, the store and Service built once, EMF metrics on stdout. A
// failure is logged, naming the variable to fix, and returned; the caller
// exits.
func Boot(ctx context.Context, name string, mints Passes) (*Function, error) {
	return boot(ctx, name, mints, envconf.Environ(), os.Stdout)
}

func boot(ctx context.Context, name string, mints Passes, environ map[string]string, out io.Writer) (*Function, error) {
	cfg, err := FromEnv(environ)
	logger := applog.New(out, cfg.Log).With("fn", name)
	slog.SetDefault(logger)
	if err == nil {
		err = cfg.Validate(mints)
	}
	if err != nil {
		logger.Error("tier1 config", "err", err)
		return nil, err
	}
	keys, err := LoadKeyRing(ctx, cfg, mints, nil)
	if err != nil {
		logger.Error("tier1 config", "err", err)
		return nil, err
	}
	originVerify, err := LoadOriginVerify(ctx, cfg, nil)
	if err != nil {
		logger.Error("tier1 config", "err", err)
		return nil, err
	}
	store, closeStore, err := OpenStore(ctx, cfg)
	if err != nil {
		logger.Error("tier1 store", "err", err)
		return nil, err
	}
	if limit, ok := memoryLimit(environ); ok {
		debug.SetMemoryLimit(limit)
	}
	svcCfg := cfg.Service()
	svcCfg.Logger = logger
	svcCfg.Pow.Keys = PowKeys(keys)
	return &Function{
		Config: cfg,
		Log:    logger,
		Deps: tier1api.Deps{
			Service:   tier1.New(store, keys, clock.System{}, svcCfg),
			Logger:    logger,
			Log:       cfg.Log,
			RequestID: LambdaRequestID,
			Metrics:   emf.New(out, tier1api.Namespace, tier1api.MetricDimension, nil),
			// Only the assign function reads it (template.yaml sets it there).
			ClientHeader: cfg.ClientIPHeader,
			OriginVerify: originVerify,
		},
		Close: closeStore,
	}, nil
}

// IAMCaller reports whether API Gateway's IAM authorizer vouched for the
// request: on an AWS_IAM route it verifies the SigV4 signature before the
// function runs and puts the caller's ARN in the request context, which the
// Lambda adapter hands on in the request's context. Only the admin function
// trusts it.
func IAMCaller(r *http.Request) bool {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	return ok && rc.Authorizer != nil && rc.Authorizer.IAM != nil && rc.Authorizer.IAM.UserARN != ""
}

// LambdaRequestID is the Lambda request id of an invocation, for log lines.
func LambdaRequestID(r *http.Request) string {
	if lc, ok := lambdacontext.FromContext(r.Context()); ok {
		return lc.AwsRequestID
	}
	return ""
}

// memoryLimit is the soft memory limit a Lambda sets when GOMEMLIMIT is
// unset: 90 % of AWS_LAMBDA_FUNCTION_MEMORY_SIZE (MB). A draw of millions
// of tickets then makes the collector work harder near the limit instead
// of the function running out of memory (docs/draw.md).
func memoryLimit(environ map[string]string) (int64, bool) {
	if environ["GOMEMLIMIT"] != "" {
		return 0, false
	}
	mb, err := strconv.ParseInt(environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"], 10, 64)
	if err != nil || mb <= 0 {
		return 0, false
	}
	return mb << 20 * 9 / 10, true
}
