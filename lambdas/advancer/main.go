// Command advancer is the Tier 1 Lambda run by the EventBridge schedule
// rate(1 minute): each invocation raises every active event's serving counter
// ADVANCER_TICKS times, ADVANCER_TICK_SECONDS apart. Wiring only; the handler
// is tier1api.Advancer.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/tier1/tier1app"
)

func main() {
	fn, err := tier1app.Boot(context.Background(), "advancer", tier1app.NoPassMinting)
	if err != nil {
		os.Exit(1)
	}
	defer fn.Close()
	lambda.Start(tier1api.NewAdvancer(fn.Deps, tier1api.AdvancerOptions{Ticks: int(fn.Config.AdvancerTicks)}).Handle)
}
