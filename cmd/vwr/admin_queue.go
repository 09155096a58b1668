package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vwr-go/vwr/services/queue"
)

// `vwr admin stats` and `vwr admin threshold` drive Tier 2's admin API
// (/api/queue/admin/…) with QUEUE_ADMIN_TOKEN. A threshold set this way is
// written by Tier 2 to its durable settings store (Tier 1's store) and opens
// the event; stats say whether the event is recovering from a lost Redis.

// queueAdminActions are the Tier 2 actions of `vwr admin`.
var queueAdminActions = map[string]string{
	"stats":     http.MethodGet,
	"threshold": http.MethodPut,
}

const queueAdminUsage = `usage: vwr admin <stats|threshold> -event ID [flags]   (Tier 2)

  stats                 line, active users, threshold, and "recovering" while
                        the queue rebuilds after a lost Redis
  threshold -n N        set the event's threshold (and open it) in the durable
                        settings store

Auth: Authorization: Bearer $QUEUE_ADMIN_TOKEN (default "local-admin" for a
loopback -url, matching vwr local).
`

func runQueueAdmin(ctx context.Context, inv invocation, action string) int {
	method := queueAdminActions[action]
	fs := flag.NewFlagSet("vwr admin "+action, flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	base := fs.String("url", "http://127.0.0.1:8080", "Tier 2 base URL (vwr local's address, or the queue service)")
	event := fs.String("event", "", "event id (required)")
	timeout := fs.Duration("timeout", 10*time.Second, "request timeout")
	var n int64
	if action == "threshold" {
		fs.Int64Var(&n, "n", 0, fmt.Sprintf("users active at once (%d-%d)", queue.MinThreshold, queue.MaxThreshold))
	}
	if err := fs.Parse(inv.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(inv.Stderr, "vwr admin: unexpected arguments %q\n", fs.Args())
		return exitUsage
	case !queue.ValidID(*event):
		fmt.Fprintln(inv.Stderr, "vwr admin: -event is required and must match ^[A-Za-z0-9_-]{1,64}$")
		return exitUsage
	case action == "threshold" && (n < queue.MinThreshold || n > queue.MaxThreshold):
		fmt.Fprintf(inv.Stderr, "vwr admin: threshold needs -n N (%d-%d)\n", queue.MinThreshold, queue.MaxThreshold)
		return exitUsage
	}
	u, err := url.Parse(strings.TrimRight(*base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(inv.Stderr, "vwr admin: -url %q is not an http(s) URL\n", *base)
		return exitUsage
	}
	u.Path += "/api/queue/admin/" + action + "/" + *event
	var body []byte
	if action == "threshold" {
		body, _ = json.Marshal(map[string]int64{"threshold": n})
	}
	tok := inv.getenv("QUEUE_ADMIN_TOKEN")
	if tok == "" {
		if !isLoopback(net.JoinHostPort(u.Hostname(), "0")) {
			fmt.Fprintln(inv.Stderr, "vwr admin: QUEUE_ADMIN_TOKEN is required for a non-loopback -url")
			return exitUsage
		}
		tok = localAdminToken
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitError
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return sendAdmin(inv, req)
}
