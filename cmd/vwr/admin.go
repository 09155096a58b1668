package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/vwr-go/vwr/internal/tier1"
)

// `vwr admin` drives the Tier 1 admin API of `vwr local` (bearer token) or
// of a deployed stack (SigV4-signed, since the routes use AWS_IAM there).

func init() {
	register(&command{
		name:    "admin",
		summary: "operate an event: Tier 1 activate, deactivate, pause, resume, advance, status, schedule; Tier 2 stats, threshold",
		run:     runAdmin,
	})
}

// adminActions maps each action to its HTTP method.
var adminActions = map[string]string{
	"activate":   http.MethodPost,
	"deactivate": http.MethodPost,
	"pause":      http.MethodPost,
	"resume":     http.MethodPost,
	"advance":    http.MethodPost,
	"status":     http.MethodGet,
	"schedule":   http.MethodPost,
}

const adminUsage = `usage: vwr admin <activate|deactivate|pause|resume|advance|status|schedule> -event ID [flags]

  activate   -shards N -batch N   turn the event's line on (0 = server default: 1 shard, 500 per tick)
  deactivate                      let everyone through (pass-through)
  pause / resume                  stop / restart the advancer for the event
  advance    -by N                raise the serving counter by N at once
  status                          settings, serving counter and per-shard counters
  schedule   -opens T [-prequeue-from T]
                                  open an inactive event at T (RFC 3339, e.g. 2026-12-01T10:00:00Z)
                                  with a pre-queue until then, drawn by a public beacon (docs/draw.md)

Auth: Authorization: Bearer $VWR_ADMIN_TOKEN (default "local-admin" for a
loopback -url, matching vwr local), or -auth sigv4 (automatic for
*.amazonaws.com) to sign with your AWS credentials for the AWS_IAM routes.
`

