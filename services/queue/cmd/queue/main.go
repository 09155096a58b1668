// Command queue is the deployable Tier 2 queue: the JSON API, the admission
// worker and the stale cleanup in one process, configured from the
// environment (see services/queue/app). It needs REDIS_URL and
// QUEUE_ENTRY_TOKEN_SECRET and stops gracefully on SIGTERM or SIGINT.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/notify"
	"github.com/vwr-go/vwr/internal/redisconn"
	"github.com/vwr-go/vwr/services/queue/app"
)

// notifyFlushTimeout bounds the SQS flush on shutdown.
const notifyFlushTimeout = 5 * time.Second

func main() {
	environ := envconf.Environ()
	cfg, err := app.FromEnv(environ)
	log := applog.New(os.Stderr, cfg.Log)
	slog.SetDefault(log)
	redisconn.UseLogger(log)
	if err != nil {
		fail(log, err)
	}
	// SQS "admitted" notifications (internal/notify): a no-op unless SQS_ENABLED=true.
	ncfg, err := notify.FromEnv(environ)
	if err != nil {
		fail(log, err)
	}
	notifier, err := notify.Open(context.Background(), ncfg, notify.Options{Logger: log})
	if err != nil {
		fail(log, err)
	}
	a, err := app.Open(cfg, app.Options{Notifier: notifier, Logger: log})
	if err != nil {
		fail(log, err)
	}
	defer a.Close()
	if err := notifier.Register(a.Metrics.Registry()); err != nil {
		fail(log, err)
	}
	for _, w := range a.Warnings() {
		log.Warn(w)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	runErr := a.Run(ctx)
	// Run returns after the worker stopped, so every admission is buffered by now.
	flushCtx, cancel := context.WithTimeout(context.Background(), notifyFlushTimeout)
	if err := notifier.Close(flushCtx); err != nil {
		log.Warn("sqs notifications not fully flushed", "err", err.Error())
	}
	cancel()
	if runErr != nil {
		log.Error("queue stopped", "err", runErr.Error())
		os.Exit(1)
	}
}

func fail(log *slog.Logger, err error) {
	log.Error("invalid configuration", "err", err.Error())
	os.Exit(2)
}
