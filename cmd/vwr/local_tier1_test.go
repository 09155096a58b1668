package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// runVWR runs one vwr command in-process with env and returns its exit code,
// stdout and stderr.
func runVWR(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), invocation{Args: args, Stdout: &out, Stderr: &errb, Env: env})
	return code, out.String(), errb.String()
}

type httpResult struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func do(t *testing.T, method, url string, body string, hdr map[string]string) httpResult {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := httpResult{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// TestLocalTier1 drives Tier 1 through `vwr local` (the API Gateway v2
// adapter in front of the Lambda handlers) and `vwr admin`, with the
// advancer ticking on its own.
func TestLocalTier1(t *testing.T) {
	base, out := startLocal(t, nil, "-tier1-tick", "200ms")
	api := base + "/vwr-api"
	for _, want := range []string{
		"Tier 1 at /vwr-api/vwr/… on an embedded Redis of its own, apart from the queue's; advancer ticks every 200ms",
		"operate events with: vwr admin <action> -url http://127.0.0.1:",
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("start-up notes lack %q:\n%s", want, out.String())
		}
	}
	ev := "local-tier1"

	// Admin needs the token; the CLI defaults to it on loopback.
	if r := do(t, "POST", api+"/vwr/admin/activate/"+ev, `{"shards":2,"batchSize":2}`, nil); r.status != 401 || r.body["code"] != "unauthorized" {
		t.Fatalf("admin without token: %d %s", r.status, r.raw)
	}
	code, stdout, stderr := runVWR(t, nil, "admin", "activate", "-url", base, "-event", ev, "-shards", "2", "-batch", "2")
	if code != exitOK || !strings.Contains(stdout, `"active": true`) || !strings.Contains(stdout, `"shards": 2`) {
		t.Fatalf("vwr admin activate: %d\n%s\n%s", code, stdout, stderr)
	}

	enter := do(t, "POST", api+"/vwr/assign/"+ev, "", map[string]string{"Idempotency-Key": "visitor-1"})
	if enter.status != 201 || enter.body["active"] != true {
		t.Fatalf("assign: %d %s", enter.status, enter.raw)
	}
	if again := do(t, "POST", api+"/vwr/assign/"+ev, "", map[string]string{"Idempotency-Key": "visitor-1"}); again.body["requestId"] != enter.body["requestId"] {
		t.Fatalf("idempotent retry got %s, first %s", again.raw, enter.raw)
	}
	if r := do(t, "POST", api+"/vwr/assign/"+ev, strings.Repeat("x", 5000), nil); r.status != 413 || r.body["code"] != "body_too_large" {
		t.Fatalf("oversize: %d %s", r.status, r.raw)
	}
	if r := do(t, "POST", api+"/vwr/assign/bad%20id", "", nil); r.status != 400 || r.body["code"] != "invalid_event_id" {
		t.Fatalf("bad id: %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", api+"/vwr/nothing", "", nil); r.status != 404 || r.body["code"] != "not_found" {
		t.Fatalf("unknown Tier 1 route: %d %s", r.status, r.raw)
	}
	st := do(t, "GET", api+"/vwr/status/"+ev, "", nil)
	if st.status != 200 || st.header.Get("Cache-Control") != "public, max-age=1, stale-while-revalidate=2" || st.body["active"] != true {
		t.Fatalf("status: %d %v %s", st.status, st.header, st.raw)
	}

	// The ticker admits the visitor within a few ticks.
	rid := enter.body["requestId"].(string)
	var check httpResult
	deadline := time.Now().Add(10 * time.Second)
	for {
		check = do(t, "GET", api+"/vwr/check/"+ev+"/"+rid, "", nil)
		if check.body["admitted"] == true || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if check.status != 200 || check.body["admitted"] != true || num(check.body["position"]) != num(enter.body["position"]) {
		t.Fatalf("check never admitted: %d %s", check.status, check.raw)
	}
	cookie := check.header.Get("Set-Cookie")
	for _, want := range []string{"urr-vwr-token=" + check.body["token"].(string), "Path=/", "Max-Age=600", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("cookie %q lacks %q", cookie, want)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("local cookie %q is Secure; a browser on http://127.0.0.1 would drop it", cookie)
	}

	code, stdout, _ = runVWR(t, nil, "admin", "status", "-url", base, "-event", ev)
	if code != exitOK || !strings.Contains(stdout, `"shardCounters"`) || !strings.Contains(stdout, `"assigned": 1`) {
		t.Fatalf("vwr admin status: %d\n%s", code, stdout)
	}
	for _, action := range []string{"pause", "resume", "deactivate"} {
		if code, stdout, stderr := runVWR(t, nil, "admin", action, "-url", api, "-event", ev); code != exitOK {
			t.Fatalf("vwr admin %s: %d\n%s\n%s", action, code, stdout, stderr)
		}
	}
	if r := do(t, "POST", api+"/vwr/assign/"+ev, "", nil); r.status != 200 || r.body["admitted"] != true || r.body["token"] == "" {
		t.Fatalf("deactivated event is not pass-through: %d %s", r.status, r.raw)
	}
}

func TestAdminCLIErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		io.WriteString(w, `{"error":"admin credentials required","code":"unauthorized"}`)
	}))
	t.Cleanup(srv.Close)
	cases := []struct {
		args     []string
		env      map[string]string
		wantCode int
		wantErr  string
	}{
		{[]string{"admin"}, nil, exitUsage, "usage: vwr admin"},
		{[]string{"admin", "explode", "-event", "e"}, nil, exitUsage, `unknown action "explode" (` + "`vwr admin -h` lists them)"},
		{[]string{"admin", "status"}, nil, exitUsage, "-event is required"},
		{[]string{"admin", "status", "-event", "a/b"}, nil, exitUsage, "-event is required"},
		{[]string{"admin", "advance", "-event", "e"}, nil, exitUsage, "advance needs -by"},
		{[]string{"admin", "status", "-event", "e", "-url", "ftp://x"}, nil, exitUsage, "not an http(s) URL"},
		{[]string{"admin", "status", "-event", "e", "-url", "https://vwr.example.com"}, nil, exitUsage, "VWR_ADMIN_TOKEN is required for vwr.example.com"},
		{[]string{"admin", "stats", "-event", "e", "-url", "https://vwr.example.com"}, nil, exitUsage, "QUEUE_ADMIN_TOKEN (or VWR_ADMIN_TOKEN) is required"},
		{[]string{"admin", "status", "-event", "e"}, map[string]string{"VWR_URL": "ftp://x"}, exitUsage, `-url "ftp://x" is not an http(s) URL`},
		{[]string{"admin", "status", "-event", "e", "-auth", "magic", "-url", srv.URL}, nil, exitUsage, "-auth must be"},
		{[]string{"admin", "stats", "-event", "e", "-auth", "sigv4", "-url", srv.URL}, nil, exitUsage, "flag provided but not defined: -auth"},
		{[]string{"admin", "status", "-event", "e", "-url", srv.URL}, nil, exitError, "401 Unauthorized"},
		{[]string{"admin", "status", "-event", "e", "-url", srv.URL}, nil, exitError, "set VWR_ADMIN_TOKEN to the one it was started with"},
		{[]string{"admin", "stats", "-event", "e", "-url", srv.URL}, nil, exitError, "set QUEUE_ADMIN_TOKEN (or VWR_ADMIN_TOKEN) to the one it was started with"},
		{[]string{"admin", "status", "-event", "e", "extra"}, nil, exitUsage, "unexpected arguments"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[1:], "_"), func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runVWR(t, c.env, c.args...)
			if code != c.wantCode || !strings.Contains(stderr, c.wantErr) {
				t.Fatalf("code %d stderr %q, want %d and %q", code, stderr, c.wantCode, c.wantErr)
			}
		})
	}
}

// TestAdminCLISigV4: against a deployed API the CLI signs for execute-api.
func TestAdminCLISigV4(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, gotBody = r, string(b)
		io.WriteString(w, `{"eventId":"e","servingCounter":7}`)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDVWRTEST", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-west-1"}
	code, stdout, stderr := runVWR(t, env, "admin", "advance", "-event", "e", "-by", "7", "-auth", "sigv4", "-tier1-url", srv.URL+"/")
	if code != exitOK || !strings.Contains(stdout, `"servingCounter": 7`) {
		t.Fatalf("code %d\n%s\n%s", code, stdout, stderr)
	}
	auth := got.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDVWRTEST/") || !strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") ||
		got.Header.Get("X-Amz-Date") == "" || got.URL.Path != "/vwr/admin/advance/e" || gotBody != `{"by":7}` {
		t.Fatalf("request %s %s auth %q body %q", got.Method, got.URL.Path, auth, gotBody)
	}
	if r := apiRegion("k7x2q9ab1c.execute-api.ap-northeast-2.amazonaws.com"); r != "ap-northeast-2" {
		t.Errorf("apiRegion = %q", r)
	}
}
