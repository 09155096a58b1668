// Package tier1store chooses and opens Tier 1's store from the environment
// (VWR_TIER1_STORE and the variables of the store it names). Tier 1's
// Lambdas open it through tier1app, and `vwr local` directly. It links
// neither Lambda nor HTTP code. Tier 2 reads its event settings from the
// same backend through internal/eventsettings/settingsstore, which reads
// the same variables and links nothing of Tier 1.
package tier1store

import (
	"context"
	"errors"

	"github.com/vwr-go/vwr/internal/eventsettings/settingsstore"
	"github.com/vwr-go/vwr/internal/redisconn"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
)

// Store kinds selected by VWR_TIER1_STORE.
const (
	DynamoDB = settingsstore.DynamoDB
	Redis    = settingsstore.Redis
)

// Config selects the store: the same variables choose the backend Tier 2's
// event settings live on, so the type is theirs. Zero fields take the
// defaults: DynamoDB, with dynamostore's table names.
type Config = settingsstore.Config

// dynamo is the DynamoDB store's table configuration.
func dynamo(c Config) dynamostore.Config {
	d := c.Dynamo()
	return dynamostore.Config{EventsTable: d.EventsTable, PositionsTable: d.PositionsTable}
}

// Store is the port every Tier 1 store implements.
type Store interface {
	tier1.Store
}

var (
	_ Store = (*dynamostore.Store)(nil)
	_ Store = (*redisstore.Store)(nil)
)

// Open builds the store c names. The AWS SDK takes region, credentials and
// AWS_ENDPOINT_URL from its own chain. close releases the connections.
func Open(ctx context.Context, c Config) (store Store, close func() error, err error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	switch c.Store {
	case Redis:
		if c.RedisURL == "" {
			return nil, nil, errors.New("VWR_TIER1_REDIS_URL is required when VWR_TIER1_STORE=redis")
		}
		// One server, TLS, or a Cluster (redis+cluster://…): every Tier 1
		// script touches one slot.
		rdb, err := redisconn.Vars{URL: "VWR_TIER1_REDIS_URL"}.Open(c.RedisURL, nil)
		if err != nil {
			return nil, nil, err
		}
		return redisstore.New(rdb), rdb.Close, nil
	default:
		ds, err := dynamostore.New(ctx, dynamo(c))
		if err != nil {
			return nil, nil, err
		}
		return ds, func() error { return nil }, nil
	}
}
