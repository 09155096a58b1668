// Package dynamotable is how vwr defines and creates its DynamoDB tables: a
// Spec per table (key schema, TTL attribute) and an idempotent Create that
// makes them on demand (PAY_PER_REQUEST), as template.yaml declares them.
// Each store declares its own Specs beside the key attributes it uses; tests
// and `vwr local` create tables through here, deployments through SAM.
package dynamotable

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// API is what Create needs from the DynamoDB client.
type API interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Key is one key attribute: its name and scalar type (S, N or B).
type Key struct {
	Name string
	Type types.ScalarAttributeType
}

// Spec is one table: its name, hash key, optional range key (zero Name: none)
// and optional TTL attribute (empty: no TTL).
type Spec struct {
	Name         string
	Hash         Key
	Range        Key
	TTLAttribute string
}

// Create creates every table that does not exist yet and turns TTL on where
// the spec names a TTL attribute. An existing table keeps its schema; its
// TTL is turned on if it is not already. It does not wait for a new table to
// become ACTIVE, which moto and LocalStack need not, and DynamoDB may.
func Create(ctx context.Context, db API, specs ...Spec) error {
	for _, sp := range specs {
		if err := sp.validate(); err != nil {
			return err
		}
		_, err := db.CreateTable(ctx, sp.input())
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("dynamotable: create %s: %w", sp.Name, err)
		}
		if sp.TTLAttribute == "" {
			continue
		}
		_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(sp.Name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(sp.TTLAttribute), Enabled: aws.Bool(true),
			},
		})
		if err != nil && !ttlAlreadyOn(err) {
			return fmt.Errorf("dynamotable: enable TTL on %s: %w", sp.Name, err)
		}
	}
	return nil
}

func (sp Spec) validate() error {
	if sp.Name == "" || sp.Hash.Name == "" || sp.Hash.Type == "" || (sp.Range.Name != "" && sp.Range.Type == "") {
		return fmt.Errorf("dynamotable: incomplete spec %+v", sp)
	}
	return nil
}

func (sp Spec) input() *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(sp.Name),
		BillingMode: types.BillingModePayPerRequest,
	}
	for _, k := range []struct {
		key Key
		typ types.KeyType
	}{{sp.Hash, types.KeyTypeHash}, {sp.Range, types.KeyTypeRange}} {
		if k.key.Name == "" {
			continue
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(k.key.Name), AttributeType: k.key.Type,
		})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{
			AttributeName: aws.String(k.key.Name), KeyType: k.typ,
		})
	}
	return in
}

// ttlAlreadyOn reports DynamoDB's answer to enabling TTL twice.
func ttlAlreadyOn(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(api.ErrorMessage()), "already enabled")
}
