package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// response is one finished request as a visitor sees it.
type response struct {
	status     int // 0: transport error
	body       []byte
	retryAfter time.Duration
	sent, recv time.Time
}

func (r response) ok() bool { return r.status >= 200 && r.status < 300 }

func (r response) decode(v any) error {
	if !r.ok() {
		return fmt.Errorf("%w %d", errStatus, r.status)
	}
	return json.Unmarshal(r.body, v)
}

// call sends one request, records its latency and outcome under endpoint,
// and never fails: a transport error is status 0.
func (r *run) call(ctx context.Context, endpoint, method, url string, headers map[string]string, body []byte) response {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	res := response{sent: r.cfg.Clock.Now()}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		panic("loadtest: bad request URL " + url) // built here from validated parts
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := r.t.Client.Do(req)
	if err == nil {
		res.body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err == nil {
			res.status = resp.StatusCode
			if s, e := strconv.Atoi(resp.Header.Get("Retry-After")); e == nil && s > 0 {
				res.retryAfter = time.Duration(s) * time.Second
			}
		}
	}
	res.recv = r.cfg.Clock.Now()
	if ctx.Err() != nil && res.status == 0 {
		return res // the run ended under it: not the system's error
	}
	if endpoint == endpointUnpaid && res.status == http.StatusPreconditionRequired {
		// The unpaid assign's 428 is the challenge the page asks for, not an error.
		asked := res
		asked.status = http.StatusOK
		r.rec.observe(endpoint, asked)
		return res
	}
	r.rec.observe(endpoint, res)
	return res
}

// admin calls an admin route with a bearer token and decodes a 2xx answer
// into out (when not nil).
func (r *run) admin(ctx context.Context, method, url, token, body string, out any) error {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.t.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// recorder keeps every request's latency and every failure, per endpoint.
type recorder struct {
	mu        sync.Mutex
	latencies map[string][]float32 // ms
	failures  []failure
	requests  int64
}

// failure is one non-2xx answer or transport error.
type failure struct {
	at       time.Time
	endpoint string
	status   int
}

func newRecorder() *recorder { return &recorder{latencies: map[string][]float32{}} }

func (rc *recorder) observe(endpoint string, res response) {
	ms := float32(res.recv.Sub(res.sent).Seconds() * 1000)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests++
	rc.latencies[endpoint] = append(rc.latencies[endpoint], ms)
	if !res.ok() {
		rc.failures = append(rc.failures, failure{at: res.recv, endpoint: endpoint, status: res.status})
	}
}

func code(status int) string {
	if status == 0 {
		return "transport"
	}
	return strconv.Itoa(status)
}

func (rc *recorder) errors() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, f := range rc.failures {
		m := out[f.endpoint]
		if m == nil {
			m = map[string]int64{}
			out[f.endpoint] = m
		}
		m[code(f.status)]++
	}
	return out
}

func (rc *recorder) latencyReport() map[string]Latency {
	out := map[string]Latency{}
	for ep, xs := range rc.latencies {
		s := make([]float64, len(xs))
		for i, x := range xs {
			s[i] = float64(x)
		}
		sort.Float64s(s)
		out[ep] = Latency{Count: int64(len(s)), P50: round2(quantile(s, 0.50)), P95: round2(quantile(s, 0.95)), P99: round2(quantile(s, 0.99))}
	}
	return out
}

// quantile of sorted xs by the nearest-rank method; 0 when empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
