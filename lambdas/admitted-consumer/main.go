// Command admitted-consumer is the Lambda that consumes the "admitted" SQS
// FIFO queue and counts each admission exactly once per event and minute.
// This file is wiring only; the handler is internal/admitted.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/clock"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := FromEnv()
	if err != nil {
		log.Error("admitted-consumer: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("admitted-consumer: load AWS config", "err", err.Error())
		os.Exit(1)
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	store, err := dynamostore.New(db, cfg.tables(), clock.System{})
	if err != nil {
		log.Error("admitted-consumer: store", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(admitted.NewHandler(store, log).Handle)
}
