// Package applog builds the logger every vwr binary writes (JSON, or text
// on a terminal) and decides what a served request costs in log volume. A
// healthy request is logged at debug only: at 30,000 checks/s one INFO line
// each would be about 9 MB/s of logs, more than the service itself costs.
// Info carries slow requests and state changes; 4xx stay at debug, 5xx are
// errors. Background failures that repeat while a dependency is down are
// written once per pause (Quiet).
package applog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
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
	// Format is LOG_FORMAT: json, text, or auto (the default): text when
	// the log goes to a terminal, JSON otherwise.
	Format string `env:"LOG_FORMAT"`
}

// Log formats.
const (
	FormatAuto = "auto"
	FormatJSON = "json"
	FormatText = "text"
)

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
	if c.Format == "" {
		c.Format = FormatAuto
	}
	return c
}

// Validate checks a defaulted Config; messages name the variable.
func (c Config) Validate() error {
	if _, err := level(c.Level); err != nil {
		return err
	}
	switch strings.ToLower(c.Format) {
	case "", FormatAuto, FormatJSON, FormatText:
	default:
		return fmt.Errorf("LOG_FORMAT must be auto, json or text, not %q", c.Format)
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

// New returns a logger on w at the configured level (info when the level
// does not parse; Validate reports that): JSON, or text when w is a
// terminal and LOG_FORMAT does not say otherwise. Every line a binary
// writes goes through it, go-redis's own included (redisconn.UseLogger).
func New(w io.Writer, c Config) *slog.Logger {
	c = c.WithDefaults()
	l, _ := level(c.Level)
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(c.Format) {
	case FormatText:
		return slog.New(slog.NewTextHandler(w, opts))
	case FormatAuto:
		if isTerminal(w) {
			return slog.New(slog.NewTextHandler(w, opts))
		}
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a character device (a terminal), not a
// file, pipe or log collector.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Quiet returns l, except that a warning or error repeating the same
// message from the same logger is written at most once per every; the next
// one written after that carries "repeated": how many were left out.
// Background loops that fail on every pass while a dependency is down log
// through it, so an outage costs a line per pause, not one per pass.
func Quiet(l *slog.Logger, every time.Duration) *slog.Logger {
	return slog.New(&quietHandler{next: l.Handler(), every: every, state: &quietState{seen: map[string]*quietEntry{}}})
}

type quietState struct {
	mu   sync.Mutex
	seen map[string]*quietEntry
}

type quietEntry struct {
	at      time.Time
	dropped int
}

type quietHandler struct {
	next  slog.Handler
	every time.Duration
	key   string // the logger's own attributes and groups
	state *quietState
}

func (h *quietHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	now := r.Time
	if now.IsZero() {
		now = time.Now()
	}
	k := h.key + "\x00" + r.Level.String() + "\x00" + r.Message
	h.state.mu.Lock()
	e := h.state.seen[k]
	if e != nil && now.Sub(e.at) < h.every {
		e.dropped++
		h.state.mu.Unlock()
		return nil
	}
	dropped := 0
	if e != nil {
		dropped = e.dropped
	}
	h.state.seen[k] = &quietEntry{at: now}
	h.state.mu.Unlock()
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", dropped))
	}
	return h.next.Handle(ctx, r)
}

func (h *quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(attrs)
	c.key = h.key + fmt.Sprint(attrs)
	return &c
}

func (h *quietHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	c.key = h.key + "/" + name
	return &c
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
