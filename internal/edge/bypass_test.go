package edge

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
)

// The hostile side of the canonical path: requests a visitor without a pass
// writes by hand (percent-encoded letters, dot segments, doubled slashes,
// encoded slashes and backslashes, path parameters, double encoding, case)
// sent over a raw TCP connection to a real server laid out as vwr local is:
// a ServeMux with the edge check on /events/ and the protected site behind
// it. None of them may reach the protected page.

// protectedSite answers /events/{event}[/…] with a page naming the event, as
// the demo site and most origins would, routing on the decoded path.
func protectedSite() http.Handler {
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "PROTECTED PAGE of %s at %s", r.PathValue("event"), r.URL.Path)
	}
	mux.HandleFunc("GET /events/{event}", page)
	mux.HandleFunc("GET /events/{event}/{rest...}", page)
	return mux
}

// rawGet sends "GET target HTTP/1.1" exactly as written, with an optional
// pass cookie, and returns the status line's code, the Location and body.
func rawGet(t *testing.T, addr, target, cookie string) (int, string, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + target + " HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n"
	if cookie != "" {
		req += "Cookie: " + CookieName + "=" + cookie + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// hostilePaths are request targets that name the demo event's protected
// page to some origin or other, in a form a naive prefix check misses.
var hostilePaths = []string{
	"/%65vents/demo",
	"/ev%65nts/demo",
	"/%65%76%65%6e%74%73/demo",
	"/%45VENTS/demo",
	"/EVENTS/demo",
	"/Events/demo/seats",
	"/events/%64emo",
	"/events/%64%65%6D%6F/seats",
	"/x/../events/demo",
	"/x/%2e%2e/events/demo",
	"/x/%2E%2E/events/demo",
	"/x/.%2e/events/demo",
	"/./events/demo",
	"/%2e/events/demo",
	"//events/demo",
	"/events//demo",
	"/events/./demo",
	"/events%2Fdemo",
	"/events%2fdemo",
	"/events%5Cdemo",
	"/events\\demo",
	"/%2Fevents/demo",
	"/x%2F..%2Fevents/demo",
	"/events;x/demo",
	"/%2565vents/demo",
	"/events/demo%2F..%2F..%2Fx",
	"/events/x/../demo",
	"/events/x/%2e%2e/demo",
	"/vwr/../events/demo",
}

func TestHostilePathsNeverReachTheProtectedPage(t *testing.T) {
	t.Parallel()
	keys := ring(t, "k1", strings.Repeat("h", 40))
	mux := http.NewServeMux()
	mux.Handle("/events/", Middleware(keys, clock.NewManual(now), protectedSite()))
	mux.Handle("/", protectedSite()) // whatever the outer mux does not route to the edge
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, p := range hostilePaths {
		code, loc, body := rawGet(t, addr, p, "")
		if strings.Contains(body, "PROTECTED PAGE") {
			t.Errorf("GET %s without a pass reached the protected page: %d %q", p, code, body)
			continue
		}
		if code == http.StatusFound && !strings.HasPrefix(loc, WaitingRoom+"?") {
			t.Errorf("GET %s: redirected to %q, not the waiting room", p, loc)
		}
	}
	// With a pass for the event, the same paths reach the page, and the
	// site sees the path the edge checked.
	valid := pass(t, keys, "demo", now.Add(time.Minute))
	code, _, body := rawGet(t, addr, "/%65vents/%64emo/seats", valid)
	if code != http.StatusOK || body != "PROTECTED PAGE of demo at /events/demo/seats" {
		t.Fatalf("with a pass: %d %q", code, body)
	}
}