func runAdmin(ctx context.Context, inv invocation) int {
	if len(inv.Args) == 0 || strings.HasPrefix(inv.Args[0], "-") {
		fmt.Fprint(inv.Stderr, adminUsage+"\n"+queueAdminUsage)
		if len(inv.Args) > 0 && (inv.Args[0] == "-h" || inv.Args[0] == "-help" || inv.Args[0] == "--help") {
			return exitOK
		}
		return exitUsage
	}
	action := inv.Args[0]
	if _, ok := queueAdminActions[action]; ok {
		return runQueueAdmin(ctx, inv, action)
	}
	method, ok := adminActions[action]
	if !ok {
		fmt.Fprintf(inv.Stderr, "vwr admin: unknown action %q\n\n%s\n%s", action, adminUsage, queueAdminUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("vwr admin "+action, flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	base := fs.String("url", "http://127.0.0.1:8080"+Tier1Prefix, "Tier 1 base URL: vwr local's …/vwr-api, or the deployed API URL")
	event := fs.String("event", "", "event id (required)")
	auth := fs.String("auth", "auto", "auto, bearer or sigv4")
	timeout := fs.Duration("timeout", 10*time.Second, "request timeout")
	var shards int
	var batch, by int64
	if action == "activate" {
		fs.IntVar(&shards, "shards", 0, "counter shards (1-64; fixed once positions are handed out)")
		fs.Int64Var(&batch, "batch", 0, "visitors admitted per advancer tick")
	}
	if action == "advance" {
		fs.Int64Var(&by, "by", 0, "positions to raise the serving counter by (required)")
	}
	var opens, prequeueFrom string
	if action == "schedule" {
		fs.StringVar(&opens, "opens", "", "opening time, RFC 3339 (required)")
		fs.StringVar(&prequeueFrom, "prequeue-from", "", "start of the pre-queue, RFC 3339 (default: now)")
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
	case !tier1.ValidID(*event):
		fmt.Fprintln(inv.Stderr, "vwr admin: -event is required and must match ^[A-Za-z0-9_-]{1,64}$")
		return exitUsage
	case action == "advance" && by < 1:
		fmt.Fprintln(inv.Stderr, "vwr admin: advance needs -by N (N ≥ 1)")
		return exitUsage
	}
	var sched map[string]string
	if action == "schedule" {
		var err error
		if sched, err = scheduleBody(opens, prequeueFrom); err != nil {
			fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
			return exitUsage
		}
	}
	u, err := url.Parse(strings.TrimRight(*base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(inv.Stderr, "vwr admin: -url %q is not an http(s) URL\n", *base)
		return exitUsage
	}
	u.Path += "/vwr/admin/" + action + "/" + *event

	var body []byte
	switch action {
	case "activate":
		body, _ = json.Marshal(map[string]int64{"shards": int64(shards), "batchSize": batch})
	case "advance":
		body, _ = json.Marshal(map[string]int64{"by": by})
	case "schedule":
		body, _ = json.Marshal(sched)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitError
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := authorizeAdmin(ctx, req, body, *auth, inv.getenv); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitUsage
	}
	return sendAdmin(inv, req)
}

// sendAdmin sends an admin request and prints the answer, indented: on
// stdout when it is a 2xx, else on stderr with the status.
func sendAdmin(inv invocation, req *http.Request) int {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitError
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = append(pretty.Bytes(), '\n')
	}
	if resp.StatusCode/100 != 2 {
		fmt.Fprintf(inv.Stderr, "vwr admin: %s %s: %s\n%s", req.Method, req.URL.Path, resp.Status, out)
		return exitError
	}
	_, _ = inv.Stdout.Write(out)
	return exitOK
}

// authorizeAdmin adds the bearer token or a SigV4 signature.
func authorizeAdmin(ctx context.Context, req *http.Request, body []byte, mode string, getenv func(string) string) error {
	if mode == "auto" {
		mode = "bearer"
		if strings.HasSuffix(req.URL.Hostname(), ".amazonaws.com") {
			mode = "sigv4"
		}
	}
	switch mode {
	case "bearer":
		tok := getenv("VWR_ADMIN_TOKEN")
		if tok == "" {
			if !isLoopback(net.JoinHostPort(req.URL.Hostname(), "0")) {
				return errors.New("VWR_ADMIN_TOKEN is required for a non-loopback -url")
			}
			tok = localAdminToken
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return nil
	case "sigv4":
		return signSigV4(ctx, req, body, getenv)
	default:
		return fmt.Errorf("-auth must be auto, bearer or sigv4, not %q", mode)
	}
}

// signSigV4 signs req for execute-api with the default AWS credential chain
// (or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY from getenv), as API Gateway's
// AWS_IAM authorizer expects.
func signSigV4(ctx context.Context, req *http.Request, body []byte, getenv func(string) string) error {
	var opts []func(*awsconfig.LoadOptions) error
	if id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("sigv4: load AWS config: %w", err)
	}
	region := apiRegion(req.URL.Hostname())
	if region == "" {
		region = orDefault(getenv("AWS_REGION"), cfg.Region)
	}
	if region == "" {
		return errors.New("sigv4: set AWS_REGION (the URL does not name one)")
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("sigv4: AWS credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	return v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", region, time.Now())
}

// apiRegion reads the region from an execute-api host name
// (<id>.execute-api.<region>.amazonaws.com).
func apiRegion(host string) string {
	parts := strings.Split(host, ".")
	if len(parts) >= 5 && parts[1] == "execute-api" {
		return parts[2]
	}
	return ""
}

// scheduleBody checks the schedule flags: RFC 3339 times, prequeue-from a
// full time or a time of day on the opening's date ("09:30:00Z").
func scheduleBody(opens, from string) (map[string]string, error) {
	if opens == "" {
		return nil, errors.New("schedule needs -opens RFC3339 (e.g. 2026-12-01T10:00:00Z)")
	}
	at, err := time.Parse(time.RFC3339, opens)
	if err != nil {
		return nil, fmt.Errorf("-opens %q is not RFC 3339", opens)
	}
	body := map[string]string{"opensAt": at.UTC().Format(time.RFC3339)}
	if from == "" {
		return body, nil
	}
	f, err := time.Parse(time.RFC3339, from)
	if err != nil {
		// A time of day (09:30:00Z) on the opening's date.
		if f, err = time.Parse(time.RFC3339, at.UTC().Format("2006-01-02")+"T"+from); err != nil {
			return nil, fmt.Errorf("-prequeue-from %q is neither RFC 3339 nor a time of day like 09:30:00Z", from)
		}
	}
	if !f.Before(at) {
		return nil, errors.New("-prequeue-from must be before -opens")
	}
	body["prequeueFrom"] = f.UTC().Format(time.RFC3339)
	return body, nil
}
