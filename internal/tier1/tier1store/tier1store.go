// Package tier1store chooses and opens Tier 1's store from the environment
// (VWR_TIER1_STORE and the variables of the store it names). Tier 1's
// Lambdas open it through tier1app; the Tier 2 binary opens the same store
// as its durable queue.ConfigStore. It links neither Lambda nor HTTP code,
// so bin/queue can import it.
package tier1store

import (
	"context"
	"errors"
	"fmt"

	"github.com/vwr-go/vwr/internal/redisconn"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/services/queue"
)

// Store kinds selected by VWR_TIER1_STORE.
const (
	DynamoDB = "dynamodb"
	Redis    = "redis"
)

// Config selects the store. Zero fields take the defaults: DynamoDB, with
// dynamostore's table names.
type Config struct {
	Store          string `env:"VWR_TIER1_STORE"`     // dynamodb (default) or redis
	RedisURL       string `env:"VWR_TIER1_REDIS_URL"` // required when Store is redis
	EventsTable    string `env:"VWR_TIER1_EVENTS_TABLE"`
	PositionsTable string `env:"VWR_TIER1_POSITIONS_TABLE"`
}

// WithDefaults fills the store kind.
func (c Config) WithDefaults() Config {
	if c.Store == "" {
		c.Store = DynamoDB
	}
	return c
}

// Dynamo is the DynamoDB store's table configuration.
func (c Config) Dynamo() dynamostore.Config {
	return dynamostore.Config{EventsTable: c.EventsTable, PositionsTable: c.PositionsTable}.WithDefaults()
}

// Validate checks a defaulted Config; messages name the variable.
func (c Config) Validate() error {
	switch c.Store {
	case DynamoDB:
		d := c.Dynamo()
		if d.EventsTable == d.PositionsTable {
			return errors.New("VWR_TIER1_EVENTS_TABLE and VWR_TIER1_POSITIONS_TABLE must differ")
		}
	case Redis:
	default:
		return fmt.Errorf("VWR_TIER1_STORE must be %q or %q, not %q", DynamoDB, Redis, c.Store)
	}
	return nil
}

// Store is both ports every Tier 1 store implements.
type Store interface {
	tier1.Store
	queue.ConfigStore
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
		ds, err := dynamostore.New(ctx, c.Dynamo())
		if err != nil {
			return nil, nil, err
		}
		return ds, func() error { return nil }, nil
	}
}
