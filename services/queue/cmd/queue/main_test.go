package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// build compiles this binary into the test's temp dir.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "queue")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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

// start runs the binary on the package's redis-server with a free listen
// address, visitors identified by X-User-Id, and extra variables on top. It
// returns the address, the process and its captured stderr.
func start(t *testing.T, extra ...string) (string, *exec.Cmd, *syncBuf) {
	t.Helper()
	bin := build(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cmd := exec.Command(bin)
	cmd.Env = append([]string{
		"REDIS_URL=redis://" + testenv.Redis(t) + "/0",
		"QUEUE_ENTRY_TOKEN_SECRET=cmd-test-secret-0123456789abcdef-0123456",
		"QUEUE_LISTEN_ADDR=" + addr,
		"QUEUE_USER_HEADER=X-User-Id",
	}, extra...)
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return addr, cmd, stderr
}

func TestServesAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	addr, cmd, stderr := start(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("healthz = %d", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never served: %v\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("did not stop on SIGTERM:\n%s", stderr.String())
	}
	for _, want := range []string{`"msg":"tier 2 queue listening"`, `"msg":"shutting down"`, "QUEUE_ADMIN_TOKEN is unset"} {
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("log lacks %s:\n%s", want, stderr.String())
		}
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
