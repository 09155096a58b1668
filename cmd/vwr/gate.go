package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/services/queue/gateapp"
)

// `vwr gate` puts the entry-token gate in front of a site in any language:
// a reverse proxy that refuses requests under the guarded prefixes without
// a valid entry token, exactly as the Go gate does, and forwards the rest.
// The deployable form is services/queue/cmd/gate (/gate in the Tier 2 image).

func init() {
	register(&command{
		name:    "gate",
		summary: "reverse proxy that checks entry tokens in front of any site (-upstream http://shop:8080)",
		run:     runGate,
	})
}

func runGate(ctx context.Context, inv invocation) int {
	cfg, err := gateapp.FromEnv(inv.Env)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr gate: %v\n", err)
		return exitUsage
	}
	fs := flag.NewFlagSet("vwr gate", flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	fs.StringVar(&cfg.Upstream, "upstream", cfg.Upstream, "the site to forward to, e.g. http://shop:8080 (GATE_UPSTREAM; required)")
	fs.StringVar(&cfg.Addr, "addr", orDefault(cfg.Addr, gateapp.DefaultAddr), "listen address (GATE_LISTEN_ADDR)")
	prefixes := fs.String("prefixes", strings.Join(cfg.Gate.Prefixes, ","), "comma-separated path prefixes that need an entry token (QUEUE_GATE_PREFIXES; default /api/seats/,/api/reservations/)")
	fs.StringVar(&cfg.Gate.UserHeader, "user-header", cfg.Gate.UserHeader, "header your own login sets; the token's uid must equal it (QUEUE_GATE_USER_HEADER)")
	fs.StringVar(&cfg.Gate.Deny, "deny", cfg.Gate.Deny, "how a refusal is answered: auto (302 for page loads, 403 JSON otherwise), json or redirect (QUEUE_GATE_DENY; default auto)")
	fs.StringVar(&cfg.Gate.RedirectTo, "redirect-to", cfg.Gate.RedirectTo, "the queue page refused visitors go to; {event} is the event id (QUEUE_GATE_REDIRECT_TO; default /vwr/queue.html?event={event})")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: vwr gate -upstream URL [flags]

Forwards every request to the upstream site, except that requests under the
guarded prefixes need a valid entry token (header x-queue-entry-token or
cookie urr-entry-token) for the event named after the prefix. The verified
visitor reaches the site as X-Queue-Entry-User and X-Queue-Entry-Event.
QUEUE_ENTRY_TOKEN_SECRET (the queue's) is required. docs/gate.md has more.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(inv.Args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(inv.Stderr, "vwr gate: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	cfg.Gate.Prefixes = nil
	for _, p := range strings.Split(*prefixes, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.Gate.Prefixes = append(cfg.Gate.Prefixes, p)
		}
	}
	log := applog.New(inv.Stderr, cfg.Log)
	p, err := gateapp.New(cfg, clock.System{}, log)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr gate: %v\n", err)
		return exitUsage
	}
	ln, err := p.Listen("-addr")
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr gate: %v\n", err)
		return exitError
	}
	fmt.Fprintf(inv.Stdout, "vwr gate: guarding %s in front of %s; serving on http://%s (Ctrl-C to stop)\n",
		strings.Join(p.Gate.Prefixes(), ","), cfg.Upstream, ln.Addr())
	if err := p.Serve(ctx, ln); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr gate: %v\n", err)
		return exitError
	}
	return exitOK
}
