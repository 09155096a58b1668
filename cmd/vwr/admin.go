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
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

// `vwr admin` operates an event on both tiers through one base URL: the
// site's (vwr local's address, or the CDN domain in front of a deployment).
// Tier 1's admin API sits under /vwr-api there, Tier 2's under
// /api/queue/admin. Tier 1 takes a bearer token locally and SigV4 on AWS
// (its routes use AWS_IAM there); Tier 2 always takes a bearer token.

func init() {
	register(&command{
		name:    "admin",
		summary: "operate an event on both tiers: activate, schedule, threshold, status, stats, …",
		run:     runAdmin,
	})
}

// adminEnv is what `vwr admin` reads from the environment.
type adminEnv struct {
	// URL is the site's base URL, for both tiers.
	URL string `env:"VWR_URL"`
	// Tier1URL overrides where Tier 1's admin API is: a deployment's
	// ApiUrl, which SigV4 signatures must be sent to directly.
	Tier1URL string `env:"VWR_TIER1_URL"`
	// Token is the admin token of both tiers; QueueToken, when set,
	// overrides it for Tier 2.
	Token      string `env:"VWR_ADMIN_TOKEN"`
	QueueToken string `env:"QUEUE_ADMIN_TOKEN"`
}

// defaultAdminURL is vwr local's default address.
const defaultAdminURL = "http://127.0.0.1:8080"

// adminAction is one `vwr admin` action.
type adminAction struct {
	name    string
	tier    int // 1: /vwr-api/vwr/admin/{name}/{event}; 2: /api/queue/admin/{name}/{event}
	method  string
	args    string // the action's own flags, for the overview
	summary string
	// flags declares the action's own flags on fs and returns what builds
	// the request body from them after parsing (nil body: none). A build
	// error is a usage error and should name the flag.
	flags func(fs *flag.FlagSet) func() (any, error)
}

var adminActions = map[string]*adminAction{}

// registerAdmin adds an action; a duplicate name is a wiring bug.
func registerAdmin(a *adminAction) {
	if _, dup := adminActions[a.name]; dup {
		panic("vwr admin: action " + a.name + " registered twice")
	}
	adminActions[a.name] = a
}

func noFlags(*flag.FlagSet) func() (any, error) { return func() (any, error) { return nil, nil } }

func init() {
	registerAdmin(&adminAction{name: "activate", tier: 1, method: http.MethodPost, args: "[-shards N] [-batch N] [-pow N]",
		summary: "turn the event's line on (0 = server default: 1 shard, 500 per tick; no proof of work unless -pow)",
		flags: func(fs *flag.FlagSet) func() (any, error) {
			shards := fs.Int("shards", 0, "counter shards (1-64; fixed once positions are handed out; 0 = server default)")
			batch := fs.Int64("batch", 0, "visitors admitted per advancer tick (0 = server default)")
			pow := powFlag(fs)
			return func() (any, error) {
				return map[string]int64{"shards": int64(*shards), "batchSize": *batch, "pow": *pow}, nil
			}
		}})
	registerAdmin(&adminAction{name: "deactivate", tier: 1, method: http.MethodPost,
		summary: "let everyone through (pass-through)", flags: noFlags})
	registerAdmin(&adminAction{name: "pause", tier: 1, method: http.MethodPost,
		summary: "stop the advancer for the event (nobody new passes Tier 1)", flags: noFlags})
	registerAdmin(&adminAction{name: "resume", tier: 1, method: http.MethodPost,
		summary: "restart the advancer", flags: noFlags})
	registerAdmin(&adminAction{name: "advance", tier: 1, method: http.MethodPost, args: "-by N",
		summary: "raise the serving counter by N at once",
		flags: func(fs *flag.FlagSet) func() (any, error) {
			by := fs.Int64("by", 0, "positions to raise the serving counter by (required, ≥ 1)")
			return func() (any, error) {
				if *by < 1 {
					return nil, errors.New("advance needs -by N (N ≥ 1)")
				}
				return map[string]int64{"by": *by}, nil
			}
		}})
	registerAdmin(&adminAction{name: "batch", tier: 1, method: http.MethodPost, args: "-n N",
		summary: "change how many visitors each advancer tick lets in (keeps a pause and the proof of work)",
		flags: func(fs *flag.FlagSet) func() (any, error) {
			n := fs.Int64("n", 0, fmt.Sprintf("visitors per advancer tick (%d-%d, required)", tier1.MinBatchSize, tier1.MaxBatchSize))
			return func() (any, error) {
				if *n < tier1.MinBatchSize || *n > tier1.MaxBatchSize {
					return nil, fmt.Errorf("batch needs -n N (%d-%d)", tier1.MinBatchSize, tier1.MaxBatchSize)
				}
				return map[string]int64{"batchSize": *n}, nil
			}
		}})
	registerAdmin(&adminAction{name: "status", tier: 1, method: http.MethodGet,
		summary: "settings, serving counter and per-shard counters", flags: noFlags})
	registerAdmin(&adminAction{name: "schedule", tier: 1, method: http.MethodPost, args: "-opens T [-prequeue-from T] [-pow N]",
		summary: "open an inactive event at T (RFC 3339) with a pre-queue until then, drawn by a public beacon (docs/draw.md); refused once a ticket exists",
		flags: func(fs *flag.FlagSet) func() (any, error) {
			opens := fs.String("opens", "", "opening time, RFC 3339, e.g. 2026-12-01T10:00:00Z (required)")
			from := fs.String("prequeue-from", "", "start of the pre-queue: RFC 3339, or a time of day on the opening's date like 09:30:00Z (default: now)")
			pow := powFlag(fs)
			return func() (any, error) {
				body, err := scheduleBody(*opens, *from)
				if err == nil && *pow != 0 {
					body["pow"] = *pow
				}
				return body, err
			}
		}})
	registerAdmin(&adminAction{name: "cancel", tier: 1, method: http.MethodPost,
		summary: "cancel a scheduled sale that is not drawn (the only change left once a ticket exists); the draw document records it",
		flags:   noFlags})
}

