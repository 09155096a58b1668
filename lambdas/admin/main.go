// Command admin is the Tier 1 operator Lambda behind /vwr/admin/…. The routes
// use AWS_IAM auth, so the handler trusts API Gateway's IAM authorizer
// context; VWR_ADMIN_TOKEN, when set, also admits a bearer token. Wiring
// only; the handler is tier1api.Admin.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

func main() {
	deps, cfg, err := tier1api.Boot(context.Background(), "admin", false)
	if err != nil {
		os.Exit(1)
	}
	lambda.Start(tier1api.NewAdmin(deps, tier1api.AdminOptions{Token: cfg.AdminToken, TrustIAM: true}).Handle)
}
