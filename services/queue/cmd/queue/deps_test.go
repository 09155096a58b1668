package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoLambdaOrTier1Code keeps the deployable queue lean: it publishes
// the "admitted" message but must not link the consumer's Lambda event types,
// Tier 1, or the AWS DynamoDB client.
func TestLinksNoLambdaOrTier1Code(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{
			"github.com/aws/aws-lambda-go",
			"github.com/vwr-go/vwr/internal/tier1",
			"github.com/vwr-go/vwr/internal/admitted/consumer",
			"github.com/aws/aws-sdk-go-v2/service/dynamodb",
		} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("bin/queue links %s", pkg)
			}
		}
	}
}