// powFlag is -pow on activate and schedule: the proof of work every arrival
// pays (docs/bots.md).
func powFlag(fs *flag.FlagSet) *int64 {
	return fs.Int64("pow", 0, "proof of work each arrival pays, in expected SHA-256 hashes (1000-100000000; 0 = none; measured solve times in docs/bots.md)")
}

// adminUsage is the overview `vwr admin -h` prints.
func adminUsage(w io.Writer) {
	fmt.Fprint(w, `usage: vwr admin <action> -event ID [flags]

Operates an event on both tiers through one base URL (-url or VWR_URL, e.g.
http://127.0.0.1:8080 for vwr local, or your site's CDN domain). Tier 1 is
found under /vwr-api there, Tier 2 under /api/queue.
`)
	for tier, title := range []string{1: "Tier 1, the front door:", 2: "Tier 2, the event queue:"} {
		if title == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", title)
		var names []string
		for n, a := range adminActions {
			if a.tier == tier {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		width := 0
		for _, a := range adminActions {
			width = max(width, len(a.args))
		}
		for _, n := range names {
			a := adminActions[n]
			fmt.Fprintf(w, "  %-11s %-*s  %s\n", n, width, a.args, a.summary)
		}
	}
	fmt.Fprint(w, `
The front door's keys (not per event; AWS credentials):
  edge-keys   sync|rotate|retire   keep the edge KeyValueStore equal to the Tier 1 key
                                   secret (make deploy runs sync); `+"`vwr admin edge-keys -h`"+`

Flags of every action:
  -event ID        the event (required; ^[A-Za-z0-9_-]{1,64}$)
  -url URL         the site's base URL (default $VWR_URL, else `+defaultAdminURL+`)
  -tier1-url URL   Tier 1: its API itself, when it is not under <url>/vwr-api (default
                   $VWR_TIER1_URL); on AWS the ApiUrl output, since SigV4 signatures
                   must go to the API directly
  -auth MODE       Tier 1: auto, bearer or sigv4 (auto: sigv4 for *.amazonaws.com)
  -timeout D       request timeout (default 10s)

Auth: both tiers take Authorization: Bearer $VWR_ADMIN_TOKEN; QUEUE_ADMIN_TOKEN,
when set, is sent to Tier 2 instead. On a loopback URL the default is
"local-admin", as vwr local's. -auth sigv4 signs Tier 1 calls with your AWS
credentials for the deployed AWS_IAM routes.

Run `+"`vwr admin <action> -h`"+` for an action's flags. Exit codes: 0 done, 1 the call
failed, 2 a usage error.
`)
}

func runAdmin(ctx context.Context, inv invocation) int {
	if len(inv.Args) == 0 {
		adminUsage(inv.Stderr)
		return exitUsage
	}
	switch inv.Args[0] {
	case "-h", "-help", "--help", "help":
		adminUsage(inv.Stdout)
		return exitOK
	}
	name := inv.Args[0]
	if name == "edge-keys" {
		return runEdgeKeys(ctx, inv)
	}
	a, ok := adminActions[name]
	if !ok {
		fmt.Fprintf(inv.Stderr, "vwr admin: unknown action %q (`vwr admin -h` lists them)\n", name)
		return exitUsage
	}
	var env adminEnv
	if err := envconf.Parse(&env, inv.Env); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitUsage
	}
	fs := flag.NewFlagSet("vwr admin "+name, flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	event := fs.String("event", "", "event id (required)")
	base := fs.String("url", orDefault(env.URL, defaultAdminURL), "the site's base URL: vwr local's address or your CDN domain (VWR_URL)")
	timeout := fs.Duration("timeout", 10*time.Second, "request timeout")
	auth, tier1URL := "bearer", ""
	if a.tier == 1 {
		fs.StringVar(&tier1URL, "tier1-url", env.Tier1URL, "Tier 1's API itself, when it is not under <url>/vwr-api (VWR_TIER1_URL; on AWS the ApiUrl output)")
		fs.StringVar(&auth, "auth", "auto", "auto, bearer or sigv4 (auto: sigv4 for *.amazonaws.com)")
	}
	build := a.flags(fs)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: vwr admin %s -event ID %s [flags]\n\nTier %d: %s.\n\nflags:\n", name, a.args, a.tier, a.summary)
		fs.PrintDefaults()
	}
	for _, h := range inv.Args[1:] {
		if h == "-h" || h == "-help" || h == "--help" {
			fs.SetOutput(inv.Stdout)
			fs.Usage()
			return exitOK
		}
	}
	if err := fs.Parse(inv.Args[1:]); err != nil {
		return exitUsage
	}
	body, err := build()
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(inv.Stderr, "vwr admin: unexpected arguments %q (flags go after the action: vwr admin %s -event ID …)\n", fs.Args(), name)
		return exitUsage
	case !tier1.ValidID(*event):
		fmt.Fprintln(inv.Stderr, "vwr admin: -event is required and must match ^[A-Za-z0-9_-]{1,64}$")
		return exitUsage
	case err != nil:
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitUsage
	}
	target, err := adminURL(a, *base, tier1URL, *event)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitUsage
	}
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, a.method, target.String(), bytes.NewReader(raw))
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitError
	}
	req.Header.Set("Accept", "application/json")
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := authorizeAdmin(ctx, req, raw, a.tier, auth, env, inv.Env); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin: %v\n", err)
		return exitUsage
	}
	return sendAdmin(inv, req, a.tier)
}

