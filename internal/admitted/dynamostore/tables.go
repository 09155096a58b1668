package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableAPI is what CreateTables needs from the DynamoDB client.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTables creates both tables on demand (pay per request) with TTL on,
// as template.yaml declares them. Tests and local runs use it; an existing
// table is left as it is.
func CreateTables(ctx context.Context, db TableAPI, t Tables) error {
	specs := []struct {
		name  string
		attrs []types.AttributeDefinition
		keys  []types.KeySchemaElement
	}{
		{
			name:  t.Processed,
			attrs: []types.AttributeDefinition{{AttributeName: aws.String(AttrID), AttributeType: types.ScalarAttributeTypeS}},
			keys:  []types.KeySchemaElement{{AttributeName: aws.String(AttrID), KeyType: types.KeyTypeHash}},
		},
		{
			name: t.Stats,
			attrs: []types.AttributeDefinition{
				{AttributeName: aws.String(AttrEventID), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String(AttrMinute), AttributeType: types.ScalarAttributeTypeN},
			},
			keys: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrEventID), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrMinute), KeyType: types.KeyTypeRange},
			},
		},
	}
	for _, sp := range specs {
		_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(sp.name),
			AttributeDefinitions: sp.attrs,
			KeySchema:            sp.keys,
			BillingMode:          types.BillingModePayPerRequest,
		})
		var inUse *types.ResourceInUseException
		if errors.As(err, &inUse) {
			continue
		}
		if err != nil {
			return fmt.Errorf("dynamostore: create table %s: %w", sp.name, err)
		}
		_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(sp.name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(AttrTTL),
				Enabled:       aws.Bool(true),
			},
		})
		if err != nil {
			return fmt.Errorf("dynamostore: enable TTL on %s: %w", sp.name, err)
		}
	}
	return nil
}
