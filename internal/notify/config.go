package notify

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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

// Config is the publisher's configuration. The zero value is "off".
type Config struct {
	Enabled      bool          // SQS_ENABLED: publish at all (default false)
	QueueURL     string        // SQS_QUEUE_URL: the …-admitted.fifo queue
	Endpoint     string        // AWS_ENDPOINT_URL: moto or LocalStack instead of AWS
	Region       string        // AWS_REGION: empty lets the SDK decide
	BufferSize   int           // SQS_BUFFER_SIZE: admissions held in memory before dropping
	SendTimeout  time.Duration // SQS_SEND_TIMEOUT_MS: bound on one SendMessageBatch call
	MaxAttempts  int           // SQS_MAX_ATTEMPTS: tries per batch, first one included
	RetryBackoff time.Duration // SQS_RETRY_BACKOFF_MS: first retry delay, doubled each time
}

// FromEnv reads the SQS_* variables (and AWS_ENDPOINT_URL, AWS_REGION) and
// applies defaults. Open validates.
func FromEnv() (Config, error) { return FromGetenv(os.Getenv) }

// FromGetenv is FromEnv reading through getenv, for callers (vwr local, tests)
// that carry their own environment.
func FromGetenv(getenv func(string) string) (Config, error) {
	var c Config
	var errs []error
	if v := strings.TrimSpace(getenv("SQS_ENABLED")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("notify: SQS_ENABLED=%q is not a boolean", v))
		}
		c.Enabled = b
	}
	c.QueueURL = strings.TrimSpace(getenv("SQS_QUEUE_URL"))
	c.Endpoint = strings.TrimSpace(getenv("AWS_ENDPOINT_URL"))
	c.Region = strings.TrimSpace(getenv("AWS_REGION"))
	envInt := func(name string) int {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("notify: %s=%q must be a positive integer", name, v))
			return 0
		}
		return n
	}
	c.BufferSize = envInt("SQS_BUFFER_SIZE")
	c.MaxAttempts = envInt("SQS_MAX_ATTEMPTS")
	c.SendTimeout = time.Duration(envInt("SQS_SEND_TIMEOUT_MS")) * time.Millisecond
	c.RetryBackoff = time.Duration(envInt("SQS_RETRY_BACKOFF_MS")) * time.Millisecond
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return c.WithDefaults(), nil
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.BufferSize == 0 {
		c.BufferSize = DefaultBufferSize
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = DefaultSendTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
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
	case c.SendTimeout < 10*time.Millisecond:
		return fmt.Errorf("notify: SQS_SEND_TIMEOUT_MS=%d must be at least 10", c.SendTimeout.Milliseconds())
	case c.MaxAttempts < 1 || c.MaxAttempts > 10:
		return fmt.Errorf("notify: SQS_MAX_ATTEMPTS=%d must be within 1…10", c.MaxAttempts)
	case c.RetryBackoff < time.Millisecond:
		return fmt.Errorf("notify: SQS_RETRY_BACKOFF_MS=%d must be at least 1", c.RetryBackoff.Milliseconds())
	}
	return nil
}
