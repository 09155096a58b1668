package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/vwr-go/vwr/internal/console"
	"github.com/vwr-go/vwr/internal/envconf"
)

// The operator console in `vwr local`, at /vwr/console/: the same console
// `vwr console` serves, behind vwr local's admin token (the sign-in form,
// or Authorization: Bearer), reading and steering this process's own
// admin APIs over loopback with that token.

func init() {
	registerLocal(localExtension{Name: "console", Mount: mountConsole})
}

func mountConsole(ctx context.Context, s *localStack) error {
	var cenv consoleEnv
	if err := envconf.Parse(&cenv, s.Env); err != nil {
		return err
	}
	nets, err := parseNets(strings.Join(cenv.Allow, ","))
	if err != nil {
		return fmt.Errorf("VWR_CONSOLE_ALLOW: %w", err)
	}
	// The tokens each tier's admin API takes (see newLocalStack): either
	// signs an operator in.
	tok1, tok2 := orDefault(s.Getenv("VWR_ADMIN_TOKEN"), s.AdminToken), s.QueueConfig.AdminToken
	tokens := []string{tok1}
	if tok2 != tok1 {
		tokens = append(tokens, tok2)
	}
	if slices.ContainsFunc(tokens, func(t string) bool { return len(t) < console.MinTokenBytes }) {
		s.Notef("operator console off: its sign-in takes the admin tokens, and one is shorter than %d bytes", console.MinTokenBytes)
		return nil
	}
	t1, t2, err := tierRoots(s.URL, "")
	if err != nil {
		return err
	}
	srv, err := console.New(ctx, console.Config{
		Tokens: tokens, Allow: nets, Hosts: cenv.Hosts,
		Upstream: &console.Upstream{Tier1: t1, Tier2: t2, Authorize: func(_ context.Context, tier int, req *http.Request, _ []byte) error {
			tok := tok2
			if tier == 1 {
				tok = tok1
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			return nil
		}},
		Site:   s.URL,
		Clock:  s.Clock,
		Logger: s.Log.With("component", "console"),
	})
	if err != nil {
		return err
	}
	s.Handle(srv.Prefix(), srv.Handler())
	s.Notef("operator console: %s%s (sign in with the admin token)", s.URL, srv.Prefix())
	return nil
}
