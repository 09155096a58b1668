package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/edge"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/token"
)

// `vwr smoke` walks one visitor through a deployed front door, as a browser
// would, and fails loudly on what a deploy can get wrong without any test
// noticing: an edge that lets a visitor without a pass through, a waiting
// page that is not served, a status document CloudFront does not cache, an
// edge that refuses the passes Tier 1 signs (an empty or stale
// KeyValueStore: every admitted visitor would loop between the event page
// and the waiting room), and Tier 2 out of CloudFront's reach.

func init() {
	register(&command{
		name:    "smoke",
		summary: "walk one visitor through a deployed front door (-url https://…) and fail loudly on what is broken",
		run:     runSmoke,
	})
}

// smokeEvent is the event the smoke test walks by default. Never activated,
// it passes straight through Tier 1, so the walk needs no wait and no admin.
const smokeEvent = "vwr-smoke"

func runSmoke(ctx context.Context, inv invocation) int {
	fs := flag.NewFlagSet("vwr smoke", flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	base := fs.String("url", inv.getenv("VWR_URL"), "the front door: https://<DistributionDomain> or your own domain (VWR_URL)")
	event := fs.String("event", smokeEvent, "the event to walk (an inactive one passes through at once)")
	timeout := fs.Duration("timeout", 2*time.Minute, "for the whole walk, including a wait in line if the event is active")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: vwr smoke -url https://d111111abcdef8.cloudfront.net [-event ID]\n\nWalks one visitor through the front door; exit 1 names the first step that failed.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(inv.Args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	u, err := parseHTTPURL("-url", *base)
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case err != nil:
	case !tier1.ValidID(*event):
		err = errors.New("-event must match ^[A-Za-z0-9_-]{1,64}$")
	}
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr smoke: %v\n", err)
		return exitUsage
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	s := &smoke{base: u.String(), event: *event, out: inv.Stdout, client: &http.Client{
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if err := s.walk(ctx); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr smoke: FAIL: %v\n", err)
		return exitError
	}
	fmt.Fprintln(inv.Stdout, "vwr smoke: ok")
	return exitOK
}

type smoke struct {
	base, event string
	out         io.Writer
	client      *http.Client
}

func (s *smoke) step(format string, args ...any) { fmt.Fprintf(s.out, "ok  "+format+"\n", args...) }

func (s *smoke) do(ctx context.Context, method, path string, hdr map[string]string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, nil)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, body, nil
}

