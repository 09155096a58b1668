// Package lambdatest runs a built Lambda `bootstrap` binary the way the Lambda
// service does: it serves the Runtime API on loopback, starts the binary with
// AWS_LAMBDA_RUNTIME_API pointing at it, hands it events and collects the
// responses. That is what `sam local invoke` does inside its container; the
// official emulator is not available to vwr's tests, and the binary under test
// is byte-for-byte what `make lambdas` ships (built for the host instead of
// linux/arm64 so it can execute here).
//
// Typical use from any lambdas/<fn> test:
//
//	bin := lambdatest.Build(t, "./lambdas/assign")
//	fn := lambdatest.Start(t, bin, lambdatest.Options{Env: map[string]string{"X": "y"}})
//	res := fn.Invoke(t, payload)
//	// res.Payload is the JSON the handler returned; res.Error is set when the
//	// handler returned an error or panicked.
//
// The process stays up between invocations (a warm container), so cold-start
// wiring runs once per Start, as in Lambda.
package lambdatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
)

// APIVersion is the Runtime API version prefix the harness serves.
const APIVersion = "2018-06-01"

var (
	buildMu    sync.Mutex
	buildCache = map[string]*buildResult{}
)

type buildResult struct {
	once sync.Once
	path string
	err  string
}

// Build compiles the Lambda main package pkg (a path relative to the module
// root, such as "./lambdas/assign") with -tags lambda.norpc -trimpath for the
// host's GOOS/GOARCH and returns the path of the `bootstrap` binary. Each
// package is built once per test binary; concurrent callers share the result.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	buildMu.Lock()
	br, ok := buildCache[pkg]
	if !ok {
		br = &buildResult{}
		buildCache[pkg] = br
	}
	buildMu.Unlock()
	br.once.Do(func() {
		root := testenv.RepoRoot(tb)
		dir, err := os.MkdirTemp("", "vwr-bootstrap-")
		if err != nil {
			br.err = fmt.Sprintf("lambdatest: temp dir: %v", err)
			return
		}
		out := filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			br.err = fmt.Sprintf("lambdatest: go build %s: %v\n%s", pkg, err, b)
			return
		}
		br.path = out
	})
	if br.err != "" {
		tb.Fatal(br.err)
	}
	return br.path
}

// Options configure one function process.
type Options struct {
	// Env is the function's environment. The process does not inherit the
	// test's environment (Lambda starts with a clean one); the harness adds
	// only the variables the Lambda service itself sets.
	Env map[string]string
	// FunctionName is reported as AWS_LAMBDA_FUNCTION_NAME (default "test-function").
	FunctionName string
	// Timeout is the per-invocation deadline (default 30s), sent as
	// Lambda-Runtime-Deadline-Ms like the real service.
	Timeout time.Duration
}

// FunctionError is the error document a runtime posts to …/error or
// …/init/error.
type FunctionError struct {
	Message    string          `json:"errorMessage"`
	Type       string          `json:"errorType"`
	StackTrace json.RawMessage `json:"stackTrace,omitempty"`
}

// Error reports the error type and message the function sent.
func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Result is the outcome of one invocation.
type Result struct {
	RequestID string
	// Payload is the body the function posted to …/response.
	Payload []byte
	// Error is set when the function posted to …/error (a returned error or a
	// recovered panic).
	Error *FunctionError
}

// Function is one running bootstrap process and the Runtime API serving it.
type Function struct {
	opts    Options
	srv     *http.Server
	addr    string
	cmd     *exec.Cmd
	logs    *LogBuffer
	exited  chan struct{}
	waitErr error

	pending chan *invocation // queued for /next

	mu        sync.Mutex
	inflight  map[string]*invocation
	initError *FunctionError
	initErrCh chan struct{}
	seq       int
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	done     chan Result
}

