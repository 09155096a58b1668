package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/edge"
	"github.com/vwr-go/vwr/internal/token"
)

// frontDoorStandIn plays CloudFront in front of a real `vwr local`, as far
// as `vwr smoke` can tell: the status document cached on its path for as
// long as Cache-Control says (X-Cache: Hit/Miss from cloudfront), and the
// default behaviour behind an edge check whose keys are "the
// KeyValueStore" (edgeKeys) and whose origin is site. Everything else goes
// to vwr local, as the /vwr/*, /vwr-api/* and /api/queue/* behaviours do.
type frontDoorStandIn struct {
	local    *httputil.ReverseProxy
	site     http.Handler // the default behaviour's origin
	edgeKeys *token.KeyRing
	cache    bool

	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	status  int
	header  http.Header
	body    []byte
	expires time.Time
}

func newFrontDoorStandIn(t *testing.T, localURL string, edgeKeys *token.KeyRing, cache bool, site http.Handler) string {
	t.Helper()
	u, err := url.Parse(localURL)
	if err != nil {
		t.Fatal(err)
	}
	f := &frontDoorStandIn{local: httputil.NewSingleHostReverseProxy(u), edgeKeys: edgeKeys, cache: cache, site: site, entries: map[string]cached{}}
	if f.site == nil {
		f.site = f.local // vwr local's own demo site
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *frontDoorStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/vwr-api/vwr/status/") && f.cache:
		f.cached(w, r)
	case strings.HasPrefix(p, "/vwr/"), strings.HasPrefix(p, "/vwr-api/"), strings.HasPrefix(p, "/api/queue/"):
		w.Header().Set("X-Cache", "Miss from cloudfront")
		f.local.ServeHTTP(w, r)
	case f.edgeKeys != nil:
		edge.Middleware(f.edgeKeys, clock.System{}, f.site).ServeHTTP(w, r)
	default:
		f.site.ServeHTTP(w, r)
	}
}

func (f *frontDoorStandIn) cached(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	e, ok := f.entries[r.URL.Path]
	f.mu.Unlock()
	xc := "Hit from cloudfront"
	if !ok || time.Now().After(e.expires) {
		xc = "Miss from cloudfront"
		rec := httptest.NewRecorder()
		f.local.ServeHTTP(rec, r)
		ttl := time.Second // the status cache policy's minimum TTL
		if _, v, found := strings.Cut(rec.Header().Get("Cache-Control"), "max-age="); found {
			if n, err := strconv.Atoi(strings.Split(v, ",")[0]); err == nil && n > 1 {
				ttl = time.Duration(n) * time.Second
			}
		}
		e = cached{status: rec.Code, header: rec.Header().Clone(), body: rec.Body.Bytes(), expires: time.Now().Add(ttl)}
		f.mu.Lock()
		f.entries[r.URL.Path] = e
		f.mu.Unlock()
	}
	for k, v := range e.header {
		w.Header()[k] = v
	}
	w.Header().Set("X-Cache", xc)
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body)
}

func runSmokeAt(t *testing.T, base string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), invocation{Args: []string{"smoke", "-url", base, "-timeout", "30s"}, Stdout: &stdout, Stderr: &stderr, Env: map[string]string{}})
	return code, stdout.String(), stderr.String()
}

// TestSmoke: one visitor walks a real vwr local behind the stand-in; the
// walk passes when the front door is whole and fails, naming the fault,
// when the edge store lacks the API's kid, when status is not cached, and
// when the edge check is not in front of the site.
func TestSmoke(t *testing.T) {
	const ring = "k7:smoke-test-secret-0123456789abcdef-0123456789"
	base, _ := startLocal(t, map[string]string{"VWR_TIER1_TOKEN_KEYS": ring})
	keys, err := token.ParseKeyRing(ring)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := token.ParseKeyRing("k1:an-older-secret-the-api-no-longer-signs-with-0123")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a whole front door", func(t *testing.T) {
		code, out, errOut := runSmokeAt(t, newFrontDoorStandIn(t, base, keys, true, nil))
		if code != exitOK || !strings.Contains(out, "vwr smoke: ok") || strings.Count(out, "ok  ") != 6 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(out, "kid k7") {
			t.Errorf("the pass's kid is not named:\n%s", out)
		}
	})
	t.Run("an edge store without the API's kid", func(t *testing.T) {
		code, out, errOut := runSmokeAt(t, newFrontDoorStandIn(t, base, stale, true, nil))
		if code != exitError || !strings.Contains(errOut, "redirect loop") || !strings.Contains(errOut, "vwr admin edge-keys sync") || !strings.Contains(errOut, "kid k7") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("status not cached", func(t *testing.T) {
		code, out, errOut := runSmokeAt(t, newFrontDoorStandIn(t, base, keys, false, nil))
		if code != exitError || !strings.Contains(errOut, "missing cache hit") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("no edge check in front of the site", func(t *testing.T) {
		shop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "the shop") })
		code, out, errOut := runSmokeAt(t, newFrontDoorStandIn(t, base, nil, true, shop))
		if code != exitError || !strings.Contains(errOut, "let a visitor without a pass through") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("usage", func(t *testing.T) {
		var stderr bytes.Buffer
		if code := dispatch(context.Background(), invocation{Args: []string{"smoke"}, Stdout: &bytes.Buffer{}, Stderr: &stderr, Env: map[string]string{}}); code != exitUsage || !strings.Contains(stderr.String(), "-url") {
			t.Fatalf("no -url: exit %d %q", code, stderr.String())
		}
	})
}
