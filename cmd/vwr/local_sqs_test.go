package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestLocalPublishesToSQS runs `vwr local` with SQS_ENABLED against moto.
// Not parallel: the AWS SDK reads credentials from the process environment.
func TestLocalPublishesToSQS(t *testing.T) {
	endpoint := testenv.Moto(t)
	testenv.AWSEnv(t, endpoint)
	sq := sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", ""),
	})
	ctx := context.Background()
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(testenv.UniqueID(t) + "-admitted.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	base, out := startLocal(t, map[string]string{
		"SQS_ENABLED":      "true",
		"SQS_QUEUE_URL":    aws.ToString(q.QueueUrl),
		"AWS_ENDPOINT_URL": endpoint,
		"QUEUE_THRESHOLD":  "100",
	})
	if !strings.Contains(out.String(), "SQS_ENABLED: publishing admissions to "+aws.ToString(q.QueueUrl)) {
		t.Fatalf("start-up notes do not mention SQS:\n%s", out.String())
	}
	ev := testenv.UniqueID(t)
	for _, u := range []string{"ann", "bob", "cat"} {
		if r := post(t, base+"/api/queue/check/"+ev, map[string]string{"X-User-Id": u}); r["status"] != "active" {
			t.Fatalf("check %s = %v\n%s", u, r, out.String())
		}
	}
	got := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		res, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 300})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			msg, err := admitted.Parse(aws.ToString(m.Body))
			if err != nil || msg.EventID != ev {
				t.Fatalf("message %s: %v", aws.ToString(m.Body), err)
			}
			got[msg.UserID] = true
			if _, err := sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		if len(res.Messages) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(got) != 3 {
		t.Fatalf("SQS received admissions of %v, want ann, bob and cat", got)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `vwr_sqs_notifications_total{result="sent"} 3`) {
		t.Fatalf("/metrics lacks the sent count:\n%s", b)
	}
}
