// Command assign is the Tier 1 Lambda behind POST /vwr/assign/{eventId}: it
// hands a visitor a position in the event's line, and behind
// GET /vwr/challenge/{eventId}, the proof of work an event may ask for. Wiring only: configuration and
// store (tier1app), the net/http handler (tier1api) behind the API Gateway
// adapter, lambda.Start.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/tier1/tier1app"
)

func main() {
	fn, err := tier1app.Boot(context.Background(), "assign", tier1app.MintsPasses)
	if err != nil {
		os.Exit(1)
	}
	defer fn.Close()
	h := tier1api.New(fn.Deps, tier1api.AdminOptions{}).Handler(tier1api.AssignRoutes...)
	lambda.Start(httpadapter.NewV2(h).ProxyWithContext)
}
