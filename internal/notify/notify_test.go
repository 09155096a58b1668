package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/notify"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
	"github.com/vwr-go/vwr/services/queue"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// sqsClient talks to endpoint (moto, or a closed port) as awstest configures.
func sqsClient(t testing.TB, endpoint string) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(awstest.Config(endpoint))
}

// closedEndpoint returns a loopback URL nothing listens on.
func closedEndpoint(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// motoPublisher starts a Publisher on a fresh FIFO queue of the package's
// moto server and returns the client and queue URL to read it back.
func motoPublisher(t *testing.T) (*sqs.Client, string, *notify.Publisher) {
	t.Helper()
	c := sqsClient(t, testenv.Moto(t))
	url := awstest.FIFOQueue(t, c, testenv.UniqueID(t)+"-admitted.fifo", map[string]string{"VisibilityTimeout": "300"})
	// Every send to moto is meant to succeed: a send timeout of 10 s (2 s in
	// enabled) keeps a starved moto (make test's lanes, -race) from turning
	// slow answers into counted failures.
	cfg := enabled(url)
	cfg.SendTimeout = envconf.Millis(10 * time.Second)
	p, err := notify.New(cfg, c, notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, url, p
}

func enabled(url string) notify.Config {
	return notify.Config{Enabled: true, QueueURL: url, SendTimeout: envconf.Millis(2 * time.Second), RetryBackoff: envconf.Millis(10 * time.Millisecond)}
}

func admission(event string, i int, at time.Time) queue.Admission {
	return queue.Admission{
		EventID:    event,
		UserID:     fmt.Sprintf("user-%03d", i),
		EntryJTI:   fmt.Sprintf("jti-%03d", i),
		ExpiresAt:  at.Add(10 * time.Minute),
		AdmittedAt: at,
	}
}

func closeNow(t *testing.T, p *notify.Publisher, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = p.Close(ctx)
}

// receiveAll drains the queue: every message is received once (visibility
// 300 s) and deleted, in receive order.
func receiveAll(t *testing.T, c *sqs.Client, url string) []sqstypes.Message {
	t.Helper()
	ctx := context.Background()
	var all []sqstypes.Message
	for empty := 0; empty < 3; {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         10,
			VisibilityTimeout:           300,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		all = append(all, out.Messages...)
		for _, m := range out.Messages {
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete: %v", err)
			}
		}
	}
	return all
}

func TestFIFODeliversUniqueMessagesInGroupOrder(t *testing.T) {
	t.Parallel()
	c, url, p := motoPublisher(t)

	// 100 admissions over 4 events, with 20 of them sent a second time
	// (a retried worker pass, say) while the originals are still in the buffer
	// or already sent.
	events := []string{"ev-a", "ev-b", "ev-c", "ev-d"}
	base := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	var sent []queue.Admission
	for i := 0; i < 100; i++ {
		a := admission(events[i%len(events)], i, base.Add(time.Duration(i)*time.Millisecond))
		p.Admitted(a)
		sent = append(sent, a)
		if i%5 == 4 {
			p.Admitted(sent[i-2])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if st := p.Stats(); st.Enqueued != 120 || st.Failed != 0 || st.DroppedFull != 0 {
		t.Fatalf("stats = %+v, want 120 enqueued, none failed or dropped", st)
	}

	msgs := receiveAll(t, c, url)
	if len(msgs) != 100 {
		t.Fatalf("delivered %d messages, want 100 unique", len(msgs))
	}
	seen := map[string]bool{}
	perGroup := map[string][]string{}
	for _, m := range msgs {
		body := aws.ToString(m.Body)
		var raw map[string]any
		if err := json.Unmarshal([]byte(body), &raw); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		for k := range raw {
			switch k {
			case "action", "eventId", "userId", "entryTokenId", "expiresAt", "timestamp":
			default:
				t.Errorf("unexpected field %q in %s", k, body)
			}
		}
		msg, err := admitted.Parse(body)
		if err != nil {
			t.Fatalf("parse %q: %v", body, err)
		}
		if seen[msg.UserID] {
			t.Errorf("user %s delivered twice", msg.UserID)
		}
		seen[msg.UserID] = true
		if g := m.Attributes["MessageGroupId"]; g != msg.EventID {
			t.Errorf("MessageGroupId = %q, want %q", g, msg.EventID)
		}
		if d := m.Attributes["MessageDeduplicationId"]; d != admitted.DedupID(msg.UserID, msg.EventID) {
			t.Errorf("MessageDeduplicationId = %q, want sha256 of user:event", d)
		}
		if strings.Contains(body, "eyJ") {
			t.Errorf("body looks like it carries a JWT: %s", body)
		}
		perGroup[msg.EventID] = append(perGroup[msg.EventID], msg.UserID)
	}
	for i, ev := range events {
		var want []string
		for j := i; j < 100; j += len(events) {
			want = append(want, fmt.Sprintf("user-%03d", j))
		}
		if got := strings.Join(perGroup[ev], ","); got != strings.Join(want, ",") {
			t.Errorf("group %s order:\n got %s\nwant %s", ev, got, strings.Join(want, ","))
		}
	}
}

func TestCloseFlushesBuffered(t *testing.T) {
	t.Parallel()
	c, url, p := motoPublisher(t)
	base := time.Now()
	for i := 0; i < 35; i++ {
		p.Admitted(admission("flush", i, base))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := p.Stats().Sent; got != 35 {
		t.Fatalf("sent = %d, want 35", got)
	}
	if got := len(receiveAll(t, c, url)); got != 35 {
		t.Fatalf("queue holds %d messages after Close, want 35", got)
	}
	// After Close, admissions are dropped and counted, never sent.
	p.Admitted(admission("flush", 99, base))
	if st := p.Stats(); st.DroppedClosed != 1 || st.Sent != 35 {
		t.Fatalf("after close: %+v", st)
	}
}

func TestRetriesWithDoublingBackoffThenCountsFailure(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var waits []time.Duration
	cfg := enabled("http://127.0.0.1:1/000000000000/q-admitted.fifo")
	cfg.MaxAttempts = 4
	cfg.RetryBackoff = envconf.Millis(100 * time.Millisecond)
	p, err := notify.New(cfg, sqsClient(t, closedEndpoint(t)), notify.Options{
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Admitted(admission("retry", 1, time.Now()))
	closeNow(t, p, 30*time.Second)
	st := p.Stats()
	if st.Failed != 1 || st.Retries != 3 || st.Sent != 0 {
		t.Fatalf("stats = %+v, want 1 failed after 3 retries", st)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("backoff = %v, want %v", waits, want)
	}
}

func TestEndpointDownNeverBlocksAndCounts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	cfg := enabled("http://127.0.0.1:1/000000000000/q-admitted.fifo")
	cfg.BufferSize = 256
	p, err := notify.New(cfg, sqsClient(t, closedEndpoint(t)), notify.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Admitted(admission("down", i, time.Now()))
		}()
	}
	wg.Wait()
	closeNow(t, p, 200*time.Millisecond)
	st := p.Stats()
	if st.Enqueued+st.DroppedFull != 1000 {
		t.Fatalf("enqueued %d + dropped %d != 1000", st.Enqueued, st.DroppedFull)
	}
	if st.Sent != 0 || st.Failed+st.DroppedShutdown != st.Enqueued {
		t.Fatalf("stats = %+v: every enqueued admission must end failed or dropped at shutdown", st)
	}
	if got := metric(t, reg, "vwr_sqs_notifications_total", "result", "enqueued"); got != float64(st.Enqueued) {
		t.Fatalf("metric enqueued = %v, want %d", got, st.Enqueued)
	}
}

// TestBufferOverflowIsBoundedAndCounted is not parallel: it measures the
// process heap, which parallel tests would inflate.
func TestBufferOverflowIsBoundedAndCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := enabled("http://127.0.0.1:1/000000000000/q-admitted.fifo")
	cfg.BufferSize = 100
	release := make(chan struct{})
	p, err := notify.New(cfg, sqsClient(t, closedEndpoint(t)), notify.Options{
		Registerer: reg,
		// The sender's first call fails (nothing listens) and it then waits
		// here, so the buffer fills deterministically.
		Sleep: func(ctx context.Context, d time.Duration) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeNow(t, p, time.Second) })

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = 200_000
	now := time.Now()
	maxLen := 0
	for i := 0; i < n; i++ {
		p.Admitted(admission("overflow", i, now))
		if l := p.Buffered(); l > maxLen {
			maxLen = l
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	close(release)

	if maxLen > p.Capacity() {
		t.Fatalf("buffer reached %d, capacity %d", maxLen, p.Capacity())
	}
	st := p.Stats()
	// At most one batch left the buffer before the sender blocked.
	if st.Enqueued > int64(cfg.BufferSize+notify.MaxBatch) || st.Enqueued+st.DroppedFull != n {
		t.Fatalf("stats = %+v, want ≤ %d enqueued and the rest of %d dropped", st, cfg.BufferSize+notify.MaxBatch, n)
	}
	if got := metric(t, reg, "vwr_sqs_notifications_total", "result", "dropped_full"); got != float64(st.DroppedFull) {
		t.Fatalf("dropped_full metric = %v, want %d", got, st.DroppedFull)
	}
	// 200k admissions pass through; only the 100-slot buffer may stay alive.
	// 8 MiB is a wide margin over it and far below the ~40 MB the admissions
	// would take if kept.
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 8<<20 {
		t.Fatalf("heap grew by %d bytes", growth)
	}
}

func TestDropLogIsRateLimited(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	clk := clock.NewManual(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	cfg := enabled("http://127.0.0.1:1/000000000000/q-admitted.fifo")
	cfg.BufferSize = 1
	block := make(chan struct{})
	p, err := notify.New(cfg, sqsClient(t, closedEndpoint(t)), notify.Options{
		Logger: logger, Clock: clk,
		Sleep: func(ctx context.Context, d time.Duration) error { <-block; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(block); closeNow(t, p, time.Second) })
	drops := func() int {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(buf.String(), "admission notifications dropped")
	}
	// Fill the one slot (plus whatever the sender already took) until drops start.
	for i := 0; p.Stats().DroppedFull == 0; i++ {
		p.Admitted(admission("log", i, clk.Now()))
	}
	for i := 0; i < 50; i++ {
		p.Admitted(admission("log", 1000+i, clk.Now()))
	}
	if got := drops(); got != 1 {
		t.Fatalf("%d drop lines within 10s, want 1", got)
	}
	clk.Advance(11 * time.Second)
	p.Admitted(admission("log", 2000, clk.Now()))
	if got := drops(); got != 2 {
		t.Fatalf("%d drop lines after 11s, want 2", got)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestInvalidAdmissionIsCountedNotSent(t *testing.T) {
	t.Parallel()
	_, _, p := motoPublisher(t)
	now := time.Now()
	p.Admitted(queue.Admission{EventID: "bad event!", UserID: "u1", ExpiresAt: now, AdmittedAt: now})
	p.Admitted(admission("good", 1, now))
	closeNow(t, p, 30*time.Second)
	if st := p.Stats(); st.Invalid != 1 || st.Sent != 1 {
		t.Fatalf("stats = %+v, want 1 invalid and 1 sent", st)
	}
}

// metric reads one labelled sample from reg.
func metric(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					if c := m.GetCounter(); c != nil {
						return c.GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("metric %s{%s=%q} not registered", name, label, value)
	return 0
}
