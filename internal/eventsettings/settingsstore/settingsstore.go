// Package settingsstore opens the event settings store a deployment names
// in its environment: the backend Tier 1 runs on (VWR_TIER1_STORE and the
// variables of the store it names), which Tier 2 reads its settings and
// ledger from. It links neither tier, so bin/queue can import it.
package settingsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/vwr-go/vwr/internal/eventsettings"
	"github.com/vwr-go/vwr/internal/eventsettings/dynamostore"
	"github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/redisconn"
)

// Store kinds selected by VWR_TIER1_STORE.
const (
	DynamoDB = "dynamodb"
	Redis    = "redis"
)

// Config selects the store. Zero fields take the defaults: DynamoDB, with
// Tier 1's table names. The variables are Tier 1's, which selects its own
// store with the same Config (tier1store.Config).
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

// Dynamo is the DynamoDB tables' configuration.
func (c Config) Dynamo() dynamostore.Config {
	return dynamostore.Config{EventsTable: c.EventsTable, PositionsTable: c.PositionsTable}.WithDefaults()
}

// Validate checks a defaulted Config; messages name the variable.
func (c Config) Validate() error {
	switch c.Store {
	case DynamoDB:
		if d := c.Dynamo(); d.EventsTable == d.PositionsTable {
			return errors.New("VWR_TIER1_EVENTS_TABLE and VWR_TIER1_POSITIONS_TABLE must differ")
		}
	case Redis:
	default:
		return fmt.Errorf("VWR_TIER1_STORE must be %q or %q, not %q", DynamoDB, Redis, c.Store)
	}
	return nil
}

// Open builds the store c names. The AWS SDK takes region, credentials and
// AWS_ENDPOINT_URL from its own chain. close releases the connections.
func Open(ctx context.Context, c Config) (store eventsettings.StoreLedger, close func() error, err error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	if c.Store == Redis {
		if c.RedisURL == "" {
			return nil, nil, errors.New("VWR_TIER1_REDIS_URL is required when VWR_TIER1_STORE=redis")
		}
		// One server, TLS, or a Cluster (redis+cluster://…): every script
		// of the store touches one slot.
		rdb, err := redisconn.Vars{URL: "VWR_TIER1_REDIS_URL"}.Open(c.RedisURL, nil)
		if err != nil {
			return nil, nil, err
		}
		return redisstore.New(rdb, ""), rdb.Close, nil
	}
	ds, err := dynamostore.Open(ctx, c.Dynamo())
	if err != nil {
		return nil, nil, err
	}
	return ds, func() error { return nil }, nil
}
