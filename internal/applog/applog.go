// Package applog builds the JSON logger every vwr binary writes and decides
// what a served request costs in log volume. A healthy request is logged at
// debug only: at 30,000 checks/s one INFO line each would be about 9 MB/s of
// logs, more than the service itself costs. Info carries slow requests,
// warn client errors worth noticing is not a thing here: 4xx stay at debug,
// and 5xx are errors.
package applog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/envconf"
)

// Config is the logging part of every binary's configuration.
type Config struct {
	// Level is LOG_LEVEL: debug, info, warn or error. Default info.
	Level string `env:"LOG_LEVEL"`
	// Slow is LOG_SLOW_MS: a request slower than this is logged at info.
	// Default 500 ms.
	Slow envconf.Millis `env:"LOG_SLOW_MS"`
}

// Defaults.
const (
	DefaultLevel = "info"
	DefaultSlow  = 500 * time.Millisecond
)

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Level == "" {
		c.Level = DefaultLevel
	}
	if c.Slow == 0 {
		c.Slow = envconf.Millis(DefaultSlow)
	}
	return c
}

// Validate checks a defaulted Config; messages name the variable.
func (c Config) Validate() error {
	if _, err := level(c.Level); err != nil {
		return err
	}
	return nil
}

func level(s string) (slog.Level, error) {
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug":
		l = slog.LevelDebug
	case "info", "":
		l = slog.LevelInfo
	case "warn", "warning":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		return 0, fmt.Errorf("LOG_LEVEL must be debug, info, warn or error, not %q", s)
	}
	return l, nil
}

// New returns a JSON logger on w at the configured level (info when the
// level does not parse; Validate reports that).
func New(w io.Writer, c Config) *slog.Logger {
	l, _ := level(c.WithDefaults().Level)
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// RequestLevel is the level and message of a served request's log line: error for
// a 5xx, info ("slow request") when it took at least the slow threshold,
// debug otherwise. Callers check Logger.Enabled with it before building the
// line, so a healthy request costs no allocation for logging.
func (c Config) RequestLevel(status int, elapsed time.Duration) (slog.Level, string) {
	switch {
	case status >= 500:
		return slog.LevelError, "request"
	case elapsed >= c.WithDefaults().Slow.D():
		return slog.LevelInfo, "slow request"
	}
	return slog.LevelDebug, "request"
}

// Request logs one served request with stable keys (attrs are the route's
// own: route, event, uid, code…; status, ms and the cause are added), at the
// level RequestLevel picks.
func (c Config) Request(ctx context.Context, log *slog.Logger, status int, elapsed time.Duration, cause error, attrs ...slog.Attr) {
	lvl, msg := c.RequestLevel(status, elapsed)
	if !log.Enabled(ctx, lvl) {
		return
	}
	attrs = append(attrs, slog.Int("status", status), slog.Float64("ms", float64(elapsed.Microseconds())/1000))
	if cause != nil {
		attrs = append(attrs, slog.String("err", cause.Error()))
	}
	log.LogAttrs(ctx, lvl, msg, attrs...)
}
