package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/console"
	"github.com/vwr-go/vwr/internal/envconf"
	vwrtoken "github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue/app"
)

// `vwr console` serves the operator console (internal/console) on
// loopback, in front of a deployment's admin APIs: it reads and steers the
// deployment with the operator's own credentials (SigV4 from the default
// AWS chain for Tier 1's IAM routes, the Tier 2 admin token from the
// environment), so the browser holds neither.

func init() {
	register(&command{
		name:    "console",
		summary: "the operator console in your browser: a deployment's sale live, and its controls",
		run:     runConsole,
	})
}

// consoleEnv is what `vwr console` reads from the environment, besides
// vwr admin's variables (adminEnv).
type consoleEnv struct {
	// Token signs the browser in; unset: a random one, printed in the URL.
	Token string `env:"VWR_CONSOLE_TOKEN"`
	// Allow lists client networks besides loopback (CIDRs).
	Allow []string `env:"VWR_CONSOLE_ALLOW"`
	// Hosts lists host names besides loopback the console answers at.
	Hosts []string `env:"VWR_CONSOLE_HOSTS"`
}

// defaultConsoleAddr is where `vwr console` listens.
const defaultConsoleAddr = "127.0.0.1:8090"

func runConsole(ctx context.Context, inv invocation) int {
	var env adminEnv
	var cenv consoleEnv
	if err := errors.Join(envconf.Parse(&env, inv.Env), envconf.Parse(&cenv, inv.Env)); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr console: %v\n", err)
		return exitUsage
	}
	fs := flag.NewFlagSet("vwr console", flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	addr := fs.String("addr", defaultConsoleAddr, "listen address (loopback unless -allow names other networks)")
	base := fs.String("url", orDefault(env.URL, defaultAdminURL), "the site's base URL: Tier 2 under /api/queue, Tier 1 under /vwr-api (VWR_URL)")
	tier1URL := fs.String("tier1-url", env.Tier1URL, "Tier 1's API itself, when it is not under <url>/vwr-api: on AWS the ApiUrl output, which SigV4 needs (VWR_TIER1_URL)")
	auth := fs.String("auth", "auto", "Tier 1: auto, bearer or sigv4 (auto: sigv4 for *.amazonaws.com)")
	allow := fs.String("allow", strings.Join(cenv.Allow, ","), "client networks besides loopback that may use the console, e.g. 10.0.0.0/8 (VWR_CONSOLE_ALLOW)")
	hosts := fs.String("host", strings.Join(cenv.Hosts, ","), "host names besides loopback and localhost the console answers at (VWR_CONSOLE_HOSTS)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprint(w, `usage: vwr console [flags]

Serves the operator console on `+defaultConsoleAddr+`: every event of a deployment
with both tiers live, and its controls. The console calls the admin APIs
itself with your credentials (SigV4 from the default AWS chain for Tier 1 on
AWS, QUEUE_ADMIN_TOKEN or VWR_ADMIN_TOKEN for Tier 2); the browser signs in
with a token printed at start (VWR_CONSOLE_TOKEN to choose it).

  vwr console -url https://tickets.example.com -tier1-url https://abc123.execute-api.ap-northeast-2.amazonaws.com

flags:
`)
		fs.PrintDefaults()
	}
	for _, a := range inv.Args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(inv.Stdout)
			fs.Usage()
			return exitOK
		}
	}
	if err := fs.Parse(inv.Args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(inv.Stderr, "vwr console: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	nets, err := parseNets(*allow)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr console: -allow: %v\n", err)
		return exitUsage
	}
	if !isLoopback(*addr) && len(nets) == 0 {
		fmt.Fprintf(inv.Stderr, "vwr console: -addr %s is not a loopback address: name the client networks that may use it with -allow (VWR_CONSOLE_ALLOW), or listen on 127.0.0.1\n", *addr)
		return exitUsage
	}
	t1, t2, err := tierRoots(*base, *tier1URL)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr console: %v\n", err)
		return exitUsage
	}
	authorize, note, err := consoleAuthorizer(ctx, t1, t2, *auth, env, inv.Env)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr console: %v\n", err)
		return exitUsage
	}
	token := cenv.Token
	if token == "" {
		token = vwrtoken.RandomSecret()
	}
	var logCfg applog.Config
	if err := envconf.Parse(&logCfg, inv.Env); err == nil {
		err = logCfg.WithDefaults().Validate()
	}
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr console: %v\n", err)
		return exitUsage
	}
	log := applog.New(inv.Stderr, logCfg)
	srv, err := console.New(ctx, console.Config{
		Tokens: []string{token}, Allow: nets, Hosts: splitList(*hosts),
		Upstream: &console.Upstream{Tier1: t1, Tier2: t2, Authorize: authorize},
		Site:     t2.String(),
		Logger:   log.With("component", "console"),
	})
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr console: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr console: listen %s: %v\n  Choose another address with -addr (e.g. -addr 127.0.0.1:8091).\n", *addr, err)
		return exitError
	}
	page := "http://" + browsable(ln.Addr().String()) + srv.Prefix()
	fmt.Fprintf(inv.Stdout, "vwr console: Tier 1 at %s (%s), Tier 2 at %s (bearer token)\n", t1, note, t2)
	if cenv.Token == "" {
		fmt.Fprintf(inv.Stdout, "vwr console: open %s#token=%s (Ctrl-C to stop)\n", page, token)
	} else {
		fmt.Fprintf(inv.Stdout, "vwr console: open %s and sign in with VWR_CONSOLE_TOKEN (Ctrl-C to stop)\n", page)
	}
	mux := http.NewServeMux()
	mux.Handle(srv.Prefix(), srv.Handler())
	mux.Handle("GET /{$}", http.RedirectHandler(srv.Prefix(), http.StatusFound))
	if err := app.Serve(ctx, ln, mux, log); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr console: %v\n", err)
		return exitError
	}
	return exitOK
}

// consoleAuthorizer is how the console adds the operator's credentials:
// Tier 2 always by bearer token, Tier 1 by bearer token or, for the
// deployed AWS_IAM routes, a SigV4 signature with credentials loaded once
// and checked now, so a missing one is said at start.
func consoleAuthorizer(ctx context.Context, t1u, t2u *url.URL, mode string, env adminEnv, environ map[string]string) (func(context.Context, int, *http.Request, []byte) error, string, error) {
	if mode == "auto" {
		mode = "bearer"
		if strings.HasSuffix(t1u.Hostname(), ".amazonaws.com") {
			mode = "sigv4"
		}
	}
	tok1, tok2 := env.Token, orDefault(env.QueueToken, env.Token)
	for _, c := range []struct {
		tier int
		tok  string
		host string
		skip bool
	}{{1, tok1, t1u.Hostname(), mode != "bearer"}, {2, tok2, t2u.Hostname(), false}} {
		if c.skip || c.tok != "" {
			continue
		}
		if !isLoopback(net.JoinHostPort(c.host, "0")) {
			name := "VWR_ADMIN_TOKEN"
			if c.tier == 2 {
				name = "QUEUE_ADMIN_TOKEN (or VWR_ADMIN_TOKEN)"
			}
			return nil, "", fmt.Errorf("%s is required for Tier %d at %s (only a loopback URL defaults to %q, as vwr local does)", name, c.tier, c.host, localAdminToken)
		}
	}
	tok1, tok2 = orDefault(tok1, localAdminToken), orDefault(tok2, localAdminToken)
	var signer *sigV4
	switch mode {
	case "bearer":
	case "sigv4":
		s, err := newSigV4(ctx, t1u.Hostname(), environ)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = s.check(cctx)
			cancel()
		}
		if err != nil {
			return nil, "", fmt.Errorf("Tier 1 at %s needs SigV4: %w", t1u.Host, err)
		}
		signer = s
	default:
		return nil, "", fmt.Errorf("-auth must be auto, bearer or sigv4, not %q", mode)
	}
	note := "bearer token"
	if signer != nil {
		note = "SigV4, region " + signer.region
	}
	return func(ctx context.Context, tier int, req *http.Request, body []byte) error {
		switch {
		case tier == 1 && signer != nil:
			return signer.sign(ctx, req, body)
		case tier == 1:
			req.Header.Set("Authorization", "Bearer "+tok1)
		default:
			req.Header.Set("Authorization", "Bearer "+tok2)
		}
		return nil
	}, note, nil
}

// parseNets reads a comma-separated list of CIDRs (a bare address is one
// host).
func parseNets(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range splitList(s) {
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a CIDR (10.0.0.0/8) nor an address", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR like 10.0.0.0/8", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
