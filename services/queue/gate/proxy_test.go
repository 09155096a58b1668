package gate_test

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue/gate"
)

// The proxy in front of a site that routes on the path as it arrives, with
// no dot-segment resolution or decoding of its own (Python's http.server, a
// hand-written router): a visitor holding a pass for event B writes paths
// that name event A to such a site, by hand, over raw TCP. Whatever the
// gate let through must reach the site at the path the gate checked, so
// the site's first segment after the prefix is B, never A.
func TestProxyForwardsThePathItChecked(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.RequestURI)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(upstream.Close)
	keys, err := token.NewKeyRing("e1", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Config{Keys: keys, Clock: clock.NewManual(t0), Deny: gate.DenyJSON})
	if err != nil {
		t.Fatal(err)
	}
	up, _ := url.Parse(upstream.URL)
	srv := httptest.NewServer(g.Proxy(up, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(srv.Close)
	passB, err := keys.IssueEntry(token.Entry{EventID: "B", UserID: "u1", IssuedAt: t0.Add(-time.Minute), ExpiresAt: t0.Add(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// The pass works for B and not for A, so what follows means something.
	if code := rawProxyGet(t, strings.TrimPrefix(srv.URL, "http://"), "/api/seats/B/reserve", passB); code != http.StatusNoContent || len(seen) != 1 || seen[0] != "/api/seats/B/reserve" {
		t.Fatalf("a pass for B on B: %d, site saw %q", code, seen)
	}
	if code := rawProxyGet(t, strings.TrimPrefix(srv.URL, "http://"), "/api/seats/A/reserve", passB); code != http.StatusForbidden {
		t.Fatalf("a pass for B on A: %d, want 403", code)
	}
	forwarded := 0
	for _, target := range []string{
		"/api/seats/A/../B/reserve",
		"/api/seats/A/%2e%2e/B/reserve",
		"/api/seats/A%2F..%2FB/reserve",
		"/api/seats/A/x/../../B/reserve",
		"/api/seats//A/../B/reserve",
		"/api/seats/A;x/../B/reserve",
		"/api/seats/A\\..\\B/reserve",
		"/api/reservations/A/../B",
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		code := rawProxyGet(t, strings.TrimPrefix(srv.URL, "http://"), target, passB)
		mu.Lock()
		got := append([]string(nil), seen...)
		mu.Unlock()
		if code >= 400 {
			if len(got) != 0 {
				t.Errorf("GET %s: refused with %d but the site saw %q", target, code, got)
			}
			continue
		}
		forwarded++
		for _, p := range got {
			segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
			if len(segs) < 3 || segs[2] != "B" {
				t.Errorf("GET %s with a pass for B: %d, and the site saw %q, whose event segment is not B", target, code, p)
			}
		}
	}
	if forwarded == 0 {
		t.Fatal("every hostile path was refused: the forwarding half of the rule went untested")
	}
}

func rawProxyGet(t *testing.T, addr, target, entry string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + target + " HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n" +
		"Accept: application/json\r\nX-Queue-Entry-Token: " + entry + "\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
