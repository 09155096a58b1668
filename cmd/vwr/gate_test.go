package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
)

// pythonSite is the site behind the gate in these tests: Python's own
// http.server, answering every request with what it received as JSON.
const pythonSite = `
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Site(BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.dumps({
            "server": "python",
            "method": self.command,
            "path": self.path,
            "body": self.rfile.read(n).decode(),
            "user": self.headers.get("X-Queue-Entry-User"),
            "event": self.headers.get("X-Queue-Entry-Event"),
            "bypass": self.headers.get("X-CloudFront-Verified"),
            "forwardedFor": self.headers.get("X-Forwarded-For"),
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_PUT = do_DELETE = answer
    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Site).serve_forever()
`

var gateServingRE = regexp.MustCompile(`serving on (http://\S+)`)

// startGate runs `vwr gate` with args and env until the test ends, and
// returns its base URL.
func startGate(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &syncBuf{}, &syncBuf{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, invocation{Args: append([]string{"gate", "-addr", "127.0.0.1:0"}, args...), Stdout: out, Stderr: errb, Env: env})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("vwr gate exited %d: %s", code, errb)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("vwr gate did not stop")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := gateServingRE.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("vwr gate exited %d:\n%s%s", code, out, errb)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("vwr gate did not start:\n%s%s", out, errb)
		}
	}
}

type gateAnswer struct {
	status   int
	location string
	retry    string
	body     map[string]any
}

func gateCall(t *testing.T, method, url string, hdr map[string]string, body string) gateAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// Redirects are answers here, not something to follow.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := gateAnswer{status: resp.StatusCode, location: resp.Header.Get("Location"), retry: resp.Header.Get("Retry-After")}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

