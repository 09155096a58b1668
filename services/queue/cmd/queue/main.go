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

	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/app"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(log)

	cfg, err := app.FromEnv()
	if err != nil {
		fail(log, err)
	}
	a, err := app.Open(cfg, app.Options{Notifier: queue.NopNotifier{}, Logger: log})
	if err != nil {
		fail(log, err)
	}
	defer a.Close()
	for _, w := range a.Warnings() {
		log.Warn(w)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := a.Run(ctx); err != nil {
		log.Error("queue stopped", "err", err.Error())
		os.Exit(1)
	}
}

func fail(log *slog.Logger, err error) {
	log.Error("invalid configuration", "err", err.Error())
	os.Exit(2)
}
