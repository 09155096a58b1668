package dynamostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fastRetryer keeps the SDK's retry logic but with millisecond backoff and
// no retry quota, so throttling tests do not sleep for seconds.
func fastRetryer(attempts int) func() aws.Retryer {
	return func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.RateLimiter = ratelimit.None
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		})
	}
}

// newStore returns a store on fresh, uniquely named tables in moto.
func newStore(t *testing.T, cfg dynamostore.Config) *dynamostore.Store {
	t.Helper()
	endpoint := testenv.Moto(t)
	id := testenv.UniqueID(t)
	if len(id) > 200 {
		id = id[len(id)-200:]
	}
	cfg.EventsTable = "ev-" + id
	cfg.PositionsTable = "pos-" + id
	cfg.Endpoint = endpoint
	cfg.Region = "us-east-1"
	if cfg.Retryer == nil {
		cfg.Retryer = fastRetryer(3)
	}
	cfg.Credentials = credentials.NewStaticCredentialsProvider("testing", "testing", "")
	ctx := context.Background()
	s, err := dynamostore.New(ctx, cfg)
	if err != nil {
		t.Fatalf("dynamostore.New: %v", err)
	}
	if err := s.CreateTables(ctx); err != nil {
		t.Fatalf("CreateTables: %v", err)
	}
	if err := s.CreateTables(ctx); err != nil {
		t.Fatalf("CreateTables a second time: %v", err)
	}
	return s
}

func TestConformanceMoto(t *testing.T) {
	storetest.Run(t, func(t *testing.T) tier1.Store {
		t.Helper()
		return newStore(t, dynamostore.Config{})
	})
}
