// Command status is the Tier 1 Lambda behind GET /vwr/status/{eventId}: the
// CDN-cacheable document waiting pages poll. Wiring only; the handler is
// tier1api.Status.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

func main() {
	deps, _, err := tier1api.Boot(context.Background(), "status", false)
	if err != nil {
		os.Exit(1)
	}
	lambda.Start(tier1api.NewStatus(deps).Handle)
}
