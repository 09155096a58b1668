// Command assign is the Tier 1 Lambda behind POST /vwr/assign/{eventId}: it
// hands a visitor a position in the event's line. Wiring only; the handler is
// tier1api.Assign.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

func main() {
	deps, _, err := tier1api.Boot(context.Background(), "assign", true)
	if err != nil {
		os.Exit(1)
	}
	lambda.Start(tier1api.NewAssign(deps).Handle)
}
