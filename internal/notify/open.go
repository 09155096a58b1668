package notify

import (
	"context"
	"fmt"

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
	client, err := NewClient(ctx)
	if err != nil {
		return nil, err
	}
	return New(cfg, client, opts)
}

// NewClient builds the SQS client from the AWS SDK's default chain, which
// also reads AWS_REGION and AWS_ENDPOINT_URL (moto, LocalStack). The SDK's
// own retries are off: the publisher retries whole batches with its own
// backoff and bounds each call, so a dead endpoint costs one timeout per
// attempt.
func NewClient(ctx context.Context) (*sqs.Client, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRetryMaxAttempts(1))
	if err != nil {
		return nil, fmt.Errorf("notify: load AWS config: %w", err)
	}
	return sqs.NewFromConfig(awsCfg), nil
}

// disabled is the Notifier when SQS is off.
type disabled struct{ queue.NopNotifier }

func (disabled) Close(context.Context) error { return nil }

func (disabled) Register(prometheus.Registerer) error { return nil }
