package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/cfntemplate"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestTemplateMatchesCode guards against drift between template.yaml's
// "admitted" resources and what the code and docs rely on, reading the
// template with a real YAML parser. `make validate` checks the schema; this
// checks the settings that carry meaning.
func TestTemplateMatchesCode(t *testing.T) {
	t.Parallel()
	tpl, err := cfntemplate.Load(filepath.Join(testenv.RepoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res := func(id string) map[string]any {
		t.Helper()
		r, _ := cfntemplate.Get(tpl, "Resources", id).(map[string]any)
		if r == nil {
			t.Fatalf("template.yaml has no %s", id)
		}
		return r
	}
	queue, dlq, fn := res("AdmittedQueue"), res("AdmittedDLQ"), res("AdmittedConsumerFunction")
	checks := []struct {
		what string
		got  any
		want string
	}{
		{"queue name", cfntemplate.Get(queue, "Properties", "QueueName"), `{"Fn::Sub":"${AWS::StackName}-admitted.fifo"}`},
		{"DLQ name", cfntemplate.Get(dlq, "Properties", "QueueName"), `{"Fn::Sub":"${AWS::StackName}-admitted-dlq.fifo"}`},
		{"queue FIFO", cfntemplate.Get(queue, "Properties", "FifoQueue"), `true`},
		{"DLQ FIFO", cfntemplate.Get(dlq, "Properties", "FifoQueue"), `true`},
		// The publisher sets the deduplication id itself.
		{"content-based dedup", cfntemplate.Get(queue, "Properties", "ContentBasedDeduplication"), `false`},
		{"redrive count", cfntemplate.Get(queue, "Properties", "RedrivePolicy", "maxReceiveCount"), `5`},
		{"redrive target", cfntemplate.Get(queue, "Properties", "RedrivePolicy", "deadLetterTargetArn"), `{"Fn::GetAtt":["AdmittedDLQ","Arn"]}`},
		{"code", cfntemplate.Get(fn, "Properties", "CodeUri"), `"lambdas/admitted-consumer/"`},
		{"processed table env", cfntemplate.Get(fn, "Properties", "Environment", "Variables", "VWR_ADMITTED_PROCESSED_TABLE"), `{"Ref":"AdmittedProcessedTable"}`},
		{"stats table env", cfntemplate.Get(fn, "Properties", "Environment", "Variables", "VWR_ADMITTED_STATS_TABLE"), `{"Ref":"AdmittedStatsTable"}`},
		{"mapping source", cfntemplate.Get(res("AdmittedConsumerMapping"), "Properties", "EventSourceArn"), `{"Fn::GetAtt":["AdmittedQueue","Arn"]}`},
		{"mapping target", cfntemplate.Get(res("AdmittedConsumerMapping"), "Properties", "FunctionName"), `{"Ref":"AdmittedConsumerFunction"}`},
		{"batch size", cfntemplate.Get(res("AdmittedConsumerMapping"), "Properties", "BatchSize"), `10`},
		{"partial batch failures", cfntemplate.Get(res("AdmittedConsumerMapping"), "Properties", "FunctionResponseTypes"), `["ReportBatchItemFailures"]`},
		// No SAM SQS event: it would attach AWSLambdaSQSQueueExecutionRole (Resource *).
		{"no SAM SQS event", cfntemplate.Get(fn, "Properties", "Events"), `null`},
		{"queue grants", cfntemplate.Get(fn, "Properties", "Policies", 0, "Statement", 0, "Resource"), `{"Fn::GetAtt":["AdmittedQueue","Arn"]}`},
		{"processed TTL", cfntemplate.Get(res("AdmittedProcessedTable"), "Properties", "TimeToLiveSpecification", "AttributeName"), `"ttl"`},
		{"stats TTL", cfntemplate.Get(res("AdmittedStatsTable"), "Properties", "TimeToLiveSpecification", "AttributeName"), `"ttl"`},
		{"send policy", cfntemplate.Get(res("AdmittedSendPolicy"), "Properties", "PolicyDocument", "Statement", 0, "Action"), `["sqs:SendMessage"]`},
	}
	for _, c := range checks {
		if got := cfntemplate.String(c.got); got != c.want {
			t.Errorf("%s = %s, want %s", c.what, got, c.want)
		}
	}
	// The visibility timeout must cover six times the consumer's timeout, as
	// AWS advises for SQS event sources.
	vis, _ := cfntemplate.Get(queue, "Properties", "VisibilityTimeout").(int)
	timeout, _ := cfntemplate.Get(fn, "Properties", "Timeout").(int)
	if timeout == 0 || vis < 6*timeout {
		t.Errorf("VisibilityTimeout %d < 6 × the consumer's Timeout %d", vis, timeout)
	}
	// Least privilege: no wildcard actions and no *FullAccess managed policies.
	for _, id := range []string{"AdmittedConsumerFunction", "AdmittedSendPolicy", "AdmittedStatsReadPolicy"} {
		body := cfntemplate.String(res(id))
		for _, bad := range []string{"dynamodb:*", "sqs:*", "FullAccess", "DynamoDBCrudPolicy"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s grants %q", id, bad)
			}
		}
	}
}
