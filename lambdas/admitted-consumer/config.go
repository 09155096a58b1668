package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/admitted/dynamostore"
)

// Config is the consumer's configuration.
type Config struct {
	ProcessedTable string        // VWR_ADMITTED_PROCESSED_TABLE
	StatsTable     string        // VWR_ADMITTED_STATS_TABLE
	ProcessedTTL   time.Duration // VWR_ADMITTED_PROCESSED_TTL (Go duration, default 168h)
	StatsTTL       time.Duration // VWR_ADMITTED_STATS_TTL (Go duration, default 720h)
	Endpoint       string        // AWS_ENDPOINT_URL: moto or LocalStack instead of AWS
}

// FromEnv reads the configuration, applies defaults and validates it.
func FromEnv() (Config, error) {
	var errs []error
	dur := func(name string) time.Duration {
		v := strings.TrimSpace(os.Getenv(name))
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a duration (e.g. 168h)", name, v))
		}
		return d
	}
	c := Config{
		ProcessedTable: strings.TrimSpace(os.Getenv("VWR_ADMITTED_PROCESSED_TABLE")),
		StatsTable:     strings.TrimSpace(os.Getenv("VWR_ADMITTED_STATS_TABLE")),
		ProcessedTTL:   dur("VWR_ADMITTED_PROCESSED_TTL"),
		StatsTTL:       dur("VWR_ADMITTED_STATS_TTL"),
		Endpoint:       strings.TrimSpace(os.Getenv("AWS_ENDPOINT_URL")),
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	c = c.WithDefaults()
	return c, c.validate()
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.ProcessedTTL == 0 {
		c.ProcessedTTL = dynamostore.DefaultProcessedTTL
	}
	if c.StatsTTL == 0 {
		c.StatsTTL = dynamostore.DefaultStatsTTL
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.ProcessedTable == "" {
		errs = append(errs, errors.New("VWR_ADMITTED_PROCESSED_TABLE is required"))
	}
	if c.StatsTable == "" {
		errs = append(errs, errors.New("VWR_ADMITTED_STATS_TABLE is required"))
	}
	// The claim must outlive every redelivery of its message, or a late
	// duplicate counts again. A message can wait out a consumer outage for
	// the queue's whole retention (4 days in template.yaml), which the 7-day
	// default covers; the 24h floor only catches unit slips such as "24m".
	if c.ProcessedTTL < 24*time.Hour {
		errs = append(errs, fmt.Errorf("VWR_ADMITTED_PROCESSED_TTL=%s must be at least 24h", c.ProcessedTTL))
	}
	if c.StatsTTL < time.Hour {
		errs = append(errs, fmt.Errorf("VWR_ADMITTED_STATS_TTL=%s must be at least 1h", c.StatsTTL))
	}
	return errors.Join(errs...)
}

// tables is the store's view of the configuration.
func (c Config) tables() dynamostore.Tables {
	return dynamostore.Tables{
		Processed:    c.ProcessedTable,
		Stats:        c.StatsTable,
		ProcessedTTL: c.ProcessedTTL,
		StatsTTL:     c.StatsTTL,
	}
}