func (s *smoke) walk(ctx context.Context) error {
	page := edge.ProtectedPrefix + s.event
	waiting := edge.WaitingRoom + "?event=" + s.event + "&return="

	// 1. No pass: the edge check sends the visitor to the waiting room, also
	// when the path is written to slip past a prefix check.
	for _, p := range []string{page, "/%65vents/" + s.event} {
		resp, _, err := s.do(ctx, "GET", p, nil)
		if err != nil {
			return err
		}
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode == http.StatusFound && strings.HasPrefix(loc, waiting):
		case resp.StatusCode/100 == 2:
			return fmt.Errorf("GET %s without a pass answered %d: the edge check let a visitor without a pass through (is the function associated with the default behaviour?)", p, resp.StatusCode)
		default:
			return fmt.Errorf("GET %s without a pass answered %d (Location %q), want 302 to %s…", p, resp.StatusCode, loc, waiting)
		}
	}
	s.step("the edge sends a visitor without a pass to the waiting room")

	// 2. The waiting page.
	resp, body, err := s.do(ctx, "GET", edge.WaitingRoom+"?event="+s.event, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "vwr.js") {
		return fmt.Errorf("GET /vwr/ answered %d %q, not the waiting page (was static/vwr deployed to the bucket?)", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s.step("the waiting page is served")

	// 3. The status document is cached at the edge: a poll within its
	// second costs no Lambda call.
	statusPath := "/vwr-api/vwr/status/" + s.event
	var seen []string
	hit := false
	for i := 0; i < 4 && !hit; i++ {
		resp, _, err := s.do(ctx, "GET", statusPath, nil)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s answered %d", statusPath, resp.StatusCode)
		}
		xc := resp.Header.Get("X-Cache")
		seen = append(seen, fmt.Sprintf("%q", xc))
		hit = strings.HasPrefix(strings.ToLower(xc), "hit") || strings.HasPrefix(strings.ToLower(xc), "refreshhit")
	}
	if !hit {
		return fmt.Errorf("missing cache hit on %s: %d polls in a row all missed (X-Cache %s); is the status cache policy on /vwr-api/vwr/status/*?", statusPath, len(seen), strings.Join(seen, ", "))
	}
	s.step("the status document is cached at the edge")

	// 4. A pass from Tier 1: at once for an inactive event, else after the
	// wait in line.
	pass, err := s.getPass(ctx)
	if err != nil {
		return err
	}
	s.step("Tier 1 handed out a pass (kid %s)", kidOf(pass))

	// 5. With the pass, the edge lets the visitor through. Sent back to the
	// waiting room instead, they would loop for ever.
	resp, _, err = s.do(ctx, "GET", page, map[string]string{"Cookie": edge.CookieName + "=" + pass})
	if err != nil {
		return err
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode == http.StatusFound && strings.HasPrefix(loc, edge.WaitingRoom) {
		return fmt.Errorf("redirect loop: the edge sent a visitor holding a fresh pass (kid %s) back to the waiting room; its KeyValueStore is empty or does not have that kid: run `vwr admin edge-keys sync` (make deploy does)", kidOf(pass))
	}
	if resp.StatusCode >= 500 {
		return fmt.Errorf("GET %s with a pass answered %d: the protected site (vwr:protectedOrigin) does not answer CloudFront", page, resp.StatusCode)
	}
	s.step("the edge lets a visitor with a pass through to the site (it answered %d)", resp.StatusCode)

	// 6. Tier 2 answers through CloudFront (a 5xx here is the ALB's ingress,
	// the origin, or the service).
	resp, body, err = s.do(ctx, "POST", "/api/queue/check/"+s.event, map[string]string{"Cookie": edge.CookieName + "=" + pass})
	if err != nil {
		return err
	}
	if resp.StatusCode >= 500 {
		return fmt.Errorf("POST /api/queue/check/%s answered %d: Tier 2 is not reachable through CloudFront (%.120s)", s.event, resp.StatusCode, body)
	}
	s.step("Tier 2 answers through the front door (%d)", resp.StatusCode)
	return nil
}

// getPass assigns a place and, for an active event, waits in line for it.
func (s *smoke) getPass(ctx context.Context) (string, error) {
	key := strings.ReplaceAll(token.NewTokenID(), "_", "-")
	resp, body, err := s.do(ctx, "POST", "/vwr-api/vwr/assign/"+s.event, map[string]string{"Idempotency-Key": key, "Accept": "application/json"})
	if err != nil {
		return "", err
	}
	var a struct {
		Active    bool   `json:"active"`
		Admitted  bool   `json:"admitted"`
		Token     string `json:"token"`
		RequestID string `json:"requestId"`
		NextPoll  int    `json:"nextPoll"`
	}
	if resp.StatusCode/100 != 2 || json.Unmarshal(body, &a) != nil {
		return "", fmt.Errorf("POST /vwr-api/vwr/assign/%s answered %d %.200s", s.event, resp.StatusCode, body)
	}
	if a.Admitted && a.Token != "" {
		return a.Token, nil
	}
	for {
		wait := time.Duration(max(a.NextPoll, 2)) * time.Second
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no pass for %s before the timeout: the event is active and the line did not reach request %s", s.event, a.RequestID)
		case <-time.After(wait):
		}
		resp, body, err := s.do(ctx, "GET", "/vwr-api/vwr/check/"+s.event+"/"+url.PathEscape(a.RequestID), nil)
		if err != nil {
			return "", err
		}
		var c struct {
			Admitted bool   `json:"admitted"`
			Token    string `json:"token"`
			NextPoll int    `json:"nextPoll"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &c) != nil {
			return "", fmt.Errorf("GET /vwr-api/vwr/check/%s answered %d %.200s", s.event, resp.StatusCode, body)
		}
		if c.Admitted && c.Token != "" {
			return c.Token, nil
		}
		a.NextPoll = c.NextPoll
	}
}

// kidOf reads a JWT's kid for messages (the pass is not verified here).
func kidOf(jwt string) string {
	h, _, _ := strings.Cut(jwt, ".")
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return "?"
	}
	var hdr struct {
		Kid string `json:"kid"`
	}
	if json.Unmarshal(b, &hdr) != nil || hdr.Kid == "" {
		return "?"
	}
	return hdr.Kid
}
