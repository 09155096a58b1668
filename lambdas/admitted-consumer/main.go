// Command admitted-consumer is the Lambda that consumes the "admitted" SQS
// FIFO queue and counts each admission exactly once per event and minute.
// Wiring only: configuration, the DynamoDB store, the handler
// (internal/admitted/consumer), lambda.Start.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/vwr-go/vwr/internal/admitted/consumer"
	"github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
)

func main() {
	cfg, err := FromEnv(nil)
	log := applog.New(os.Stdout, cfg.Log)
	if err != nil {
		log.Error("admitted-consumer: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	// The SDK's chain reads region, credentials and AWS_ENDPOINT_URL.
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("admitted-consumer: load AWS config", "err", err.Error())
		os.Exit(1)
	}
	store, err := dynamostore.New(dynamodb.NewFromConfig(awsCfg), cfg.tables(), clock.System{})
	if err != nil {
		log.Error("admitted-consumer: store", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(consumer.NewHandler(store, log).Handle)
}
