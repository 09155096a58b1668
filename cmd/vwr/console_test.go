package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/vwr-go/vwr/internal/testenv"
)

// consoleCall sends a request to a console with a bearer token and decodes
// the JSON answer.
func consoleCall(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out
}

func field(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

// TestConsoleOnLocal: vwr local serves the console at /vwr/console/ behind
// its admin tokens (either tier's), lists the events both tiers know (a
// Tier 2-only event too), shows one live, and its controls change the
// real state through the admin APIs.
func TestConsoleOnLocal(t *testing.T) {
	const tok1, tok2 = "console-tier1-token", "console-tier2-token"
	base, out := startLocal(t, map[string]string{"VWR_ADMIN_TOKEN": tok1, "QUEUE_ADMIN_TOKEN": tok2, "QUEUE_OPEN_EVENTS": "false"}, "-tier1-tick", "1h")
	if !strings.Contains(out.String(), "operator console: "+base+"/vwr/console/") {
		t.Fatalf("vwr local did not announce the console:\n%s", out)
	}
	ev, only2 := testenv.UniqueID(t), testenv.UniqueID(t)+"-t2"
	admin := func(tok, method, path, body string) map[string]any {
		t.Helper()
		r := do(t, method, base+path, body, map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
		if r.status/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.raw)
		}
		return r.body
	}
	admin(tok1, "POST", "/vwr-api/vwr/admin/activate/"+ev, `{"shards":1,"batchSize":5}`)
	admin(tok2, "PUT", "/api/queue/admin/threshold/"+ev, `{"threshold":4}`)
	admin(tok2, "PUT", "/api/queue/admin/threshold/"+only2, `{"threshold":2}`)
	for range 3 {
		admin(tok1, "POST", "/vwr-api/vwr/assign/"+ev, "")
	}

	live := base + "/vwr/console/api/live?event=" + ev
	if code, _ := consoleCall(t, "GET", live, "local-admin", ""); code != 401 {
		t.Fatalf("the default token opened a console whose tokens were set: %d", code)
	}
	for _, tok := range []string{tok1, tok2} {
		if code, _ := consoleCall(t, "GET", base+"/vwr/console/api/session", tok, ""); code != 200 {
			t.Fatalf("token %s does not open the console: %d", tok, code)
		}
	}
	code, body := consoleCall(t, "GET", live, tok1, "")
	if code != 200 {
		t.Fatalf("live: %d %v", code, body)
	}
	rows := map[string]map[string]any{}
	for _, r := range field(body, "events").([]any) {
		m := r.(map[string]any)
		rows[m["eventId"].(string)] = m
	}
	if r := rows[ev]; r == nil || r["state"] != "active" || field(r, "tier1", "waiting") != float64(3) || field(r, "tier2", "threshold") != float64(4) {
		t.Errorf("list row of %s: %v", ev, r)
	}
	// Tier 1 never activated it: its waiting room lets everyone through.
	if r := rows[only2]; r == nil || r["tier1"] != nil || r["state"] != "inactive" || field(r, "tier2", "threshold") != float64(2) {
		t.Errorf("list row of the Tier 2-only event %s: %v", only2, r)
	}
	e := field(body, "event")
	if field(e, "tier1", "assigned") != float64(3) || field(e, "tier2", "threshold") != float64(4) || len(field(e, "samples").([]any)) == 0 ||
		field(e, "projection", "tier1", "basis") != "no-rate" {
		t.Errorf("live event: %v", e)
	}

	act := func(action, body string) map[string]any {
		t.Helper()
		code, ans := consoleCall(t, "POST", base+"/vwr/console/api/events/"+ev+"/"+action, tok2, body)
		if code != 200 {
			t.Fatalf("console %s: %d %v", action, code, ans)
		}
		return ans
	}
	if a := act("pause", ""); a["status"] != float64(200) || field(a, "answer", "paused") != true || a["url"] != base+"/vwr-api/vwr/admin/pause/"+ev {
		t.Fatalf("pause: %v", a)
	}
	if a := act("batch", `{"batchSize":11}`); field(a, "answer", "batchSize") != float64(11) || field(a, "answer", "paused") != true {
		t.Fatalf("batch: %v", a)
	}
	if a := act("advance", `{"by":2}`); field(a, "answer", "servingCounter") != float64(2) {
		t.Fatalf("advance: %v", a)
	}
	if a := act("threshold", `{"threshold":9}`); a["status"] != float64(200) || a["tier"] != float64(2) {
		t.Fatalf("threshold: %v", a)
	}
	// The API's refusal comes back as it was given.
	if a := act("advance", `{"by":0}`); a["status"] != float64(400) || field(a, "answer", "code") != "invalid_config" {
		t.Fatalf("advance by 0: %v", a)
	}
	if st := admin(tok1, "GET", "/vwr-api/vwr/admin/status/"+ev, ""); st["paused"] != true || st["batchSize"] != float64(11) || st["servingCounter"] != float64(2) {
		t.Errorf("Tier 1 after the console's controls: %v", st)
	}
	if st := admin(tok2, "GET", "/api/queue/admin/stats/"+ev, ""); st["threshold"] != float64(9) {
		t.Errorf("Tier 2 after the console's threshold: %v", st)
	}
	// The next readings show it: paused, its projection says so.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body = consoleCall(t, "GET", live, tok1, "")
		e := field(body, "event")
		if field(e, "state") == "paused" && field(e, "projection", "tier1", "basis") == "paused" && field(e, "tier2", "threshold") == float64(9) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console never showed the pause and the threshold: %v", e)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sigV4API stands in for API Gateway's AWS_IAM routes: it recomputes each
// request's signature with the SDK's own signer and the one secret it
// knows, and answers 403 as API Gateway does when they differ. Tier 2's
// routes on the same server take the bearer token.
type sigV4API struct {
	akid, secret, queueToken string
	good, bad                atomic.Int64
	paused                   atomic.Bool
}

var credRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$`)

func (a *sigV4API) verify(r *http.Request, body []byte) error {
	m := credRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return fmt.Errorf("no SigV4 authorization header: %q", r.Header.Get("Authorization"))
	}
	if m[1] != a.akid || m[4] != "execute-api" {
		return fmt.Errorf("credential %s for %s", m[1], m[4])
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || at.Format("20060102") != m[2] || time.Since(at).Abs() > 5*time.Minute {
		return fmt.Errorf("x-amz-date %q", r.Header.Get("X-Amz-Date"))
	}
	// The request as the client signed it: the signed headers only.
	re, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range strings.Split(m[5], ";") {
		if h != "host" {
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	re.Header.Del("Authorization")
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: a.akid, SecretAccessKey: a.secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, re, hex.EncodeToString(sum[:]), m[4], m[3], at); err != nil {
		return err
	}
	if want := re.Header.Get("Authorization"); want != r.Header.Get("Authorization") {
		return fmt.Errorf("signature mismatch")
	}
	return nil
}

func (a *sigV4API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(r.URL.Path, "/api/queue/") {
		if r.Header.Get("Authorization") != "Bearer "+a.queueToken {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"admin bearer token required","code":"unauthorized"}`)
			return
		}
		io.WriteString(w, `{"eventId":"e1","queueSize":5,"currentUsers":2,"threshold":3,"available":1,"admittedLastMinute":4,"oldestHeartbeatAgeSeconds":0,"estimatedClearSeconds":75,"recovering":false}`)
		return
	}
	if err := a.verify(r, body); err != nil {
		a.bad.Add(1)
		w.WriteHeader(403)
		io.WriteString(w, `{"message":"Forbidden"}`)
		return
	}
	a.good.Add(1)
	switch r.URL.Path {
	case "/vwr/admin/pause/e1":
		a.paused.Store(true)
	case "/vwr/admin/status/e1", "/vwr/admin/events":
	default:
		w.WriteHeader(404)
		io.WriteString(w, `{"error":"not found","code":"not_found"}`)
		return
	}
	st := fmt.Sprintf(`{"eventId":"e1","active":true,"paused":%v,"shards":1,"batchSize":50,"servingCounter":120,"maxAssigned":400,"assigned":400,"admitted":120,"waiting":280,"admitRatePerMinute":140,"shardCounters":[400],"updatedAt":"2026-11-22T10:00:00Z","pow":0}`, a.paused.Load())
	if r.URL.Path == "/vwr/admin/events" {
		st = `{"events":[` + st + `],"truncated":false}`
	}
	io.WriteString(w, st)
}

