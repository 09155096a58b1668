// Command admin is the Tier 1 operator Lambda behind /vwr/admin/…. The routes
// use AWS_IAM auth, so the handler trusts the IAM caller API Gateway vouches
// for; VWR_ADMIN_TOKEN, when set, also admits a bearer token. With
// VWR_ADMITTED_STATS_TABLE the status also shows the queue's admissions the
// SQS consumer counted. Wiring only.
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
	ctx := context.Background()
	fn, err := tier1app.Boot(ctx, "admin", tier1app.NoPassMinting)
	if err != nil {
		os.Exit(1)
	}
	defer fn.Close()
	if fn.Deps.QueueAdmissions, err = tier1app.OpenQueueAdmissions(ctx, fn.Config); err != nil {
		fn.Log.Error("tier1 queue admissions", "err", err)
		os.Exit(1)
	}
	admin := tier1api.AdminOptions{Token: fn.Config.AdminToken, Trusted: tier1app.IAMCaller}
	h := tier1api.New(fn.Deps, admin).Handler(tier1api.AdminRoutes...)
	lambda.Start(httpadapter.NewV2(h).ProxyWithContext)
}
