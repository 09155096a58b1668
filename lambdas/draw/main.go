// Command draw is the Tier 1 Lambda behind the public draw routes of
// scheduled sales (tier1api.DrawRoutes): the draw document, the chunks of
// the sorted ticket list and a ticket's Merkle proof, all CDN-cacheable
// and immutable once drawn. Wiring only: configuration and store
// (tier1app), the net/http handler (tier1api) behind the API Gateway
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
	fn, err := tier1app.Boot(context.Background(), "draw", tier1app.NoPassMinting)
	if err != nil {
		os.Exit(1)
	}
	defer fn.Close()
	h := tier1api.New(fn.Deps, tier1api.AdminOptions{}).Handler(tier1api.DrawRoutes...)
	lambda.Start(httpadapter.NewV2(h).ProxyWithContext)
}