// TestGateInFrontOfPython: `vwr gate` guards a Python site exactly as the Go
// gate guards a Go one: no token is a 403 (fetch) or a 302 (page load), a
// valid token reaches the site with the verified visitor in headers, and
// expired, foreign and forged tokens, hostile paths and spoofed headers are
// refused or stripped.
func TestGateInFrontOfPython(t *testing.T) {
	t.Parallel()
	site := testenv.PythonHTTP(t, pythonSite)
	secret := token.RandomSecret()
	env := map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": secret}
	gate := startGate(t, env, "-upstream", site, "-prefixes", "/api/seats/,/checkout/")
	keys, err := token.NewKeyRing("", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	entry := func(keys *token.KeyRing, ev, uid string, exp time.Time) string {
		raw, err := keys.IssueEntry(token.Entry{EventID: ev, UserID: uid, IssuedAt: now.Add(-time.Minute), ExpiresAt: exp})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	valid := entry(keys, "E1", "alice", now.Add(2*time.Minute))
	other, _ := token.NewKeyRing("", []byte(token.RandomSecret()))
	tier1, err := keys.IssueTier1(token.Tier1{Subject: "alice", EventID: "E1", Position: 1, IssuedAt: now, ExpiresAt: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	const page = "text/html,application/xhtml+xml,*/*;q=0.8"
	refusals := []struct {
		name, method, path string
		hdr                map[string]string
		code, location     string
	}{
		{"no token, fetch", "GET", "/api/seats/E1", nil, "entry_token_required", ""},
		{"no token, page load", "GET", "/checkout/E1", map[string]string{"Accept": page}, "", "/vwr/queue.html?event=E1"},
		{"no token, form post", "POST", "/checkout/E1", map[string]string{"Accept": page}, "entry_token_required", ""},
		{"expired", "GET", "/api/seats/E1", map[string]string{"x-queue-entry-token": entry(keys, "E1", "alice", now.Add(-time.Second))}, "entry_token_expired", ""},
		{"expired, page load", "GET", "/checkout/E1", map[string]string{"Accept": page, "Cookie": "urr-entry-token=" + entry(keys, "E1", "alice", now.Add(-time.Second))}, "", "/vwr/queue.html?event=E1"},
		{"another event's token", "GET", "/api/seats/E2", map[string]string{"x-queue-entry-token": valid}, "entry_token_invalid", ""},
		{"another queue's token", "GET", "/api/seats/E1", map[string]string{"x-queue-entry-token": entry(other, "E1", "alice", now.Add(time.Minute))}, "entry_token_invalid", ""},
		{"a Tier 1 pass", "GET", "/api/seats/E1", map[string]string{"Cookie": "urr-entry-token=" + tier1}, "entry_token_invalid", ""},
		{"tampered signature", "GET", "/api/seats/E1", map[string]string{"x-queue-entry-token": valid[:len(valid)-2] + "AA"}, "entry_token_invalid", ""},
		{"bypass header without a configured secret", "GET", "/api/seats/E1", map[string]string{"X-CloudFront-Verified": "true"}, "entry_token_required", ""},
		{"upper-case path", "GET", "/API/SEATS/E1", nil, "entry_token_required", ""},
		{"path parameter", "GET", "/api/seats;jsessionid=1/E1", nil, "entry_token_required", ""},
		{"dot segments", "GET", "/public/../api/seats/E1", nil, "entry_token_required", ""},
		{"encoded slash", "GET", "/api%2Fseats/E1", nil, "entry_token_required", ""},
	}
	for _, c := range refusals {
		a := gateCall(t, c.method, gate+c.path, c.hdr, "")
		if c.location != "" {
			if a.status != http.StatusFound || a.location != c.location {
				t.Errorf("%s: %d Location %q, want 302 to %q", c.name, a.status, a.location, c.location)
			}
			continue
		}
		if a.status != http.StatusForbidden || a.body["code"] != c.code || a.body["redirectTo"] != "/vwr/queue.html?event=E1" && a.body["redirectTo"] != "/vwr/queue.html?event=E2" {
			t.Errorf("%s: %d %v, want 403 %s", c.name, a.status, a.body, c.code)
		}
		if a.body["server"] != nil {
			t.Errorf("%s: the request reached the site", c.name)
		}
	}

	// A valid token reaches the Python site, body and all; the site learns
	// who came through, and a client cannot claim to be someone else.
	a := gateCall(t, "POST", gate+"/api/seats/E1/hold?x=1", map[string]string{
		"Cookie": "urr-entry-token=" + valid, "Content-Type": "application/json",
		"X-Queue-Entry-User": "mallory", "X-Queue-Entry-Event": "E9", "X-Forwarded-For": "6.6.6.6",
	}, `{"seatId":"A1"}`)
	if a.status != 200 || a.body["server"] != "python" || a.body["method"] != "POST" || a.body["path"] != "/api/seats/E1/hold?x=1" ||
		a.body["body"] != `{"seatId":"A1"}` || a.body["user"] != "alice" || a.body["event"] != "E1" {
		t.Fatalf("valid token: %d %v", a.status, a.body)
	}
	if ff, _ := a.body["forwardedFor"].(string); ff != "127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q: a client-sent value must not be passed on", ff)
	}
	a = gateCall(t, "GET", gate+"/api/seats/E1", map[string]string{"x-queue-entry-token": valid}, "")
	if a.status != 200 || a.body["user"] != "alice" {
		t.Fatalf("valid header token: %d %v", a.status, a.body)
	}
	// Unguarded paths pass as they are, with any spoofed identity removed.
	a = gateCall(t, "GET", gate+"/events/E1?lang=ko", map[string]string{"X-Queue-Entry-User": "mallory", "X-CloudFront-Verified": "x"}, "")
	if a.status != 200 || a.body["path"] != "/events/E1?lang=ko" || a.body["user"] != nil || a.body["bypass"] != nil {
		t.Fatalf("unguarded path: %d %v", a.status, a.body)
	}

	// -deny json answers 403 even to a page load; -redirect-to names the page.
	jsonGate := startGate(t, env, "-upstream", site, "-deny", "json", "-redirect-to", "/events/{event}")
	a = gateCall(t, "GET", jsonGate+"/api/seats/E1", map[string]string{"Accept": page}, "")
	if a.status != 403 || a.body["redirectTo"] != "/events/E1" {
		t.Errorf("-deny json page load: %d %v", a.status, a.body)
	}
}

func TestGateUpstreamDownAndBadSetup(t *testing.T) {
	t.Parallel()
	secret := token.RandomSecret()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	gate := startGate(t, map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": secret}, "-upstream", dead)
	a := gateCall(t, "GET", gate+"/index.html", nil, "")
	if a.status != 503 || a.body["code"] != "upstream_unavailable" || a.retry == "" {
		t.Errorf("upstream down: %d %v Retry-After %q", a.status, a.body, a.retry)
	}
	if strings.Contains(fmt.Sprint(a.body), "connection refused") {
		t.Errorf("the error text of the dial reached the client: %v", a.body)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cases := []struct {
		env  map[string]string
		args []string
		code int
		want []string
	}{
		{nil, nil, exitUsage, []string{"GATE_UPSTREAM (-upstream) is required", "QUEUE_ENTRY_TOKEN_SECRET is required"}},
		{map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": "short"}, []string{"-upstream", "ftp://x"}, exitUsage, []string{"must be an http(s) URL", "at least 32 bytes"}},
		{map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": secret, "QUEUE_GATE_DENY": "maybe"}, []string{"-upstream", dead}, exitUsage, []string{"QUEUE_GATE_DENY must be auto, json or redirect"}},
		{map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": secret}, []string{"-upstream", dead, "-prefixes", "api/"}, exitUsage, []string{`QUEUE_GATE_PREFIXES: "api/" must start with /`}},
		{map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": secret}, []string{"-upstream", dead, "-addr", busy.Addr().String()}, exitError, []string{"address already in use", "choose another address with -addr"}},
	}
	for _, c := range cases {
		code, _, stderr := runVWR(t, c.env, append([]string{"gate"}, c.args...)...)
		if code != c.code {
			t.Errorf("vwr gate %v: exit %d, want %d\n%s", c.args, code, c.code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("vwr gate %v: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
	}
}
