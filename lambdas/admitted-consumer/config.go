package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/envconf"
)

// Config is the consumer's configuration, read by FromEnv. The TTL defaults
// belong to the store (dynamostore.New fills zero TTLs).
type Config struct {
	ProcessedTable string        `env:"VWR_ADMITTED_PROCESSED_TABLE"`
	StatsTable     string        `env:"VWR_ADMITTED_STATS_TABLE"`
	ProcessedTTL   time.Duration `env:"VWR_ADMITTED_PROCESSED_TTL"` // Go duration, default 168h
	StatsTTL       time.Duration `env:"VWR_ADMITTED_STATS_TTL"`     // Go duration, default 720h
	Log            applog.Config
}

// FromEnv reads the configuration from environ (nil: the process
// environment) and validates it.
func FromEnv(environ map[string]string) (Config, error) {
	var c Config
	if err := envconf.Parse(&c, environ); err != nil {
		return Config{}, err
	}
	c.Log = c.Log.WithDefaults()
	return c, c.validate()
}

func (c Config) validate() error {
	var errs []error
	if c.ProcessedTable == "" {
		errs = append(errs, errors.New("VWR_ADMITTED_PROCESSED_TABLE is required"))
	}
	if c.StatsTable == "" {
		errs = append(errs, errors.New("VWR_ADMITTED_STATS_TABLE is required"))
	}
	t := c.tables()
	// The claim must outlive every redelivery of its message, or a late
	// duplicate counts again. A message can wait out a consumer outage for
	// the queue's whole retention (4 days in template.yaml), which the 7-day
	// default covers; the 24h floor only catches unit slips such as "24m".
	if t.ProcessedTTL < 24*time.Hour {
		errs = append(errs, fmt.Errorf("VWR_ADMITTED_PROCESSED_TTL=%s must be at least 24h", t.ProcessedTTL))
	}
	if t.StatsTTL < time.Hour {
		errs = append(errs, fmt.Errorf("VWR_ADMITTED_STATS_TTL=%s must be at least 1h", t.StatsTTL))
	}
	if err := c.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// tables is the store's view of the configuration, with its defaults.
func (c Config) tables() dynamostore.Tables {
	return dynamostore.Tables{
		Processed:    c.ProcessedTable,
		Stats:        c.StatsTable,
		ProcessedTTL: c.ProcessedTTL,
		StatsTTL:     c.StatsTTL,
	}.WithDefaults()
}
