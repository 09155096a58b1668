package notify

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/envconf"
)

// Defaults of the publisher's settings.
const (
	DefaultBufferSize   = 10_000
	DefaultSendTimeout  = 2 * time.Second
	DefaultMaxAttempts  = 4
	DefaultRetryBackoff = 100 * time.Millisecond
	// MaxBatch is SQS's limit of entries per SendMessageBatch.
	MaxBatch = 10
)

// Config is the publisher's configuration, read by FromEnv. The zero value
// is "off". The SQS client takes its region and endpoint (AWS_REGION,
// AWS_ENDPOINT_URL for moto or LocalStack) from the AWS SDK's own chain.
type Config struct {
	Enabled      bool             `env:"SQS_ENABLED"`          // publish at all (default false)
	QueueURL     string           `env:"SQS_QUEUE_URL"`        // the …-admitted.fifo queue
	BufferSize   envconf.Positive `env:"SQS_BUFFER_SIZE"`      // admissions held in memory before dropping
	SendTimeout  envconf.Millis   `env:"SQS_SEND_TIMEOUT_MS"`  // bound on one SendMessageBatch call
	MaxAttempts  envconf.Positive `env:"SQS_MAX_ATTEMPTS"`     // tries per batch, first one included
	RetryBackoff envconf.Millis   `env:"SQS_RETRY_BACKOFF_MS"` // first retry delay, doubled each time
}

// FromEnv reads the SQS_* variables from environ (nil: the process
// environment) and applies defaults. Open validates.
func FromEnv(environ map[string]string) (Config, error) {
	var c Config
	if err := envconf.Parse(&c, environ); err != nil {
		return Config{}, fmt.Errorf("notify: %w", err)
	}
	return c.WithDefaults(), nil
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.BufferSize == 0 {
		c.BufferSize = DefaultBufferSize
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = envconf.Millis(DefaultSendTimeout)
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = envconf.Millis(DefaultRetryBackoff)
	}
	return c
}

// validate reports the first setting that cannot work, naming its variable.
// A disabled config is always valid.
func (c Config) validate() error {
	if !c.Enabled {
		return nil
	}
	switch {
	case c.QueueURL == "":
		return errors.New("notify: SQS_QUEUE_URL is required when SQS_ENABLED=true")
	case !strings.HasSuffix(c.QueueURL, ".fifo"):
		return fmt.Errorf("notify: SQS_QUEUE_URL=%q must name a FIFO queue (…-admitted.fifo)", c.QueueURL)
	case c.BufferSize < 1 || c.BufferSize > 1_000_000:
		return fmt.Errorf("notify: SQS_BUFFER_SIZE=%d must be within 1…1000000", c.BufferSize)
	case c.SendTimeout.D() < 10*time.Millisecond:
		return fmt.Errorf("notify: SQS_SEND_TIMEOUT_MS=%d must be at least 10", c.SendTimeout.D().Milliseconds())
	case c.MaxAttempts < 1 || c.MaxAttempts > 10:
		return fmt.Errorf("notify: SQS_MAX_ATTEMPTS=%d must be within 1…10", c.MaxAttempts)
	case c.RetryBackoff.D() < time.Millisecond:
		return fmt.Errorf("notify: SQS_RETRY_BACKOFF_MS=%d must be at least 1", c.RetryBackoff.D().Milliseconds())
	}
	return nil
}
