package notify

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vwr-go/vwr/services/queue"
)

// Open returns the Notifier cfg asks for: a running Publisher when
// SQS_ENABLED=true, otherwise one that discards admissions. Binaries call it
// once at start and Close on shutdown.
func Open(ctx context.Context, cfg Config, opts Options) (Notifier, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled {
		return disabled{}, nil
	}
	client, err := NewClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return New(cfg, client, opts)
}

// NewClient builds the SQS client from the default AWS chain. An explicit
// Endpoint (AWS_ENDPOINT_URL) points it at moto or LocalStack. The SDK's own
// retries are off: the publisher retries whole batches with its own backoff
// and bounds each call, so a dead endpoint costs one timeout per attempt.
func NewClient(ctx context.Context, cfg Config) (*sqs.Client, error) {
	loadOpts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRetryMaxAttempts(1)}
	if cfg.Region != "" {
		loadOpts = append(loadOpts, awsconfig.WithRegion(cfg.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("notify: load AWS config: %w", err)
	}
	return sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}), nil
}

// disabled is the Notifier when SQS is off.
type disabled struct{ queue.NopNotifier }

func (disabled) Close(context.Context) error { return nil }

func (disabled) Register(prometheus.Registerer) error { return nil }
