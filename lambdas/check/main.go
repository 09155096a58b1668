// Command check is the Tier 1 Lambda behind
// GET /vwr/check/{eventId}/{requestId}: it admits a visitor whose position is
// served and sets the urr-vwr-token cookie. Wiring only; the handler is
// tier1api.Check.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

func main() {
	deps, _, err := tier1api.Boot(context.Background(), "check", true)
	if err != nil {
		os.Exit(1)
	}
	lambda.Start(tier1api.NewCheck(deps).Handle)
}
