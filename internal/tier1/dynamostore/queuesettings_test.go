package dynamostore_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/services/queue/configtest"
)

// The events table is a queue.ConfigStore, and the positions table holds
// its queue.Ledger (moto).
func TestQueueConfigStoreConformance(t *testing.T) {
	t.Parallel()
	configtest.Run(t, func(t *testing.T) configtest.Harness {
		s := newStore(t, dynamostore.Config{})
		return configtest.Harness{Store: s, Lose: func(t *testing.T) { emptyTables(t, s) }}
	})
}

// emptyTables deletes every item of the store's two tables, as a table
// restored empty would hold.
func emptyTables(t *testing.T, s *dynamostore.Store) {
	t.Helper()
	ctx := context.Background()
	db := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(testenv.DynamoDB(t)), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", ""),
	})
	for table, key := range map[string][]string{
		s.Config().EventsTable:    {"pk", "sk"},
		s.Config().PositionsTable: {"requestId"},
	} {
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.LastEvaluatedKey) > 0 {
			t.Fatalf("%s holds more than one scan page", table)
		}
		for _, it := range out.Items {
			k := map[string]types.AttributeValue{}
			for _, name := range key {
				k[name] = it[name]
			}
			if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: k}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
