package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Not parallel: see the note above TestLocalBadArgs.

func TestDemoVenue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, rows, perRow int }{{1, 1, 1}, {5, 1, 5}, {8, 1, 8}, {24, 3, 8}, {25, 4, 8}} {
		if v := demoVenue(tc.n); v.Rows != tc.rows || v.PerRow != tc.perRow {
			t.Errorf("demoVenue(%d) = %d×%d, want %d×%d", tc.n, v.Rows, v.PerRow, tc.rows, tc.perRow)
		}
	}
}

func TestLocalDemoBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-demo-threshold", "0"}, "-demo-threshold"},
		{[]string{"-demo-event", "a b"}, "-demo-event"},
		{[]string{"-demo-seats", "0"}, "-demo-seats"},
		{[]string{"-demo", "-demo-batch", "0"}, "-demo-batch"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), invocation{
			Args:   append([]string{"local", "-addr", "127.0.0.1:0"}, tc.args...),
			Stdout: &out, Stderr: &errb, Env: map[string]string{},
		})
		if code != exitError || !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("%v: code %d stderr %q", tc.args, code, errb.String())
		}
	}
}

func TestLocalDemoWiring(t *testing.T) {
	env := map[string]string{"QUEUE_ADMIN_TOKEN": "qa", "VWR_ADMIN_TOKEN": "ta"}
	base, out := startLocal(t, env, "-demo", "-demo-threshold", "2", "-demo-crowd", "2", "-tier1-tick", "1h")
	if !strings.Contains(out.String(), "demo: open "+base+"/events/demo") {
		t.Fatalf("no URL to open printed:\n%s", out.String())
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	tests := []struct {
		name, path, location, contains string
		code                           int
	}{
		{"root goes to the demo event", "/", "/events/demo", "", http.StatusFound},
		{"event page without a pass goes to the waiting room", "/events/demo", "/vwr/?event=demo&return=%2Fevents%2Fdemo", "", http.StatusFound},
		{"waiting page", "/vwr/?event=demo", "", "/vwr/vwr.js", http.StatusOK},
		{"queue page asset", "/vwr/queue.js", "", "/api/queue", http.StatusOK},
		{"seat page asset", "/demo/assets/seats.js", "", "/api/seats/", http.StatusOK},
		{"seat API needs an entry token", "/api/seats/demo", "", `"code":"entry_token_required"`, http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(tc.path)
			if resp.StatusCode != tc.code || resp.Header.Get("Location") != tc.location || !strings.Contains(body, tc.contains) {
				t.Fatalf("%s: %d Location=%q body %.120q", tc.path, resp.StatusCode, resp.Header.Get("Location"), body)
			}
		})
	}

	// The gate's refusal names a page that exists: the queue page for the event.
	resp, body := get("/api/seats/demo")
	var refusal struct{ RedirectTo string }
	if err := json.Unmarshal([]byte(body), &refusal); err != nil || resp.StatusCode != http.StatusForbidden || refusal.RedirectTo != "/vwr/queue.html?event=demo" {
		t.Fatalf("refusal %d %s", resp.StatusCode, body)
	}
	if resp, body = get(refusal.RedirectTo); resp.StatusCode != http.StatusOK || !strings.Contains(body, "/vwr/queue.js") {
		t.Fatalf("redirectTo %s: %d %.120q", refusal.RedirectTo, resp.StatusCode, body)
	}
	// A page load of a guarded path is sent there at once.
	if resp, _ = get("/api/seats/demo", "Accept", "text/html"); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != refusal.RedirectTo {
		t.Fatalf("page load of a guarded path: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	// -demo activated Tier 1, set the Tier 2 threshold, and the page load above let the crowd in.
	_, body = get("/vwr-api/vwr/admin/status/demo", "Authorization", "Bearer ta")
	var t1 struct {
		Active    bool  `json:"active"`
		BatchSize int64 `json:"batchSize"`
		Assigned  int64 `json:"assigned"`
	}
	if err := json.Unmarshal([]byte(body), &t1); err != nil || !t1.Active || t1.BatchSize != 3 || t1.Assigned != 2 {
		t.Fatalf("tier 1 status %s (%v)", body, err)
	}
	_, body = get("/api/queue/admin/stats/demo", "Authorization", "Bearer qa")
	if !strings.Contains(body, `"threshold":2`) {
		t.Fatalf("tier 2 stats %s", body)
	}
}

// TestLocalEdgeHoldsAgainstEncodedPaths: the demo event's page is reached
// only with a pass, however its path is written. Each request is sent as
// written over a raw connection.
func TestLocalEdgeHoldsAgainstEncodedPaths(t *testing.T) {
	base, _ := startLocal(t, map[string]string{}, "-demo", "-demo-crowd", "0", "-tier1-tick", "1h")
	addr := strings.TrimPrefix(base, "http://")
	for _, target := range []string{
		"/%65vents/demo", "/ev%65nts/demo", "/%65%76%65%6e%74%73/demo", "/events/%64emo", "/EVENTS/demo",
		"/x/%2e%2e/events/demo", "//events/demo", "/events//demo", "/events%2Fdemo", "/events%5Cdemo",
		"/events;x/demo", "/%2565vents/demo", "/events/demo%2F..%2Fx",
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, addr)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode == http.StatusOK:
			t.Errorf("GET %s without a pass: 200 %.80q", target, body)
		case resp.StatusCode == http.StatusFound && !strings.HasPrefix(loc, "/vwr/?event=demo&return=%2Fevents%2Fdemo"):
			t.Errorf("GET %s: 302 to %q, not the waiting room", target, loc)
		case (resp.StatusCode == http.StatusMovedPermanently || resp.StatusCode == http.StatusTemporaryRedirect) && loc != "/events/demo":
			// ServeMux sends a path with "//" to its clean form, which then meets the edge.
			t.Errorf("GET %s: %d to %q", target, resp.StatusCode, loc)
		case resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusMovedPermanently && resp.StatusCode != http.StatusTemporaryRedirect &&
			resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound:
			t.Errorf("GET %s: %d %.80q", target, resp.StatusCode, body)
		}
	}
}
