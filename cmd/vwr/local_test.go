package main

import (
	"github.com/vwr-go/vwr/internal/envconf"

	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue/app"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// An extension registered the way other parts of the project will: flags,
// a Configure step and a route on the shared mux. It changes nothing unless
// its flag is given, so other tests' `vwr local` runs are unaffected.
var (
	extGreeting  string
	extThreshold int64
)

func init() {
	registerLocal(localExtension{
		Name: "test-ext",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&extGreeting, "test-greeting", "hello", "test extension flag")
			fs.Int64Var(&extThreshold, "test-threshold", 0, "test extension: override the queue threshold")
		},
		Configure: func(s *localStack) error {
			if extThreshold > 0 {
				s.QueueConfig.Threshold = envconf.Positive(extThreshold)
			}
			return nil
		},
		Mount: func(ctx context.Context, s *localStack) error {
			s.Handle("GET /test-ext", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, extGreeting+" "+s.Tier1Keys.SigningKid())
			}))
			if extThreshold > 0 {
				s.Notef("test extension mounted")
			}
			return nil
		},
	})
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Tests that run `vwr local` are not parallel: extensions bind their flags
// to package variables (as real extensions do), so two runs parsing flags at
// once would race on them.

func TestLocalBadArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"local", "-nope"}, "flag provided but not defined"},
		{[]string{"local", "extra"}, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), invocation{Args: tc.args, Stdout: &out, Stderr: &errb, Env: map[string]string{}})
		if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("%v: code %d stderr %q", tc.args, code, errb.String())
		}
	}
}

// TestLocalWaitsForRedisBeforeServing: with REDIS_URL pointing nowhere,
// `vwr local` never says "serving"; it retries with one line per try, every
// log line in one format (go-redis's own included), and stops cleanly on
// Ctrl-C. A port in use names -addr.
func TestLocalWaitsForRedisBeforeServing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &syncBuf{}, &syncBuf{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, invocation{Args: []string{"local", "-addr", "127.0.0.1:0", "-demo"}, Stdout: out, Stderr: errb,
			Env: map[string]string{"REDIS_URL": "redis://127.0.0.1:1/0"}})
	}()
	tries := 0
	for deadline := time.Now().Add(30 * time.Second); tries < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no three tries in 30s:\n%s\n%s", out, errb)
		}
		tries = strings.Count(errb.String(), `"msg":"waiting for dependencies"`)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitError || !strings.Contains(errb.String(), "stopped before Redis answered") {
			t.Errorf("exit %d after Ctrl-C while waiting:\n%s", code, errb)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("vwr local did not stop while waiting for Redis")
	}
	if strings.Contains(out.String(), "serving") {
		t.Fatalf("said it serves with Redis unreachable:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		if line == "vwr local: stopped before Redis answered" {
			continue
		}
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("a log line in another format: %q", line)
		}
	}
	for _, want := range []string{`"err":"redis at 127.0.0.1:1`, `"retryIn":"500ms"`, `"component":"go-redis"`} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, errb)
		}
	}
	if strings.Contains(errb.String(), "admission pass failed") {
		t.Errorf("the worker ran before Redis answered:\n%s", errb)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var e2 bytes.Buffer
	code := dispatch(context.Background(), invocation{Args: []string{"local", "-addr", busy.Addr().String()}, Stdout: io.Discard, Stderr: &e2, Env: map[string]string{}})
	if code != exitError || !strings.Contains(e2.String(), "address already in use") || !strings.Contains(e2.String(), "Choose another address with -addr") {
		t.Fatalf("port in use: exit %d\n%s", code, e2.String())
	}
}

