// Command gate is the entry-token gate as a reverse proxy, for sites not
// written in Go: configured from the environment (services/queue/gateapp;
// GATE_UPSTREAM and QUEUE_ENTRY_TOKEN_SECRET are required), it stops
// gracefully on SIGTERM or SIGINT. The Tier 2 image ships it as /gate.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/services/queue/gateapp"
)

func main() {
	cfg, err := gateapp.FromEnv(envconf.Environ())
	log := applog.New(os.Stderr, cfg.Log)
	slog.SetDefault(log)
	if err != nil {
		fail(log, err)
	}
	p, err := gateapp.New(cfg, clock.System{}, log)
	if err != nil {
		fail(log, err)
	}
	ln, err := p.Listen("GATE_LISTEN_ADDR")
	if err != nil {
		log.Error("cannot listen", "err", err.Error())
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log.Info("gate serving", "addr", ln.Addr().String(), "upstream", p.Config.Upstream, "prefixes", strings.Join(p.Gate.Prefixes(), ","))
	if err := p.Serve(ctx, ln); err != nil {
		log.Error("gate stopped", "err", err.Error())
		os.Exit(1)
	}
}

func fail(log *slog.Logger, err error) {
	log.Error("invalid configuration", "err", err.Error())
	os.Exit(2)
}
