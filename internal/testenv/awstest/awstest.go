// Package awstest points AWS SDK clients at the moto server internal/testenv
// starts, and creates the resources tests need there. Clients get an explicit
// endpoint and dummy static credentials, so parallel tests need no process
// environment.
package awstest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Config is an aws.Config for endpoint (moto, or a closed port to fake an
// outage); pass it to dynamodb.NewFromConfig or sqs.NewFromConfig. Its
// retryer makes three quick attempts: moto's server now and then resets a
// kept-alive connection mid-response, which the SDK retries as on AWS, and a
// closed port still fails within milliseconds.
func Config(endpoint string) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.MaxBackoff = 20 * time.Millisecond
			})
		},
	}
}

// FIFOQueue creates the FIFO queue name (it must end in .fifo) with
// content-based deduplication off, as template.yaml declares the admitted
// queue, plus any extra attributes, and returns its URL.
func FIFOQueue(tb testing.TB, c *sqs.Client, name string, extra map[string]string) string {
	tb.Helper()
	attrs := map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "false"}
	for k, v := range extra {
		attrs[k] = v
	}
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		tb.Fatalf("awstest: create queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}
