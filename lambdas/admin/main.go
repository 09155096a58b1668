// Command admin is the Tier 1 operator Lambda behind /vwr/admin/…. The routes
// use AWS_IAM auth, so the handler trusts API Gateway's IAM authorizer
// context; VWR_ADMIN_TOKEN, when set, also admits a bearer token. With
// VWR_ADMITTED_STATS_TABLE the status also shows the queue's admissions the
// SQS consumer counted. Wiring only; the handler is tier1api.Admin.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

func main() {
	ctx := context.Background()
	deps, cfg, err := tier1api.Boot(ctx, "admin", false)
	if err != nil {
		os.Exit(1)
	}
	if deps.QueueAdmissions, err = tier1api.OpenQueueAdmissions(ctx, cfg); err != nil {
		slog.Error("tier1 queue admissions", "err", err)
		os.Exit(1)
	}
	lambda.Start(tier1api.NewAdmin(deps, tier1api.AdminOptions{Token: cfg.AdminToken, TrustIAM: true}).Handle)
}
