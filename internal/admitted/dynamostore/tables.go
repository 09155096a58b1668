package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/dynamotable"
)

// Specs are the consumer's two tables as template.yaml declares them: the
// processed table keyed by AttrID, the stats table by AttrEventID and
// AttrMinute, both expiring through AttrTTL.
func (t Tables) Specs() []dynamotable.Spec {
	return []dynamotable.Spec{
		{
			Name:         t.Processed,
			Hash:         dynamotable.Key{Name: AttrID, Type: types.ScalarAttributeTypeS},
			TTLAttribute: AttrTTL,
		},
		{
			Name:         t.Stats,
			Hash:         dynamotable.Key{Name: AttrEventID, Type: types.ScalarAttributeTypeS},
			Range:        dynamotable.Key{Name: AttrMinute, Type: types.ScalarAttributeTypeN},
			TTLAttribute: AttrTTL,
		},
	}
}

// CreateTables creates both tables on demand with TTL on (tests and local
// runs; deployments get them from SAM). An existing table keeps its schema.
func CreateTables(ctx context.Context, db dynamotable.API, t Tables) error {
	if err := dynamotable.Create(ctx, db, t.Specs()...); err != nil {
		return fmt.Errorf("dynamostore: %w", err)
	}
	return nil
}