// startConsole runs `vwr console` on a free loopback port and returns its
// page URL; the console stops with the test.
func startConsole(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &syncBuf{}, &syncBuf{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, invocation{Args: append([]string{"console", "-addr", "127.0.0.1:0"}, args...), Stdout: out, Stderr: errb, Env: env})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("vwr console did not stop")
		}
	})
	re := regexp.MustCompile(`open (http://\S+/vwr/console/)`)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("vwr console exited %d:\n%s\n%s", code, out, errb)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("vwr console never said where to open it:\n%s\n%s", out, errb)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConsoleSignsTier1WithSigV4: against a deployment's IAM routes the
// console signs every Tier 1 call with the operator's AWS credentials,
// checked by the SDK's own signer on the other side; the browser's answers
// carry no credential. Wrong credentials are refused by the API, and the
// console says so rather than showing numbers.
func TestConsoleSignsTier1WithSigV4(t *testing.T) {
	t.Parallel()
	api := &sigV4API{akid: "AKIDCONSOLETEST", secret: "the-right-secret", queueToken: "queue-admin-token"}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	const consoleToken = "console-sigv4-test"
	env := func(secret string) map[string]string {
		return map[string]string{
			"AWS_ACCESS_KEY_ID": api.akid, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "eu-west-1",
			"QUEUE_ADMIN_TOKEN": api.queueToken, "VWR_CONSOLE_TOKEN": consoleToken,
		}
	}

	// The stand-in is no pushover: a request without a signature, or one
	// whose body changed after signing, is refused.
	unsigned, _ := http.NewRequest("POST", srv.URL+"/vwr/admin/pause/e1", nil)
	tampered, _ := http.NewRequest("POST", srv.URL+"/vwr/admin/pause/e1", strings.NewReader(`{"by":2}`))
	sum := sha256.Sum256([]byte(`{"by":1}`))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: api.akid, SecretAccessKey: api.secret},
		tampered, hex.EncodeToString(sum[:]), "execute-api", "eu-west-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*http.Request{"unsigned": unsigned, "tampered": tampered} {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("a %s request reached the IAM route: %d", name, resp.StatusCode)
		}
	}
	if api.paused.Load() || api.bad.Load() != 2 {
		t.Fatalf("after two forged requests: paused %v, refused %d", api.paused.Load(), api.bad.Load())
	}
	api.bad.Store(0)

	page := startConsole(t, env(api.secret), "-url", srv.URL, "-tier1-url", srv.URL, "-auth", "sigv4")
	code, body := consoleCall(t, "GET", page+"api/live?event=e1", consoleToken, "")
	e := field(body, "event")
	if code != 200 || field(e, "tier1", "servingCounter") != float64(120) || field(e, "tier2", "queueSize") != float64(5) || field(e, "errors") != nil {
		t.Fatalf("live with the right credentials: %d %v", code, body)
	}
	if field(e, "projection", "tier1", "seconds") != float64(120) { // 280 waiting ÷ 140 a minute
		t.Errorf("Tier 1 projection: %v", field(e, "projection", "tier1"))
	}
	code, ans := consoleCall(t, "POST", page+"api/events/e1/pause", consoleToken, "")
	if code != 200 || ans["status"] != float64(200) || field(ans, "answer", "paused") != true {
		t.Fatalf("pause with the right credentials: %d %v", code, ans)
	}
	if raw, _ := json.Marshal(body); strings.Contains(string(raw), api.secret) || strings.Contains(string(raw), "AWS4-HMAC") {
		t.Fatal("a credential reached the browser's answer")
	}
	if api.good.Load() < 2 || api.bad.Load() != 0 {
		t.Fatalf("signatures verified %d, refused %d", api.good.Load(), api.bad.Load())
	}

	// Wrong credentials: API Gateway's 403 comes back, for reads and controls.
	page = startConsole(t, env("a-wrong-secret"), "-url", srv.URL, "-tier1-url", srv.URL, "-auth", "sigv4")
	code, body = consoleCall(t, "GET", page+"api/live?event=e1", consoleToken, "")
	e = field(body, "event")
	if code != 200 || field(e, "tier1") != nil || field(e, "errors", "tier1", "status") != float64(403) || field(e, "tier2", "queueSize") != float64(5) {
		t.Fatalf("live with a wrong secret: %d %v", code, body)
	}
	code, ans = consoleCall(t, "POST", page+"api/events/e1/resume", consoleToken, "")
	if code != 200 || ans["status"] != float64(403) {
		t.Fatalf("resume with a wrong secret: %d %v", code, ans)
	}
	if api.bad.Load() == 0 {
		t.Fatal("the API never refused the wrong signature")
	}
	// A wrong Tier 2 token: the queue's 401 is shown.
	wrong := env(api.secret)
	wrong["QUEUE_ADMIN_TOKEN"] = "not-the-token"
	page = startConsole(t, wrong, "-url", srv.URL, "-tier1-url", srv.URL, "-auth", "sigv4")
	_, body = consoleCall(t, "GET", page+"api/live?event=e1", consoleToken, "")
	if field(body, "event", "errors", "tier2", "status") != float64(401) {
		t.Fatalf("live with a wrong Tier 2 token: %v", body)
	}
}

