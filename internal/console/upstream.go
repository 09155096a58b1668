package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Upstream reaches a deployment's admin APIs on the operator's behalf. The
// browser never talks to them: it holds no AWS credentials and no admin
// token, only its console session.
type Upstream struct {
	// Tier1 is Tier 1's API root: its routes are Tier1 + "/vwr/…" (a
	// deployment's ApiUrl, or <site>/vwr-api behind the CDN or in vwr local).
	Tier1 *url.URL
	// Tier2 is the site's base URL: Tier 2's routes are Tier2 + "/api/queue/…".
	Tier2 *url.URL
	// Authorize adds the operator's credentials to an admin request of tier
	// 1 or 2: a bearer token, or a SigV4 signature over body for Tier 1's
	// IAM-protected routes on AWS. Public routes (the draw document) are not
	// passed to it.
	Authorize func(ctx context.Context, tier int, req *http.Request, body []byte) error
	// Client sends the requests; nil: a client with a 10 s timeout.
	Client *http.Client
}

// call is one request to an upstream API.
type call struct {
	Tier   int
	Method string
	Path   string // below the tier's root, e.g. /vwr/admin/status/E
	Body   []byte // JSON, or nil
	Public bool   // no credentials (the draw document)
}

// answer is what an upstream API answered.
type answer struct {
	Status int
	Body   []byte // at most maxAnswerBytes
}

// maxAnswerBytes bounds what the console reads of one upstream answer.
const maxAnswerBytes = 4 << 20

// errUnreachable wraps a request that got no answer at all.
var errUnreachable = errors.New("console: upstream unreachable")

// errCredentials wraps a failure to sign or authorize a request.
var errCredentials = errors.New("console: credentials")

var defaultClient = &http.Client{Timeout: 10 * time.Second}

// URL is where c goes.
func (u *Upstream) URL(c call) string {
	root := u.Tier2
	if c.Tier == 1 {
		root = u.Tier1
	}
	p, q, _ := strings.Cut(c.Path, "?")
	out := *root
	out.Path = strings.TrimSuffix(root.Path, "/") + p
	out.RawPath, out.RawQuery = "", q
	return out.String()
}

// do sends c and reads the answer.
func (u *Upstream) do(ctx context.Context, c call) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, c.Method, u.URL(c), bytes.NewReader(c.Body))
	if err != nil {
		return answer{}, fmt.Errorf("console: %s %s: %w", c.Method, c.Path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "vwr-console")
	if c.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if !c.Public && u.Authorize != nil {
		if err := u.Authorize(ctx, c.Tier, req, c.Body); err != nil {
			return answer{}, fmt.Errorf("%w: tier %d: %w", errCredentials, c.Tier, err)
		}
	}
	client := u.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%w: %s %s: %w", errUnreachable, c.Method, req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return answer{}, fmt.Errorf("%w: %s %s: reading the answer: %w", errUnreachable, c.Method, req.URL.Redacted(), err)
	}
	return answer{Status: resp.StatusCode, Body: body}, nil
}
