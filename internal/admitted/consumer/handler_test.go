package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/admitted/consumer"
	"github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/notify"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
	"github.com/vwr-go/vwr/services/queue"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testBundle is one test's store on its own pair of moto tables, plus an
// SQS client on the same moto server.
type testBundle struct {
	db     *dynamodb.Client
	sqs    *sqs.Client
	store  *dynamostore.Store
	clock  *clock.Manual
	tables dynamostore.Tables
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	db := dynamodb.NewFromConfig(awstest.Config(testenv.DynamoDB(t)))
	id := testenv.UniqueID(t)
	tables := dynamostore.Tables{Processed: id + "-processed", Stats: id + "-stats"}
	if err := dynamostore.CreateTables(context.Background(), db, tables); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.Date(2026, 11, 22, 1, 50, 30, 0, time.UTC))
	store, err := dynamostore.New(db, tables, clk)
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{db: db, sqs: sqs.NewFromConfig(awstest.Config(testenv.Moto(t))), store: store, clock: clk, tables: tables}
}

func loadFixture(t *testing.T) events.SQSEvent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", "admitted.sqs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func failedIDs(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func count(t *testing.T, s *dynamostore.Store, eventID string) int64 {
	t.Helper()
	n, err := s.Admitted(context.Background(), eventID, time.Unix(0, 0), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestHandlerFixture(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := consumer.NewHandler(b.store, nil)
	ev := loadFixture(t)
	if len(ev.Records) != 6 {
		t.Fatalf("fixture has %d records, want 6 (4 unique, 1 duplicate, 1 malformed)", len(ev.Records))
	}
	poison := ev.Records[5].MessageId

	// Delivered twice, as SQS does after a visibility timeout: nothing counts twice.
	for round := 1; round <= 2; round++ {
		resp, err := h.Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("round %d: Handle returned %v; it must never fail the whole batch", round, err)
		}
		if got := failedIDs(resp); !slices.Equal(got, []string{poison}) {
			t.Fatalf("round %d: failures = %v, want only the malformed %s", round, got, poison)
		}
		if got := count(t, b.store, "concert-2026"); got != 3 {
			t.Fatalf("round %d: concert-2026 admitted = %d, want 3", round, got)
		}
		if got := count(t, b.store, "fan-meeting"); got != 1 {
			t.Fatalf("round %d: fan-meeting admitted = %d, want 1", round, got)
		}
	}
	// All four landed in their own minute (01:43), read back as the last
	// complete minute when the clock is in 01:44.
	b.clock.Set(time.Date(2026, 11, 22, 1, 44, 20, 0, time.UTC))
	if got, err := b.store.AdmittedLastMinute(context.Background(), "concert-2026"); err != nil || got != 3 {
		t.Fatalf("AdmittedLastMinute = %d, %v; want 3", got, err)
	}
}

func TestMismatchedGroupIsMalformed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := loadFixture(t)
	rec := ev.Records[0]
	rec.Attributes = map[string]string{"MessageGroupId": "another-event"}
	resp, _ := consumer.NewHandler(b.store, nil).Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}})
	if got := failedIDs(resp); !slices.Equal(got, []string{rec.MessageId}) {
		t.Fatalf("failures = %v", got)
	}
	if got := count(t, b.store, "concert-2026"); got != 0 {
		t.Fatalf("a rejected record wrote %d", got)
	}
}