// TestLocalTrustsTheUserHeaderOnlyOnLoopback: vwr local's default trusted
// header (X-User-Id) would let anyone on the network claim any identity, so a
// non-loopback -addr needs QUEUE_USER_HEADER set explicitly.
func TestLocalTrustsTheUserHeaderOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.10:8080", "[::]:8080"} {
		var errb bytes.Buffer
		code := dispatch(context.Background(), invocation{Args: []string{"local", "-addr", addr}, Stdout: io.Discard, Stderr: &errb, Env: map[string]string{}})
		if code != exitError || !strings.Contains(errb.String(), "set QUEUE_USER_HEADER explicitly") {
			t.Errorf("-addr %s: code %d, stderr %q", addr, code, errb.String())
		}
	}
	// Named explicitly, the header is the operator's choice.
	s, err := newLocalStack("0.0.0.0:0", map[string]string{"QUEUE_USER_HEADER": "X-Auth-User"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("explicit QUEUE_USER_HEADER on a non-loopback address: %v", err)
	}
	s.close()
	if s.QueueConfig.UserHeader != "X-Auth-User" {
		t.Fatalf("user header %q", s.QueueConfig.UserHeader)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		s, err := newLocalStack(addr, map[string]string{}, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("-addr %s: %v", addr, err)
		}
		s.close()
		if s.QueueConfig.UserHeader != "X-User-Id" {
			t.Fatalf("-addr %s: user header %q", addr, s.QueueConfig.UserHeader)
		}
	}
}

func TestDispatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
		wantOut  string
	}{
		{nil, exitUsage, "usage: vwr <command>", ""},
		{[]string{"rehearse"}, exitUsage, `unknown command "rehearse"`, ""},
		{[]string{"nope"}, exitUsage, `unknown command "nope"`, ""},
		{[]string{"help"}, exitOK, "", "local "},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := dispatch(context.Background(), invocation{Args: tc.args, Stdout: &out, Stderr: &errb, Env: map[string]string{}})
			if code != tc.wantCode || !strings.Contains(errb.String(), tc.wantErr) || !strings.Contains(out.String(), tc.wantOut) {
				t.Fatalf("code %d stdout %q stderr %q", code, out.String(), errb.String())
			}
			if tc.wantErr != "" && strings.Contains(tc.wantErr, "unknown") && !strings.Contains(errb.String(), "local ") {
				t.Fatalf("unknown command without the command list: %q", errb.String())
			}
		})
	}
}

var servingRE = regexp.MustCompile(`serving on (http://\S+)`)

