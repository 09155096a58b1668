package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
)

// TestLocalPublishesToSQS runs `vwr local` with SQS_ENABLED against moto.
// Not parallel: the AWS SDK reads credentials from the process environment.
func TestLocalPublishesToSQS(t *testing.T) {
	endpoint := testenv.Moto(t)
	testenv.AWSEnv(t, endpoint)
	sq := sqs.NewFromConfig(awstest.Config(endpoint))
	ctx := context.Background()
	queueURL := awstest.FIFOQueue(t, sq, testenv.UniqueID(t)+"-admitted.fifo", nil)
	base, out := startLocal(t, map[string]string{
		"SQS_ENABLED":      "true",
		"SQS_QUEUE_URL":    queueURL,
		"AWS_ENDPOINT_URL": endpoint,
		"QUEUE_THRESHOLD":  "100",
	})
	if !strings.Contains(out.String(), "SQS_ENABLED: publishing admissions to "+queueURL) {
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
		res, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, VisibilityTimeout: 300})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			msg, err := admitted.Parse(aws.ToString(m.Body))
			if err != nil || msg.EventID != ev {
				t.Fatalf("message %s: %v", aws.ToString(m.Body), err)
			}
			got[msg.UserID] = true
			if _, err := sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
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
