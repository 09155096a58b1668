package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestTemplateMatchesCode guards against drift between template.yaml's
// "admitted" section and what the code and docs rely on. `make validate`
// checks the template's syntax; this checks the settings that carry meaning.
func TestTemplateMatchesCode(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tpl := string(b)
	start := strings.Index(tpl, `# SQS "admitted" notifications`)
	end := strings.Index(tpl, `# === end of SQS "admitted" notifications`)
	if start < 0 || end < start {
		t.Fatal(`template.yaml lacks the marked SQS "admitted" section`)
	}
	section := tpl[start:end]
	for _, want := range []string{
		`QueueName: !Sub "${AWS::StackName}-admitted.fifo"`,
		`QueueName: !Sub "${AWS::StackName}-admitted-dlq.fifo"`,
		"ContentBasedDeduplication: false",
		"maxReceiveCount: 5",
		"BatchSize: 10",
		"- ReportBatchItemFailures",
		"CodeUri: lambdas/admitted-consumer/",
		"VWR_ADMITTED_PROCESSED_TABLE: !Ref AdmittedProcessedTable",
		"VWR_ADMITTED_STATS_TABLE: !Ref AdmittedStatsTable",
		"AttributeName: ttl",
		"- sqs:SendMessage",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("template.yaml admitted section lacks %q", want)
		}
	}
	// Least privilege: no wildcard actions and no *FullAccess managed policies.
	for _, bad := range []string{"dynamodb:*", "sqs:*", "FullAccess", "DynamoDBCrudPolicy"} {
		if strings.Contains(section, bad) {
			t.Errorf("template.yaml admitted section grants %q", bad)
		}
	}
}