func TestTransientStoreErrorFailsOnlyThoseRecords(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	store, err := dynamostore.New(dynamodb.NewFromConfig(awstest.Config(down)), dynamostore.Tables{Processed: "p", Stats: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := loadFixture(t)
	resp, err := consumer.NewHandler(store, nil).Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("Handle returned %v; DynamoDB errors must be item failures", err)
	}
	if got := len(resp.BatchItemFailures); got != len(ev.Records) {
		t.Fatalf("%d item failures, want all %d (store unreachable)", got, len(ev.Records))
	}
}

func TestAdmittedWindows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	at := func(hh, mm, ss int) time.Time { return time.Date(2026, 11, 22, hh, mm, ss, 0, time.UTC) }
	for i, ts := range []time.Time{at(1, 48, 59), at(1, 49, 0), at(1, 49, 30), at(1, 49, 59), at(1, 50, 1)} {
		m := admitted.Message{Action: admitted.Action, EventID: "win", UserID: fmt.Sprintf("u%d", i), ExpiresAt: ts.Add(time.Minute), Timestamp: ts}
		if ok, err := b.store.Record(ctx, m); err != nil || !ok {
			t.Fatalf("Record %d: %v %v", i, ok, err)
		}
	}
	tests := []struct {
		name     string
		from, to time.Time
		want     int64
	}{
		{"one minute", at(1, 49, 0), at(1, 50, 0), 3},
		{"two minutes", at(1, 48, 0), at(1, 50, 0), 4},
		{"partial minute excluded at start", at(1, 48, 30), at(1, 50, 0), 3},
		{"to is exclusive", at(1, 49, 0), at(1, 49, 0), 0},
		{"everything", at(0, 0, 0), at(2, 0, 0), 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.store.Admitted(ctx, "win", tt.from, tt.to)
			if err != nil || got != tt.want {
				t.Fatalf("Admitted = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	// The clock stands at 01:50:30, so the last complete minute is 01:49.
	if got, err := b.store.AdmittedLastMinute(ctx, "win"); err != nil || got != 3 {
		t.Fatalf("AdmittedLastMinute = %d, %v; want 3", got, err)
	}
}

// TestPipelineCountsEachAdmissionOnce runs the whole channel on moto:
// notify publishes 100 admissions plus 20 duplicate sends to a FIFO queue,
// every delivered batch is handed to the consumer twice (one poison record
// rides along in the first batch), and the stats show exactly 100.
func TestPipelineCountsEachAdmissionOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sq := b.sqs
	ctx := context.Background()
	url := awstest.FIFOQueue(t, b.sqs, testenv.UniqueID(t)+".fifo", nil)
	pub, err := notify.New(notify.Config{Enabled: true, QueueURL: url}, sq, notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 22, 1, 40, 0, 0, time.UTC)
	evs := []string{"pipe-a", "pipe-b", "pipe-c"}
	var all []queue.Admission
	for i := 0; i < 100; i++ {
		a := queue.Admission{
			EventID: evs[i%3], UserID: fmt.Sprintf("u-%d", i), EntryJTI: fmt.Sprintf("j%d", i),
			AdmittedAt: base.Add(time.Duration(i) * time.Second), ExpiresAt: base.Add(time.Hour),
		}
		all = append(all, a)
		pub.Admitted(a)
		if i%5 == 0 {
			pub.Admitted(all[i/2])
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pub.Close(cctx); err != nil {
		t.Fatal(err)
	}
	if st := pub.Stats(); st.Enqueued != 120 {
		t.Fatalf("publisher stats %+v, want 120 enqueued", st)
	}

	var batches []events.SQSEvent
	delivered := 0
	for empty := 0; empty < 3; {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 300,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		delivered += len(out.Messages)
		batches = append(batches, toEvent(url, out.Messages))
		for _, m := range out.Messages {
			if _, err := sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if delivered != 100 {
		t.Fatalf("FIFO delivered %d messages, want 100", delivered)
	}
	poison := events.SQSMessage{MessageId: "poison-1", Body: `{"action":"admitted","eventId":"pipe-a"`, EventSource: "aws:sqs"}
	batches[0].Records = append(batches[0].Records[:len(batches[0].Records):len(batches[0].Records)], poison)

	h := consumer.NewHandler(b.store, nil)
	for round := 1; round <= 2; round++ {
		for i, batch := range batches {
			resp, err := h.Handle(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			want := []string(nil)
			if i == 0 {
				want = []string{"poison-1"}
			}
			if got := failedIDs(resp); !slices.Equal(got, want) {
				t.Fatalf("round %d batch %d: failures %v, want %v", round, i, got, want)
			}
		}
	}
	var total int64
	for _, ev := range evs {
		total += count(t, b.store, ev)
	}
	if total != 100 {
		t.Fatalf("stats count %d admissions, want exactly 100", total)
	}
}

// toEvent shapes received SQS messages the way the Lambda event source
// mapping hands them to the function.
func toEvent(queueURL string, msgs []sqstypes.Message) events.SQSEvent {
	var ev events.SQSEvent
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:      aws.ToString(m.MessageId),
			ReceiptHandle:  aws.ToString(m.ReceiptHandle),
			Body:           aws.ToString(m.Body),
			Md5OfBody:      aws.ToString(m.MD5OfBody),
			Attributes:     m.Attributes,
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:" + filepath.Base(queueURL),
			AWSRegion:      "us-east-1",
		})
	}
	return ev
}
