package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/applog"
)

// QuietEvery is how often a repeated go-redis line is written while Redis
// stays unreachable (its pool reports every failed dial).
const QuietEvery = 30 * time.Second

// UseLogger sends go-redis's own log lines (failed dials, pool warnings)
// to log, as warnings of component "go-redis" written at most once per
// QuietEvery each, instead of go-redis's plain-text logger on stderr. The
// setting is process-wide: binaries call it once at start.
func UseLogger(log *slog.Logger) {
	redis.SetLogger(&goRedisLogger{log: applog.Quiet(log.With("component", "go-redis"), QuietEvery)})
}

type goRedisLogger struct{ log *slog.Logger }

func (l *goRedisLogger) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimPrefix(strings.TrimSpace(fmt.Sprintf(format, v...)), "redis: ")
	l.log.WarnContext(ctx, msg)
}
