package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Stop()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  string
)

// build compiles this binary once per test binary (into a directory
// TestMain removes) and returns its path.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vwr-queue-bin-")
		if err != nil {
			buildErr = err.Error()
			return
		}
		buildDir = dir
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "queue"), ".").CombinedOutput(); err != nil {
			buildErr = fmt.Sprintf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != "" {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "queue")
}

func TestFailsFastNamingTheMissingVariable(t *testing.T) {
	t.Parallel()
	secret := "cmd-test-secret-0123456789abcdef-0123456"
	tests := []struct {
		name    string
		env     []string
		want    []string
		notWant []string
	}{
		{"nothing set", nil, []string{"REDIS_URL is required", "QUEUE_ENTRY_TOKEN_SECRET is required"}, nil},
		{"no redis", []string{"QUEUE_ENTRY_TOKEN_SECRET=" + secret}, []string{"REDIS_URL is required"}, []string{"QUEUE_ENTRY_TOKEN_SECRET"}},
		{"no secret", []string{"REDIS_URL=redis://127.0.0.1:1"}, []string{"QUEUE_ENTRY_TOKEN_SECRET is required"}, []string{"REDIS_URL"}},
		{"bad number", []string{"REDIS_URL=redis://127.0.0.1:1", "QUEUE_ENTRY_TOKEN_SECRET=" + secret, "QUEUE_THRESHOLD=lots"}, []string{"QUEUE_THRESHOLD"}, nil},
	}
	bin := build(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The deadline only turns a hang (say, dialling Redis before
			// validating) into a clear failure; it is not a speed goal.
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = tc.env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("did not exit on its own; stderr %s", stderr.String())
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() == 0 {
				t.Fatalf("exit = %v, want a failure; stderr %s", err, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Fatalf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(stderr.String(), w) {
					t.Fatalf("stderr mentions %q needlessly:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// proc is a running binary with its captured stderr.
type proc struct {
	cmd    *exec.Cmd
	addr   string // where it listens
	stderr *syncBuf
	exited chan struct{}
	err    error // of cmd.Wait, once exited is closed
}

// wait returns the exit error, failing the test after d.
func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(d):
		t.Fatalf("still running after %s:\n%s", d, p.stderr.String())
		return nil
	}
}

// start runs the binary on the package's redis-server, with visitors
// identified by X-User-Id and extra variables on top.
func start(t *testing.T, extra ...string) *proc {
	t.Helper()
	return startEnv(t, append([]string{"REDIS_URL=redis://" + testenv.Redis(t) + "/0"}, extra...))
}

// startEnv runs the binary with env plus an entry secret, the X-User-Id
// header, open events (so that tests of other matters need no configured
// event; env may say QUEUE_OPEN_EVENTS=false, the last value wins) and a
// listen address on port 0, and returns once it said it serves, at the
// address the kernel gave it.
func startEnv(t *testing.T, env []string) *proc {
	t.Helper()
	cmd := exec.Command(build(t))
	cmd.Env = append([]string{
		"QUEUE_ENTRY_TOKEN_SECRET=cmd-test-secret-0123456789abcdef-0123456",
		"QUEUE_LISTEN_ADDR=127.0.0.1:0",
		"QUEUE_USER_HEADER=X-User-Id",
		"QUEUE_OPEN_EVENTS=true",
	}, env...)
	p := &proc{cmd: cmd, stderr: &syncBuf{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	// The deadline only turns a hang into a clear failure.
	deadline := time.After(30 * time.Second)
	for p.addr == "" {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "tier 2 queue serving" {
				p.addr = l.Addr
			}
		}
		select {
		case <-p.exited:
			if p.addr == "" {
				t.Fatalf("exited before listening: %v\n%s", p.err, p.stderr.String())
			}
		case <-deadline:
			t.Fatalf("did not log its listen address:\n%s", p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return p
}

func TestServesAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	p := start(t)
	resp, err := http.Get("http://" + p.addr + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v\n%s", err, p.stderr.String())
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz = %d", resp.StatusCode)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 15*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
	}
	for _, want := range []string{`"msg":"tier 2 queue listening"`, `"msg":"tier 2 queue serving"`, `"msg":"shutting down"`, "QUEUE_ADMIN_TOKEN is unset"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Fatalf("log lacks %s:\n%s", want, p.stderr.String())
		}
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestWaitsForRedisBeforeServing: with Redis unreachable the binary listens
// (answering 503, so a load balancer sends no one) but does not say it
// serves; it retries with one line per try, every line in one format, the
// go-redis client's own included; a port in use names QUEUE_LISTEN_ADDR.
func TestWaitsForRedisBeforeServing(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(build(t))
	cmd.Env = []string{
		"REDIS_URL=redis://127.0.0.1:1/0",
		"QUEUE_ENTRY_TOKEN_SECRET=cmd-test-secret-0123456789abcdef-0123456",
		"QUEUE_LISTEN_ADDR=127.0.0.1:0",
		"QUEUE_USER_HEADER=X-User-Id",
		"QUEUE_OPEN_EVENTS=true",
	}
	p := &proc{cmd: cmd, stderr: &syncBuf{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })

	type line struct {
		Level, Msg, Addr, Component string
		Attempt                     int
	}
	lines := func() []line {
		var out []line
		for _, raw := range strings.Split(strings.TrimSpace(p.stderr.String()), "\n") {
			if raw == "" { // nothing logged yet: a slow start on a loaded machine
				continue
			}
			var l line
			if err := json.Unmarshal([]byte(raw), &l); err != nil {
				t.Fatalf("a log line that is not JSON: %q", raw)
			}
			out = append(out, l)
		}
		return out
	}
	// Three tries take 250 ms + 500 ms of backoff plus their dials.
	deadline := time.Now().Add(30 * time.Second)
	var addr string
	for tries := 0; tries < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("no three tries in 30s:\n%s", p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		tries = 0
		for _, l := range lines() {
			switch l.Msg {
			case "tier 2 queue listening":
				addr = l.Addr
			case "waiting for dependencies":
				tries = l.Attempt
			case "tier 2 queue serving":
				t.Fatalf("said it serves with Redis unreachable:\n%s", p.stderr.String())
			}
		}
	}
	if !strings.Contains(p.stderr.String(), "redis at 127.0.0.1:1") || !strings.Contains(p.stderr.String(), `"retryIn":"1s"`) {
		t.Errorf("the retry lines do not say what failed and when the next try is:\n%s", p.stderr.String())
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("healthz while waiting = %d, want 503", resp.StatusCode)
	}
	for _, l := range lines() {
		if l.Msg == "admission pass failed" {
			t.Fatalf("the worker ran before Redis answered:\n%s", p.stderr.String())
		}
	}

	// Another instance on the same port says which variable moves it.
	busy := exec.Command(build(t))
	busy.Env = append([]string{}, cmd.Env...)
	busy.Env[2] = "QUEUE_LISTEN_ADDR=" + addr
	out, err := busy.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "address already in use") || !strings.Contains(string(out), "choose another address with QUEUE_LISTEN_ADDR") {
		t.Fatalf("second instance on %s: %v\n%s", addr, err, out)
	}
}