// adminURL is where an action goes. Tier 2 is under the base URL; Tier 1
// under <base>/vwr-api, unless -tier1-url names its API, or the base URL is
// itself an API Gateway URL (or already ends in /vwr-api, the old form).
func adminURL(a *adminAction, base, tier1URL, event string) (*url.URL, error) {
	t1, t2, err := tierRoots(base, tier1URL)
	if err != nil {
		return nil, err
	}
	if a.tier == 2 {
		t2.Path += "/api/queue/admin/" + a.name + "/" + event
		return t2, nil
	}
	t1.Path += "/vwr/admin/" + a.name + "/" + event
	return t1, nil
}

// tierRoots are where both tiers' APIs are, from the site's base URL (and
// Tier 1's own, when given): Tier 2's routes are t2 + /api/queue/…, Tier
// 1's t1 + /vwr/…. Neither ends in "/".
func tierRoots(base, tier1URL string) (t1, t2 *url.URL, err error) {
	u, err := parseHTTPURL("-url", base)
	if err != nil {
		return nil, nil, err
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	site := *u
	site.Path = strings.TrimSuffix(site.Path, Tier1Prefix)
	switch {
	case tier1URL != "":
		if u, err = parseHTTPURL("-tier1-url", tier1URL); err != nil {
			return nil, nil, err
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
	case isAPIGateway(u.Hostname()), strings.HasSuffix(u.Path, Tier1Prefix):
	default:
		u.Path += Tier1Prefix
	}
	return u, &site, nil
}

func parseHTTPURL(flagName, raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q is not an http(s) URL (e.g. %s)", flagName, raw, defaultAdminURL)
	}
	return u, nil
}

// isAPIGateway reports an execute-api host (<id>.execute-api.<region>.amazonaws.com).
func isAPIGateway(host string) bool { return apiRegion(host) != "" }

// sendAdmin sends an admin request and prints the answer, indented: on
// stdout when it is a 2xx, else on stderr with the status and, where the
// cause is clear, what to change.
func sendAdmin(inv invocation, req *http.Request, tier int) int {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		host := req.URL.Scheme + "://" + req.URL.Host
		fmt.Fprintf(inv.Stderr, "vwr admin: cannot reach %s: %v\n  Is vwr running there? Point -url (or VWR_URL) at the site's base URL.\n", host, unwrapURLError(err))
		return exitError
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var pretty bytes.Buffer
	isJSON := json.Indent(&pretty, out, "", "  ") == nil
	if isJSON {
		out = append(pretty.Bytes(), '\n')
	}
	if resp.StatusCode/100 == 2 {
		_, _ = inv.Stdout.Write(out)
		return exitOK
	}
	fmt.Fprintf(inv.Stderr, "vwr admin: %s %s: %s\n", req.Method, req.URL.Path, resp.Status)
	if isJSON {
		_, _ = inv.Stderr.Write(out)
	}
	if hint := adminHint(tier, resp.StatusCode, out, isJSON); hint != "" {
		fmt.Fprintf(inv.Stderr, "  %s\n", hint)
	}
	return exitError
}

// adminHint names the likely fix for a failed admin call.
func adminHint(tier, status int, body []byte, isJSON bool) string {
	var e struct{ Error, Code string }
	if isJSON {
		_ = json.Unmarshal(body, &e)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		if tier == 2 {
			return "The queue refused the admin token: set QUEUE_ADMIN_TOKEN (or VWR_ADMIN_TOKEN) to the one it was started with."
		}
		return "Tier 1 refused the credentials: set VWR_ADMIN_TOKEN to the one it was started with, or, on AWS, use -auth sigv4 with -tier1-url set to the ApiUrl output."
	case status == http.StatusNotFound && (!isJSON || e.Error == jsonhttp.ErrNotFound.Message):
		if tier == 2 {
			return "No Tier 2 admin API there: -url must be the site's base URL (e.g. " + defaultAdminURL + ", not …/vwr-api); a queue started without QUEUE_ADMIN_TOKEN has its admin routes off."
		}
		return "No Tier 1 admin API there: -url must be the site's base URL (Tier 1 is found under /vwr-api), or set -tier1-url to Tier 1's API."
	}
	return ""
}

// unwrapURLError drops url.Error's "Get \"…\":" prefix, already said.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// authorizeAdmin adds the bearer token or, for Tier 1, a SigV4 signature.
func authorizeAdmin(ctx context.Context, req *http.Request, body []byte, tier int, mode string, env adminEnv, environ map[string]string) error {
	if mode == "auto" {
		mode = "bearer"
		if strings.HasSuffix(req.URL.Hostname(), ".amazonaws.com") {
			mode = "sigv4"
		}
	}
	switch mode {
	case "bearer":
		tok, name := env.Token, "VWR_ADMIN_TOKEN"
		if tier == 2 && env.QueueToken != "" {
			tok = env.QueueToken
		}
		if tier == 2 {
			name = "QUEUE_ADMIN_TOKEN (or VWR_ADMIN_TOKEN)"
		}
		if tok == "" {
			if !isLoopback(net.JoinHostPort(req.URL.Hostname(), "0")) {
				return fmt.Errorf("%s is required for %s (only a loopback URL defaults to %q, as vwr local does)", name, req.URL.Host, localAdminToken)
			}
			tok = localAdminToken
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return nil
	case "sigv4":
		return signSigV4(ctx, req, body, environ)
	default:
		return fmt.Errorf("-auth must be auto, bearer or sigv4, not %q", mode)
	}
}

// signSigV4 signs req for execute-api with the default AWS credential chain
// (or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY from environ), as API
// Gateway's AWS_IAM authorizer expects.
func signSigV4(ctx context.Context, req *http.Request, body []byte, environ map[string]string) error {
	s, err := newSigV4(ctx, req.URL.Hostname(), environ)
	if err != nil {
		return err
	}
	return s.sign(ctx, req, body)
}

// sigV4 signs requests for execute-api in one region with credentials from
// the default AWS chain, loaded once (the SDK caches and refreshes them).
type sigV4 struct {
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
}

// awsChainEnv is what the SigV4 signer reads from the environment: the
// credentials, or where the SDK's default chain finds them.
type awsChainEnv struct {
	AccessKey       string `env:"AWS_ACCESS_KEY_ID"`
	SecretKey       string `env:"AWS_SECRET_ACCESS_KEY"`
	SessionToken    string `env:"AWS_SESSION_TOKEN"`
	Profile         string `env:"AWS_PROFILE"`
	CredentialsFile string `env:"AWS_SHARED_CREDENTIALS_FILE"`
	ConfigFile      string `env:"AWS_CONFIG_FILE"`
	NoIMDS          bool   `env:"AWS_EC2_METADATA_DISABLED"`
	Region          string `env:"AWS_REGION"`
}

// newSigV4 loads the AWS configuration for requests to host: static
// credentials from environ when both keys are set, else the default chain
// (profile, SSO, role), looking where environ's AWS_SHARED_CREDENTIALS_FILE,
// AWS_CONFIG_FILE, AWS_PROFILE and AWS_EC2_METADATA_DISABLED say.
func newSigV4(ctx context.Context, host string, environ map[string]string) (*sigV4, error) {
	var e awsChainEnv
	if err := envconf.Parse(&e, environ); err != nil {
		return nil, fmt.Errorf("sigv4: %w", err)
	}
	var opts []func(*awsconfig.LoadOptions) error
	if e.AccessKey != "" && e.SecretKey != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(e.AccessKey, e.SecretKey, e.SessionToken)))
	}
	if e.CredentialsFile != "" {
		opts = append(opts, awsconfig.WithSharedCredentialsFiles([]string{e.CredentialsFile}))
	}
	if e.ConfigFile != "" {
		opts = append(opts, awsconfig.WithSharedConfigFiles([]string{e.ConfigFile}))
	}
	if e.Profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(e.Profile))
	}
	if e.NoIMDS {
		opts = append(opts, awsconfig.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("sigv4: load AWS config: %w", err)
	}
	region := apiRegion(host)
	if region == "" {
		region = orDefault(e.Region, cfg.Region)
	}
	if region == "" {
		return nil, errors.New("sigv4: set AWS_REGION (the URL does not name one)")
	}
	if cfg.Credentials == nil {
		return nil, errors.New("sigv4: no AWS credentials (set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	}
	return &sigV4{creds: cfg.Credentials, region: region, signer: v4.NewSigner()}, nil
}

// check retrieves the credentials once, so a missing one is said at start.
func (s *sigV4) check(ctx context.Context) error {
	if _, err := s.creds.Retrieve(ctx); err != nil {
		return fmt.Errorf("sigv4: no usable AWS credentials (set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): %w", err)
	}
	return nil
}

func (s *sigV4) sign(ctx context.Context, req *http.Request, body []byte) error {
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("sigv4: AWS credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	return s.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", s.region, time.Now())
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
func scheduleBody(opens, from string) (map[string]any, error) {
	if opens == "" {
		return nil, errors.New("schedule needs -opens RFC3339 (e.g. 2026-12-01T10:00:00Z)")
	}
	at, err := time.Parse(time.RFC3339, opens)
	if err != nil {
		return nil, fmt.Errorf("-opens %q is not RFC 3339 (e.g. 2026-12-01T10:00:00Z)", opens)
	}
	body := map[string]any{"opensAt": at.UTC().Format(time.RFC3339)}
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