// Start serves the Runtime API on a loopback port and starts bin against it.
// The process and the server are stopped by t.Cleanup.
func Start(tb testing.TB, bin string, opts Options) *Function {
	tb.Helper()
	if opts.FunctionName == "" {
		opts.FunctionName = "test-function"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	f := &Function{
		opts:      opts,
		logs:      &LogBuffer{},
		exited:    make(chan struct{}),
		pending:   make(chan *invocation, 16),
		inflight:  map[string]*invocation{},
		initErrCh: make(chan struct{}),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("lambdatest: listen: %v", err)
	}
	f.addr = ln.Addr().String()
	f.srv = &http.Server{Handler: f.routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()

	env := []string{
		"AWS_LAMBDA_RUNTIME_API=" + f.addr,
		"AWS_LAMBDA_FUNCTION_NAME=" + opts.FunctionName,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + opts.FunctionName,
		"_HANDLER=bootstrap",
		"LAMBDA_TASK_ROOT=" + filepath.Dir(bin),
		"TZ=:UTC",
	}
	if _, ok := opts.Env["AWS_REGION"]; !ok {
		env = append(env, "AWS_REGION=us-east-1")
	}
	for k, v := range opts.Env {
		env = append(env, k+"="+v)
	}
	f.cmd = exec.Command(bin)
	f.cmd.Dir = filepath.Dir(bin)
	f.cmd.Env = env
	f.cmd.Stdout, f.cmd.Stderr = f.logs, f.logs
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := f.cmd.Start(); err != nil {
		_ = f.srv.Close()
		tb.Fatalf("lambdatest: start %s: %v", bin, err)
	}
	go func() {
		f.waitErr = f.cmd.Wait()
		close(f.exited)
	}()
	tb.Cleanup(f.stop)
	return f
}

func (f *Function) stop() {
	if f.cmd.Process != nil {
		_ = f.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.exited:
		case <-time.After(2 * time.Second):
			_ = f.cmd.Process.Kill()
			<-f.exited
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
	_ = f.srv.Close()
}

// Logs returns everything the process wrote to stdout and stderr so far
// (what CloudWatch Logs would receive).
func (f *Function) Logs() string { return f.logs.String() }

// Invoke sends payload to the function and waits for its response, error,
// init error or exit. Anything but a response or a function error fails tb.
func (f *Function) Invoke(tb testing.TB, payload []byte) Result {
	tb.Helper()
	res, err := f.InvokeErr(payload)
	if err != nil {
		tb.Fatalf("lambdatest: invoke: %v\nfunction logs:\n%s", err, f.Logs())
	}
	return res
}

// InvokeErr is Invoke returning harness failures (process exit, init error,
// timeout) as an error instead of failing the test.
func (f *Function) InvokeErr(payload []byte) (Result, error) {
	f.mu.Lock()
	f.seq++
	inv := &invocation{
		id:       fmt.Sprintf("00000000-0000-4000-8000-%012d", f.seq),
		payload:  payload,
		deadline: time.Now().Add(f.opts.Timeout),
		done:     make(chan Result, 1),
	}
	f.mu.Unlock()
	select {
	case f.pending <- inv:
	default:
		return Result{}, errors.New("too many queued invocations")
	}
	timer := time.NewTimer(f.opts.Timeout + 5*time.Second)
	defer timer.Stop()
	select {
	case r := <-inv.done:
		return r, nil
	case <-f.initErrCh:
		return Result{}, fmt.Errorf("init error: %v", f.InitError())
	case <-f.exited:
		return Result{}, fmt.Errorf("process exited before answering (%v)", f.waitErr)
	case <-timer.C:
		return Result{}, fmt.Errorf("no answer within %s", f.opts.Timeout)
	}
}

// InitError returns the error the runtime posted to /runtime/init/error, if any.
func (f *Function) InitError() *FunctionError {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.initError
}

// WaitExit waits up to d for the process to exit and reports whether it did.
// A function whose wiring fails at cold start exits (Lambda reports
// Runtime.ExitError); tests of bad configuration use this.
func (f *Function) WaitExit(d time.Duration) bool {
	select {
	case <-f.exited:
		return true
	case <-time.After(d):
		return false
	}
}

func (f *Function) routes() http.Handler {
	mux := http.NewServeMux()
	base := "/" + APIVersion + "/runtime"
	mux.HandleFunc("GET "+base+"/invocation/next", f.next)
	mux.HandleFunc("POST "+base+"/invocation/{id}/response", f.respond)
	mux.HandleFunc("POST "+base+"/invocation/{id}/error", f.fail)
	mux.HandleFunc("POST "+base+"/init/error", f.initFail)
	return mux
}

// next blocks until an invocation is queued, like the real Runtime API.
func (f *Function) next(w http.ResponseWriter, r *http.Request) {
	var inv *invocation
	select {
	case inv = <-f.pending:
	case <-r.Context().Done():
		return
	}
	f.mu.Lock()
	f.inflight[inv.id] = inv
	f.mu.Unlock()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:"+f.opts.FunctionName)
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(inv.payload)
}

func (f *Function) take(w http.ResponseWriter, r *http.Request) (*invocation, []byte, bool) {
	id := r.PathValue("id")
	f.mu.Lock()
	inv, ok := f.inflight[id]
	delete(f.inflight, id)
	f.mu.Unlock()
	if !ok {
		http.Error(w, `{"errorMessage":"unknown request id","errorType":"InvalidRequestID"}`, http.StatusBadRequest)
		return nil, nil, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, `{"errorMessage":"read body","errorType":"InvalidBody"}`, http.StatusBadRequest)
		return nil, nil, false
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
	return inv, body, true
}

func (f *Function) respond(w http.ResponseWriter, r *http.Request) {
	if inv, body, ok := f.take(w, r); ok {
		inv.done <- Result{RequestID: inv.id, Payload: body}
	}
}

func (f *Function) fail(w http.ResponseWriter, r *http.Request) {
	inv, body, ok := f.take(w, r)
	if !ok {
		return
	}
	fe := &FunctionError{}
	if err := json.Unmarshal(body, fe); err != nil || fe.Type == "" && fe.Message == "" {
		fe = &FunctionError{Type: r.Header.Get("Lambda-Runtime-Function-Error-Type"), Message: strings.TrimSpace(string(body))}
	}
	inv.done <- Result{RequestID: inv.id, Error: fe}
}

func (f *Function) initFail(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fe := &FunctionError{}
	if err := json.Unmarshal(body, fe); err != nil {
		fe = &FunctionError{Message: strings.TrimSpace(string(body))}
	}
	if fe.Type == "" {
		fe.Type = r.Header.Get("Lambda-Runtime-Function-Error-Type")
	}
	f.mu.Lock()
	first := f.initError == nil
	if first {
		f.initError = fe
	}
	f.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
	if first {
		close(f.initErrCh)
	}
}

// LogBuffer collects what a function writes (its slog and EMF lines) from
// several goroutines at once: a running bootstrap's stdout and stderr here,
// a handler's Logger and Metrics in in-process handler tests.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