// TestConsoleWithoutAWSCredentials: with no credential anywhere in the
// default chain, `vwr console` stops at start and says what to set,
// rather than serving a console whose every Tier 1 call would fail. It
// empties the process's AWS variables, so it is not parallel.
func TestConsoleWithoutAWSCredentials(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
	}
	none := t.TempDir() + "/none"
	env := map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_CONFIG_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "QUEUE_ADMIN_TOKEN": "q",
	}
	code, _, stderr := runVWR(t, env, "console", "-addr", "127.0.0.1:0", "-url", "https://tickets.example.com",
		"-tier1-url", "https://abc123.execute-api.eu-west-1.amazonaws.com")
	if code != exitUsage || !strings.Contains(stderr, "needs SigV4") || !strings.Contains(stderr, "credentials") {
		t.Fatalf("vwr console without credentials: exit %d\n%s", code, stderr)
	}
}

// TestConsoleUsageErrors: what `vwr console` refuses before it serves.
func TestConsoleUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-addr", "0.0.0.0:0"}, nil, "is not a loopback address: name the client networks"},
		{[]string{"-allow", "10.0.0.0/33"}, nil, "is not a CIDR"},
		{[]string{"-url", "https://tickets.example.com"}, map[string]string{"QUEUE_ADMIN_TOKEN": "q"}, "VWR_ADMIN_TOKEN is required for Tier 1"},
		{[]string{"-url", "https://tickets.example.com", "-auth", "sigv4"}, nil, "QUEUE_ADMIN_TOKEN (or VWR_ADMIN_TOKEN) is required for Tier 2"},
		{[]string{"-auth", "magic"}, nil, "-auth must be auto, bearer or sigv4"},
		{[]string{"-url", "ftp://x"}, nil, "not an http(s) URL"},
		{[]string{"extra"}, nil, "unexpected arguments"},
		{nil, map[string]string{"VWR_CONSOLE_TOKEN": "short"}, "at least 8 bytes"},
	} {
		code, _, stderr := runVWR(t, tc.env, append([]string{"console"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("vwr console %v: exit %d\n%s\nwant %q", tc.args, code, stderr, tc.want)
		}
	}
}
