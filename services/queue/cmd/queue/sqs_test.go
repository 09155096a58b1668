package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
)

// TestPublishesAdmissionsToSQS runs the binary with
// SQS_ENABLED against moto: every direct admission reaches the FIFO queue,
// and the process still stops cleanly on SIGTERM (the flush itself is
// tested in internal/notify).
func TestPublishesAdmissionsToSQS(t *testing.T) {
	t.Parallel()
	endpoint := testenv.Moto(t)
	sq := sqs.NewFromConfig(awstest.Config(endpoint))
	ctx := context.Background()
	queueURL := awstest.FIFOQueue(t, sq, testenv.UniqueID(t)+"-admitted.fifo", nil)
	p := start(t,
		"SQS_ENABLED=true",
		"SQS_QUEUE_URL="+queueURL,
		"AWS_ENDPOINT_URL="+endpoint,
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_REGION=us-east-1",
	)

	ev := testenv.UniqueID(t)
	for i := 0; i < 25; i++ {
		req, _ := http.NewRequest("POST", "http://"+p.addr+"/api/queue/check/"+ev, nil)
		req.Header.Set("X-User-Id", fmt.Sprintf("u%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("check u%d: %v\n%s", i, err, p.stderr.String())
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("check u%d = %d", i, resp.StatusCode)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 30*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
	}

	users := map[string]bool{}
	for empty := 0; empty < 3; {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, VisibilityTimeout: 300})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			msg, err := admitted.Parse(aws.ToString(m.Body))
			if err != nil || msg.EventID != ev || msg.EntryTokenID == "" {
				t.Fatalf("message %s: %+v %v", aws.ToString(m.Body), msg, err)
			}
			users[msg.UserID] = true
			// A FIFO group hands out nothing more while its messages are in flight.
			if _, err := sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(users) != 25 {
		t.Fatalf("queue holds admissions of %d users, want 25\n%s", len(users), p.stderr.String())
	}
}

func TestSQSConfigFailsFast(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(build(t))
	cmd.Env = []string{
		"REDIS_URL=redis://127.0.0.1:1", "QUEUE_ENTRY_TOKEN_SECRET=cmd-test-secret-0123456789abcdef-0123456",
		"SQS_ENABLED=true",
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(stderr.String(), "SQS_QUEUE_URL is required") {
		t.Fatalf("exit = %v, stderr %s; want a failure naming SQS_QUEUE_URL", err, stderr.String())
	}
}
