// Package gateapp runs the entry-token gate as a reverse proxy in front of a
// site in any language: `vwr gate` and the deployable services/queue/cmd/gate
// (in the Tier 2 image as /gate). It holds wiring only: configuration from
// the environment, the gate (services/queue/gate) around
// net/http/httputil.ReverseProxy, and a server that stops gracefully.
package gateapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue/gate"
)

// Config is every setting of the gate proxy.
type Config struct {
	// Upstream is the site the proxy forwards to, e.g. http://shop:8080.
	Upstream string `env:"GATE_UPSTREAM"`
	// Addr is where the proxy listens.
	Addr string `env:"GATE_LISTEN_ADDR"`
	// EntryTokenSecret verifies entry tokens: the queue's secret.
	EntryTokenSecret string `env:"QUEUE_ENTRY_TOKEN_SECRET"`
	// Gate is the same set of QUEUE_GATE_* settings the Go gate reads.
	Gate gate.Settings
	Log  applog.Config
}

// DefaultAddr is where the proxy listens unless GATE_LISTEN_ADDR says otherwise.
const DefaultAddr = ":8081"

// FromEnv reads the Config from environ; malformed values are errors naming
// the variable, missing ones are reported by Validate.
func FromEnv(environ map[string]string) (Config, error) {
	var c Config
	err := envconf.Parse(&c, environ)
	return c, err
}

// WithDefaults fills what this package owns.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	c.Log = c.Log.WithDefaults()
	return c
}

// Validate reports every problem at once, each naming its variable (and
// the flag of `vwr gate` that sets it).
func (c Config) Validate() error {
	var errs []error
	if c.Upstream == "" {
		errs = append(errs, errors.New("GATE_UPSTREAM (-upstream) is required: the site to forward to, e.g. http://shop:8080"))
	} else if _, err := upstreamURL(c.Upstream); err != nil {
		errs = append(errs, err)
	}
	switch {
	case c.EntryTokenSecret == "":
		errs = append(errs, errors.New("QUEUE_ENTRY_TOKEN_SECRET is required: the Tier 2 queue's entry-token secret, which the gate verifies tokens with"))
	case len(c.EntryTokenSecret) < token.MinSecretLen:
		errs = append(errs, fmt.Errorf("QUEUE_ENTRY_TOKEN_SECRET must be at least %d bytes", token.MinSecretLen))
	}
	if err := c.Gate.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func upstreamURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("GATE_UPSTREAM (-upstream) %q must be an http(s) URL like http://shop:8080 (a path is kept as a prefix; no query)", raw)
	}
	return u, nil
}

// Proxy is an assembled gate proxy.
type Proxy struct {
	Config  Config
	Gate    *gate.Gate
	Handler http.Handler
	log     *slog.Logger
}

// New validates cfg (after WithDefaults) and builds the proxy.
func New(cfg Config, clk clock.Clock, log *slog.Logger) (*Proxy, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, err := token.NewKeyRing("", []byte(cfg.EntryTokenSecret))
	if err != nil {
		return nil, fmt.Errorf("QUEUE_ENTRY_TOKEN_SECRET: %v", err)
	}
	g, err := gate.New(cfg.Gate.Config(keys, clk))
	if err != nil {
		return nil, err
	}
	up, _ := upstreamURL(cfg.Upstream)
	return &Proxy{Config: cfg, Gate: g, Handler: g.Proxy(up, log), log: log}, nil
}

// Listen opens the proxy's address; a port in use says which setting moves it.
func (p *Proxy) Listen(flagName string) (net.Listener, error) {
	ln, err := net.Listen("tcp", p.Config.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w (choose another address with %s)", p.Config.Addr, err, flagName)
	}
	return ln, nil
}

// ShutdownTimeout bounds how long Serve waits for requests in flight.
const ShutdownTimeout = 10 * time.Second

// Serve forwards requests on ln until ctx is done, then lets requests in
// flight finish (up to ShutdownTimeout).
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           p.Handler,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}