// startLocal runs `vwr local` in-process with env and returns its base URL.
func startLocal(t *testing.T, env map[string]string, args ...string) (string, *syncBuf) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &syncBuf{}, &syncBuf{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, invocation{
			Args:   append([]string{"local", "-addr", "127.0.0.1:0"}, args...),
			Stdout: out, Stderr: errb,
			Env: env,
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("vwr local exited %d; stderr:\n%s", code, errb.String())
			}
		case <-time.After(15 * time.Second):
			t.Errorf("vwr local did not stop")
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if m := servingRE.FindStringSubmatch(out.String()); m != nil {
			return m[1], out
		}
		select {
		case code := <-done:
			t.Fatalf("vwr local exited %d:\n%s\n%s", code, out.String(), errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("vwr local never served:\n%s\n%s", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func post(t *testing.T, url string, hdr map[string]string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	body["_status"] = float64(resp.StatusCode)
	return body
}

func TestLocalEmbeddedDefaults(t *testing.T) {
	base, out := startLocal(t, nil, "-test-greeting", "hi", "-test-threshold", "2")
	for _, want := range []string{
		"REDIS_URL and REDIS_CLUSTER_ADDRS unset: using embedded Redis (miniredis)",
		"QUEUE_ENTRY_TOKEN_SECRET unset: generated",
		"VWR_TIER1_TOKEN_KEYS unset: generated Tier 1 key",
		"QUEUE_USER_HEADER unset: trusting header X-User-Id",
		"VWR_ADMIN_TOKEN and QUEUE_ADMIN_TOKEN unset: both tiers' admin endpoints take Authorization: Bearer local-admin",
		"Tier 2 queue: threshold 2,", // the extension's Configure ran
		"test extension mounted",
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("start-up notes lack %q:\n%s", want, out.String())
		}
	}
	ev := testenv.UniqueID(t)
	for i, want := range []string{"active", "active", "queued"} {
		r := post(t, base+"/api/queue/check/"+ev, map[string]string{"X-User-Id": "u" + string(rune('a'+i))})
		if r["_status"] != float64(200) || r["status"] != want {
			t.Fatalf("check %d = %v, want %s", i, r, want)
		}
	}
	resp, err := http.Get(base + "/test-ext")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi "+localTier1Kid {
		t.Fatalf("extension route = %q", b)
	}
	if r := post(t, base+"/nowhere", nil); r["_status"] != float64(404) || r["code"] != "not_found" {
		t.Fatalf("unknown route = %v", r)
	}
	req, _ := http.NewRequest("GET", base+"/api/queue/admin/stats/"+ev, nil)
	req.Header.Set("Authorization", "Bearer "+localAdminToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var stats map[string]any
	json.NewDecoder(resp.Body).Decode(&stats)
	resp.Body.Close()
	if stats["queueSize"] != float64(1) || stats["currentUsers"] != float64(2) {
		t.Fatalf("stats = %v", stats)
	}
}

func TestLocalWithRealRedis(t *testing.T) {
	secret := "local-test-secret-0123456789abcdef-01234"
	base, out := startLocal(t, map[string]string{
		"REDIS_URL":                "redis://" + testenv.Redis(t) + "/3",
		"QUEUE_ENTRY_TOKEN_SECRET": secret,
		"VWR_TIER1_TOKEN_KEYS":     "k1:" + secret,
		"QUEUE_USER_HEADER":        "X-Me",
		"QUEUE_ADMIN_TOKEN":        "given",
		"QUEUE_OPEN_EVENTS":        "false",
	})
	for _, bad := range []string{"embedded", "generated", "unset"} {
		if strings.Contains(out.String(), bad) {
			t.Fatalf("notes mention %q although everything was set:\n%s", bad, out.String())
		}
	}
	if !strings.Contains(out.String(), "using Redis at "+testenv.Redis(t)) {
		t.Fatalf("notes:\n%s", out.String())
	}
	// Configured events only: the threshold, kept in Tier 1's store (here
	// the same Redis), is what makes the event exist.
	ev := testenv.UniqueID(t)
	if r := post(t, base+"/api/queue/check/"+ev, map[string]string{"X-Me": "someone"}); r["_status"] != float64(404) || r["code"] != "unknown_event" {
		t.Fatalf("check of an unconfigured event = %v", r)
	}
	req, _ := http.NewRequest("PUT", base+"/api/queue/admin/threshold/"+ev, strings.NewReader(`{"threshold":5}`))
	req.Header.Set("Authorization", "Bearer given")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("set threshold = %d", resp.StatusCode)
	}
	r := post(t, base+"/api/queue/check/"+ev, map[string]string{"X-Me": "someone"})
	if r["_status"] != float64(200) || r["status"] != "active" || r["threshold"] != float64(5) {
		t.Fatalf("check = %v", r)
	}
	if r := post(t, base+"/api/queue/check/"+testenv.UniqueID(t), map[string]string{"X-User-Id": "someone"}); r["_status"] != float64(401) {
		t.Fatalf("the local default header was trusted although QUEUE_USER_HEADER is set: %v", r)
	}
}

// OnStop hooks (the SQS flush) run only after the jobs (the admission
// worker) have returned, so the worker's last admissions are still sent.
func TestLocalStopsRunAfterJobs(t *testing.T) {
	s, err := newLocalStack("127.0.0.1:0", map[string]string{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	note := func(what string) {
		mu.Lock()
		order = append(order, what)
		mu.Unlock()
	}
	s.Go(func(ctx context.Context) {
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // a last pass that takes a moment
		note("job returned")
	})
	s.OnStop(func() { note("first stop") })
	s.OnStop(func() { note("second stop") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := app.Serve(ctx, ln, s.mux, s.Log, s.jobs...); err != nil {
		t.Fatal(err)
	}
	s.close()
	if got, want := fmt.Sprint(order), "[job returned second stop first stop]"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}
