package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoLambdaOrTier1Code keeps the deployable queue lean: it publishes
// the "admitted" message and reads event settings from Tier 1's store
// (internal/tier1/tier1store, hence the store packages and the DynamoDB
// client), but must not link Lambda code, the consumer, or Tier 1's HTTP
// handlers and Lambda wiring.
func TestLinksNoLambdaOrTier1Code(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{
			"github.com/aws/aws-lambda-go",
			"github.com/vwr-go/vwr/internal/tier1/tier1api",
			"github.com/vwr-go/vwr/internal/tier1/tier1app",
			"github.com/vwr-go/vwr/internal/admitted/consumer",
			"github.com/awslabs/aws-lambda-go-api-proxy",
		} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("bin/queue links %s", pkg)
			}
		}
	}
}
