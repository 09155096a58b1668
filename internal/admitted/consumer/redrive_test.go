package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/admitted/consumer"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
)

// TestPoisonReachesDLQAfterFiveReceives plays the event source mapping by
// hand against moto: receive a batch, hand it to the handler, delete what
// succeeded and release the reported failures at once. With the queue's
// redrive policy (maxReceiveCount 5, as in template.yaml) the poison record
// ends in the DLQ after its fifth receive; the good records count once.
func TestPoisonReachesDLQAfterFiveReceives(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sq := b.sqs
	ctx := context.Background()
	id := testenv.UniqueID(t)
	dlqURL := aws.String(awstest.FIFOQueue(t, sq, id+"-dlq.fifo", nil))
	dlqAttrs, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: dlqURL, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatal(err)
	}
	qURL := aws.String(awstest.FIFOQueue(t, sq, id+".fifo", map[string]string{
		"VisibilityTimeout": "60",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, dlqAttrs.Attributes["QueueArn"]),
	}))
	send := func(group, dedup, body string) {
		t.Helper()
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: qURL, MessageBody: aws.String(body),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup),
		}); err != nil {
			t.Fatal(err)
		}
	}
	send("poison-ev", "poison", `{"action":"admitted"`)
	for i := 0; i < 3; i++ {
		m := admitted.Message{Action: admitted.Action, EventID: "good-ev", UserID: fmt.Sprintf("u%d", i),
			ExpiresAt: b.clock.Now().Add(10 * time.Minute), Timestamp: b.clock.Now()}
		body, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		send(m.EventID, m.DedupID(), string(body))
	}

	h := consumer.NewHandler(b.store, nil)
	poisonReceives := 0
	for round := 0; round < 20; round++ {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: qURL, MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		resp, err := h.Handle(ctx, toEvent(aws.ToString(qURL), out.Messages))
		if err != nil {
			t.Fatal(err)
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			if failed[aws.ToString(m.MessageId)] {
				poisonReceives++
				_, err = sq.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: qURL, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			} else {
				_, err = sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: qURL, ReceiptHandle: m.ReceiptHandle})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if poisonReceives != 5 {
		t.Fatalf("poison was received and failed %d times, want 5 before the redrive", poisonReceives)
	}
	dead, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlqURL, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead.Messages) != 1 || aws.ToString(dead.Messages[0].Body) != `{"action":"admitted"` {
		t.Fatalf("DLQ holds %d messages, want the poison one", len(dead.Messages))
	}
	if got := count(t, b.store, "good-ev"); got != 3 {
		t.Fatalf("good-ev admitted = %d, want 3", got)
	}
}
