package dynamostore

import (
	"errors"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"

	esdynamo "github.com/vwr-go/vwr/internal/eventsettings/dynamostore"
)

// Config names the tables and tunes the client.
type Config struct {
	EventsTable    string // event config items + counter shards + the active-events registry
	PositionsTable string // position records + idempotency records (TTL attribute "ttl")
	// Endpoint overrides AWS_ENDPOINT_URL for this client only (parallel
	// tests against moto). Empty: the SDK's own resolution, which honours
	// AWS_ENDPOINT_URL.
	Endpoint string
	// Region overrides AWS_REGION; empty keeps the SDK's resolution.
	Region string
	// Credentials replaces the SDK's credential chain (tests use static ones).
	Credentials aws.CredentialsProvider
	// HTTPClient replaces the SDK's HTTP client (tests serialize requests to moto).
	HTTPClient aws.HTTPClient
	// Retryer replaces the SDK's retryer (tests shorten the backoff).
	Retryer func() aws.Retryer
	// APIOptions are extra SDK middlewares, e.g. (*Counter).Register.
	APIOptions []func(*middleware.Stack) error
}

// Defaults: the tables Tier 2's event settings share
// (internal/eventsettings/dynamostore), so the names live there.
const (
	DefaultEventsTable    = esdynamo.DefaultEventsTable
	DefaultPositionsTable = esdynamo.DefaultPositionsTable
)

// FromEnv reads VWR_TIER1_EVENTS_TABLE and VWR_TIER1_POSITIONS_TABLE.
func FromEnv() (Config, error) {
	c := Config{
		EventsTable:    os.Getenv("VWR_TIER1_EVENTS_TABLE"),
		PositionsTable: os.Getenv("VWR_TIER1_POSITIONS_TABLE"),
	}.WithDefaults()
	return c, c.validate()
}

// WithDefaults fills empty table names.
func (c Config) WithDefaults() Config {
	if c.EventsTable == "" {
		c.EventsTable = DefaultEventsTable
	}
	if c.PositionsTable == "" {
		c.PositionsTable = DefaultPositionsTable
	}
	return c
}

func (c Config) validate() error {
	if c.EventsTable == c.PositionsTable {
		return errors.New("VWR_TIER1_EVENTS_TABLE and VWR_TIER1_POSITIONS_TABLE must differ")
	}
	return nil
}
