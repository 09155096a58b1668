package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/notify"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/app"
)

// tier2 assembles the real Tier 2 runtime (service, worker, HTTP API) on
// the test redis-server with n as its notifier.
func tier2(t testing.TB, n notify.Notifier, threshold int64) (*app.App, *httptest.Server) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t), PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	a, err := app.Open(app.Config{
		OpenEvents:       true, // any event id, as these tests are about SQS
		EntryTokenSecret: strings.Repeat("s", 32),
		UserHeader:       "X-User-Id",
		Threshold:        envconf.Positive(threshold),
	}, app.Options{Redis: rdb, KeyPrefix: testenv.UniqueID(t) + ":", Notifier: n, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Register(a.Metrics.Registry()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return a, srv
}

func post(t *testing.T, c *http.Client, url, user string) (int, map[string]any, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, nil)
	req.Header.Set("X-User-Id", user)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var body map[string]any
	err = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body, err
}

// TestCheckUnaffectedBySQSOutage: with the SQS endpoint down (a closed
// port), 1,000 concurrent users all get their normal answer, every direct
// admission reaches the notifier, and what could not be sent is counted.
func TestCheckUnaffectedBySQSOutage(t *testing.T) {
	t.Parallel()
	cfg := enabled("http://127.0.0.1:1/000000000000/down-admitted.fifo")
	cfg.BufferSize = 100
	cfg.SendTimeout = envconf.Millis(500 * time.Millisecond)
	// Slow retries keep the sender behind however slowly the checks arrive,
	// so the buffer surely overflows.
	cfg.RetryBackoff = envconf.Millis(time.Second)
	p, err := notify.New(cfg, sqsClient(t, closedEndpoint(t)), notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, srv := tier2(t, p, 1000)
	ev := testenv.UniqueID(t)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 128, MaxIdleConnsPerHost: 128}, Timeout: 30 * time.Second}

	const users = 1000
	var wg sync.WaitGroup
	errs := make(chan string, users)
	for i := 0; i < users; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, err := post(t, client, srv.URL+"/api/queue/check/"+ev, fmt.Sprintf("user-%d", i))
			if err != nil || code != http.StatusOK || body["status"] != "active" || body["entryToken"] == "" {
				errs <- fmt.Sprintf("user-%d: %d %v %v", i, code, body, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	st := p.Stats()
	if st.Enqueued+st.DroppedFull != users {
		t.Fatalf("notifier heard %d admissions (stats %+v), want %d", st.Enqueued+st.DroppedFull, st, users)
	}
	if st.DroppedFull == 0 {
		t.Fatalf("a 100-slot buffer behind a dead endpoint dropped nothing: %+v", st)
	}
	// The drops are visible on the queue service's own /metrics.
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf(`vwr_sqs_notifications_total{result="dropped_full"} %d`, st.DroppedFull); !strings.Contains(string(b), want) {
		t.Fatalf("/metrics lacks %q", want)
	}
	closeNow(t, p, 100*time.Millisecond)
	if st := p.Stats(); st.Sent != 0 || st.Failed+st.DroppedShutdown != st.Enqueued {
		t.Fatalf("after close: %+v, want every enqueued admission failed or dropped", st)
	}
}

// TestBothAdmissionPathsPublish: direct entries in check (u0…u2) and the
// worker's admissions (u3…u5, after the first three leave) both arrive on
// the FIFO queue, each carrying the jti its entry token has (or will have).
func TestBothAdmissionPathsPublish(t *testing.T) {
	t.Parallel()
	c, url, p := motoPublisher(t)
	a, srv := tier2(t, p, 3)
	ev := testenv.UniqueID(t)
	hc := srv.Client()
	for i := 0; i < 6; i++ {
		if code, body, err := post(t, hc, srv.URL+"/api/queue/check/"+ev, fmt.Sprintf("u%d", i)); err != nil || code != 200 {
			t.Fatalf("check u%d: %d %v %v", i, code, body, err)
		}
	}
	if st := p.Stats(); st.Enqueued != 3 {
		t.Fatalf("after 6 checks with threshold 3: %d admissions notified, want 3 direct ones", st.Enqueued)
	}
	for i := 0; i < 3; i++ {
		if code, _, err := post(t, hc, srv.URL+"/api/queue/leave/"+ev, fmt.Sprintf("u%d", i)); err != nil || code != 200 {
			t.Fatalf("leave u%d: %d %v", i, code, err)
		}
	}
	if n, err := a.Worker.AdmitOnce(context.Background()); err != nil || n < 3 {
		t.Fatalf("worker admitted %d, %v; want ≥ 3", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}

	got := map[string]bool{}
	for _, m := range receiveAll(t, c, url) {
		msg, err := admitted.Parse(aws.ToString(m.Body))
		if err != nil {
			t.Fatal(err)
		}
		if msg.EventID != ev {
			continue
		}
		if want := queue.EntryTokenID(msg.EventID, msg.UserID, msg.ExpiresAt); msg.EntryTokenID != want {
			t.Errorf("%s: entryTokenId %q, want the token's jti %q", msg.UserID, msg.EntryTokenID, want)
		}
		got[msg.UserID] = true
	}
	for i := 0; i < 6; i++ {
		if !got[fmt.Sprintf("u%d", i)] {
			t.Errorf("admission of u%d not published (got %v)", i, got)
		}
	}
}

// BenchmarkCheckWithNotifier compares a Tier 2 check with SQS off against
// one whose SQS endpoint is down: the difference is the cost of the
// outage on the request path (expected: noise; run with -bench).
func BenchmarkCheckWithNotifier(b *testing.B) {
	for _, mode := range []string{"sqs-off", "sqs-down"} {
		b.Run(mode, func(b *testing.B) {
			var n notify.Notifier
			var err error
			if mode == "sqs-off" {
				n, err = notify.Open(context.Background(), notify.Config{}, notify.Options{})
			} else {
				cfg := enabled("http://127.0.0.1:1/000000000000/down-admitted.fifo")
				cfg.BufferSize = 1000
				n, err = notify.New(cfg, sqsClient(b, closedEndpoint(b)), notify.Options{})
			}
			if err != nil {
				b.Fatal(err)
			}
			defer n.Close(context.Background())
			_, srv := tier2(b, n, 1_000_000)
			ev := testenv.UniqueID(b)
			client := srv.Client()
			for i := 0; b.Loop(); i++ {
				req, _ := http.NewRequest("POST", srv.URL+"/api/queue/check/"+ev, nil)
				req.Header.Set("X-User-Id", fmt.Sprintf("u%d", i))
				resp, err := client.Do(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("check: %v %v", resp, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
