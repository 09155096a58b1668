package dynamostore_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

// throttler is a test SDK middleware, inside the retry loop, that answers
// ProvisionedThroughputExceededException to the next `fail` attempts of one
// operation (fail < 0: every attempt) without sending them.
type throttler struct {
	mu       sync.Mutex
	op       string
	fail     int
	attempts int
}

func (th *throttler) set(op string, fail int) {
	th.mu.Lock()
	th.op, th.fail, th.attempts = op, fail, 0
	th.mu.Unlock()
}

func (th *throttler) tried() int {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.attempts
}

func (th *throttler) register(stack *middleware.Stack) error {
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("injectThrottle",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			th.mu.Lock()
			hit := awsmiddleware.GetOperationName(ctx) == th.op
			if hit {
				th.attempts++
				hit = th.fail != 0
				if th.fail > 0 {
					th.fail--
				}
			}
			th.mu.Unlock()
			if hit {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, &types.ProvisionedThroughputExceededException{Message: aws.String("injected")}
			}
			return next.HandleFinalize(ctx, in)
		}), "Retry", middleware.After)
}

// positionsOf scans the positions table for the event's records.
func positionsOf(t *testing.T, s *dynamostore.Store, eventID string) (positions, idem int) {
	t.Helper()
	db := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(testenv.DynamoDB(t)), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", ""),
	})
	out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.Config().PositionsTable)})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	for _, it := range out.Items {
		if v, ok := it["eventId"].(*types.AttributeValueMemberS); !ok || v.Value != eventID {
			continue
		}
		if _, ok := it["target"]; ok {
			idem++
		} else {
			positions++
		}
	}
	return positions, idem
}

func TestThrottling(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		op       string
		fail     int
		key      string
		wantErr  bool
		attempts int
		// after a throttled enter, a clean retry with the same key must
		// yield exactly one position record.
		positions, counter int64
	}{
		{name: "counter ADD throttled twice then succeeds", op: "UpdateItem", fail: 2, attempts: 3, positions: 1, counter: 1},
		{name: "counter ADD still throttled", op: "UpdateItem", fail: -1, wantErr: true, attempts: 3, positions: 0, counter: 0},
		{name: "position record still throttled", op: "PutItem", fail: -1, wantErr: true, attempts: 3, positions: 0, counter: 1},
		{name: "idempotency record throttled, then retried", op: "PutItem", fail: -1, key: "k1", wantErr: true, attempts: 3, positions: 1, counter: 2},
		{name: "idempotency read throttled", op: "GetItem", fail: -1, key: "k2", wantErr: true, attempts: 3, positions: 1, counter: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			th := &throttler{}
			store := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{th.register}})
			clk := clock.NewManual(storetest.Epoch)
			svc := tier1.New(store, storetest.Keys(t), clk, tier1.Config{Logger: slog.New(slog.DiscardHandler)})
			ctx := context.Background()
			event := testenv.UniqueID(t)
			if _, err := svc.Activate(ctx, event, 1, 10); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Status(ctx, event); err != nil { // warm the snapshot cache
				t.Fatal(err)
			}

			th.set(tc.op, tc.fail)
			r, err := svc.Assign(ctx, event, tc.key)
			if got := th.tried(); got != tc.attempts {
				t.Errorf("%s attempts = %d, want %d (the SDK retries)", tc.op, got, tc.attempts)
			}
			if tc.wantErr {
				if !errors.Is(err, tier1.ErrThrottled) || !errors.Is(err, tier1.ErrUnavailable) {
					t.Fatalf("Assign = %+v, %v; want ErrThrottled (503)", r, err)
				}
				th.set("", 0)
				if tc.key != "" {
					first, err := svc.Assign(ctx, event, tc.key)
					if err != nil {
						t.Fatalf("clean retry: %v", err)
					}
					again, err := svc.Assign(ctx, event, tc.key)
					if err != nil || again.RequestID != first.RequestID || again.Position != first.Position {
						t.Fatalf("second retry = %+v, %v; want %+v", again, err, first)
					}
					if _, err := svc.Check(ctx, event, first.RequestID); err != nil {
						t.Fatalf("Check of the retried enter: %v", err)
					}
				}
			} else if err != nil || !r.Active || r.Position != 1 {
				t.Fatalf("Assign = %+v, %v; want position 1 after retries", r, err)
			}
			th.set("", 0)
			positions, idem := positionsOf(t, store, event)
			if int64(positions) != tc.positions {
				t.Errorf("position records = %d, want %d", positions, tc.positions)
			}
			if tc.key != "" && idem != 1 {
				t.Errorf("idempotency records = %d, want 1", idem)
			}
			st, err := svc.AdminStatus(ctx, event)
			if err != nil {
				t.Fatal(err)
			}
			if st.Assigned != tc.counter {
				t.Errorf("counter = %d, want %d", st.Assigned, tc.counter)
			}
		})
	}
}

func TestThrottledSnapshotIsUnavailable(t *testing.T) {
	t.Parallel()
	th := &throttler{}
	store := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{th.register}})
	svc := tier1.New(store, storetest.Keys(t), clock.NewManual(storetest.Epoch), tier1.Config{Logger: slog.New(slog.DiscardHandler)})
	th.set("BatchGetItem", -1)
	_, err := svc.Status(context.Background(), testenv.UniqueID(t))
	if !errors.Is(err, tier1.ErrThrottled) {
		t.Fatalf("Status under throttling: %v, want ErrThrottled", err)
	}
	if th.tried() != 3 {
		t.Fatalf("BatchGetItem attempts = %d, want 3", th.tried())
	}
}
