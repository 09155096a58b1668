// Package testenv starts the real backends vwr's tests run against: a private
// redis-server (standalone, TLS with a password, or a 3-node cluster) and a
// moto server standing in for DynamoDB, SQS and EventBridge. Servers are
// started once per test binary on loopback ports and die with it. A missing binary fails the test and
// names the make target that installs it; nothing is ever skipped. A test
// binary started with AWS_ENDPOINT_URL (`make test-aws`, e.g. LocalStack)
// uses that endpoint instead of starting moto.
//
// Ports: moto listens on port 0 and reports the port it got. redis-server
// cannot (port 0 means "no TCP" to it), so it gets a port that was free a
// moment ago; if another process takes that port first, the server fails to
// bind and exits, or the address answers with another server's process id,
// and testenv starts it again on a new port.
package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// InstallHint is what a test prints when a backend binary is missing.
const InstallHint = "run `make testenv` (it installs redis-server, the .venv with moto, and chromium)"

// server is one child process owned by the test binary.
type server struct {
	cmd    *exec.Cmd
	dir    string
	exited chan struct{} // closed once the process is gone
}

var (
	mu      sync.Mutex
	running []*server
)

// Stop kills every server this package started. Call it from TestMain after
// m.Run; servers also die with the test binary (Pdeathsig) if it is not called.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range running {
		s.kill()
	}
	running = nil
}

// kill ends the process, waits for it and removes its directory.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// discard kills a server that failed to start and forgets it.
func (s *server) discard() {
	s.kill()
	mu.Lock()
	defer mu.Unlock()
	for i, r := range running {
		if r == s {
			running = append(running[:i], running[i+1:]...)
			break
		}
	}
}

// Main runs the package's tests and then stops the servers they started.
// Use it as: func TestMain(m *testing.M) { testenv.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// FreePort returns a loopback TCP port that was free a moment ago. Anything
// may take it before the caller uses it: a server under test should listen
// on port 0 instead, and a test wanting a port where nothing answers may use
// this one.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testenv: find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// RepoRoot returns the directory holding the module's go.mod.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("testenv: getwd: %v", err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/vwr-go/vwr\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("testenv: go.mod of github.com/vwr-go/vwr not found above the working directory")
		}
		dir = parent
	}
}

func lookBinary(tb testing.TB, envVar, name string, fallbacks ...string) string {
	tb.Helper()
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, f := range fallbacks {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	tb.Fatalf("testenv: %s not found (set %s or %s)", name, envVar, InstallHint)
	return ""
}

func start(tb testing.TB, bin string, args []string, dir string) *server {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		tb.Fatalf("testenv: log file: %v", err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		tb.Fatalf("testenv: start %s: %v", bin, err)
	}
	s := &server{cmd: cmd, dir: dir, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	mu.Lock()
	running = append(running, s)
	mu.Unlock()
	return s
}

func (s *server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b)
}

// pickPort chooses a port for redis-server; a test swaps it to hand out a
// taken one.
var pickPort = FreePort

// startAttempts bounds how often a server is started again on a new port
// after losing its port to another process.
const startAttempts = 5

// errLostPort means the server could not have the port it was given.
var errLostPort = errors.New("port taken by another process")

// waitRedis waits until the redis-server s answers on addr as itself (INFO
// reports its process id). It returns errLostPort when s exited because its
// port was in use, or another server answers there.
func waitRedis(s *server, addr string, tlsConf *tls.Config, password string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: tlsConf, Password: password, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	defer c.Close()
	want := "process_id:" + strconv.Itoa(s.cmd.Process.Pid)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			if log := s.log(); strings.Contains(log, "Address already in use") {
				return fmt.Errorf("%w: %s exited; log:\n%s", errLostPort, s.cmd.Path, log)
			}
			return fmt.Errorf("%s exited; log:\n%s", s.cmd.Path, s.log())
		default:
		}
		info, err := c.Info(context.Background(), "server").Result()
		if err == nil {
			if strings.Contains(info, want+"\r\n") {
				return nil
			}
			return fmt.Errorf("%w: another redis-server answers on %s", errLostPort, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer on %s within 20s; log:\n%s", s.cmd.Path, addr, s.log())
}

// startRedisNode starts one redis-server with extra arguments on a free port
// (and, for a cluster node, a free cluster bus port), retrying on new ports
// when another process takes one first.
func startRedisNode(tb testing.TB, extra ...string) (string, *server) {
	tb.Helper()
	return startRedis(tb, nil, "", extra...)
}

// startRedis is startRedisNode; with tlsConf (a client configuration that
// trusts the server) the port is a TLS port and the plain one is off, and
// password is what the server requires.
func startRedis(tb testing.TB, tlsConf *tls.Config, password string, extra ...string) (string, *server) {
	tb.Helper()
	bin := lookBinary(tb, "VWR_REDIS_SERVER", "redis-server", "/usr/bin/redis-server")
	cluster := false
	for _, a := range extra {
		cluster = cluster || a == "--cluster-enabled"
	}
	var last error
	for attempt := 0; attempt < startAttempts; attempt++ {
		port := pickPort(tb)
		dir, err := os.MkdirTemp("", "vwr-redis-")
		if err != nil {
			tb.Fatalf("testenv: temp dir: %v", err)
		}
		args := []string{"--port", strconv.Itoa(port)}
		if tlsConf != nil {
			args = []string{"--port", "0", "--tls-port", strconv.Itoa(port)}
		}
		args = append(append(args, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir), extra...)
		if cluster {
			// The default bus port, port+10000, may be taken or beyond 65535.
			args = append(args, "--cluster-port", strconv.Itoa(pickPort(tb)))
		}
		s := start(tb, bin, args, dir)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if last = waitRedis(s, addr, tlsConf, password); last == nil {
			return addr, s
		}
		s.discard()
		if !errors.Is(last, errLostPort) {
			break
		}
	}
	tb.Fatalf("testenv: redis-server did not start: %v", last)
	return "", nil
}

// shared is one server per test binary, started on first use. A failed start
// is remembered, so every later test that needs the server fails with the
// same reason instead of using a half-started one.
type shared[T any] struct {
	once sync.Once
	val  T
	err  string
}

func (s *shared[T]) get(tb testing.TB, start func(testing.TB) T) T {
	tb.Helper()
	s.once.Do(func() {
		ft := &fatalCatcher{TB: tb}
		func() {
			defer ft.recover()
			s.val = start(ft)
		}()
		s.err = ft.msg
	})
	if s.err != "" {
		tb.Fatal(s.err)
	}
	return s.val
}

var (
	redisServer    shared[string]
	tlsRedisServer shared[TLSRedis]
	clusterServer  shared[[]string]
	motoServer     shared[string]
	externalServer shared[string]
	externalDynamo shared[string]
)

// Redis returns the address (host:port) of this test binary's private
// redis-server, starting it on first use. Tests share it, so each test must use
// its own keys (see UniqueID).
func Redis(tb testing.TB) string {
	tb.Helper()
	return redisServer.get(tb, func(tb testing.TB) string {
		addr, _ := startRedisNode(tb)
		return addr
	})
}

// TLSRedis is a private redis-server that, like ElastiCache with in-transit
// encryption and AUTH, speaks only TLS and demands a password.
type TLSRedis struct {
	Addr     string // 127.0.0.1:port, the TLS port
	Password string
	// CAFile is the PEM file of the self-signed certificate the server
	// presents (valid for 127.0.0.1 and localhost). A Go client trusts it
	// through RootCAs, a child process through SSL_CERT_FILE.
	CAFile string
	// RootCAs holds that certificate.
	RootCAs *x509.CertPool
}

// RedisTLS returns this test binary's private TLS redis-server, starting it
// on first use.
func RedisTLS(tb testing.TB) TLSRedis {
	tb.Helper()
	return tlsRedisServer.get(tb, startTLSRedis)
}

func startTLSRedis(tb testing.TB) TLSRedis {
	dir, err := os.MkdirTemp("", "vwr-redis-tls-")
	if err != nil {
		tb.Fatalf("testenv: temp dir: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("testenv: TLS key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vwr test redis"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("testenv: TLS certificate: %v", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatalf("testenv: TLS key: %v", err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	password := "vwr-test-" + rand.Text()
	addr, _ := startRedis(tb, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, password,
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", certFile,
		"--tls-auth-clients", "no", "--requirepass", password)
	return TLSRedis{Addr: addr, Password: password, CAFile: certFile, RootCAs: pool}
}

// RedisCluster returns the seed addresses of a private 3-master Redis Cluster,
// starting it on first use.
func RedisCluster(tb testing.TB) []string {
	tb.Helper()
	return clusterServer.get(tb, startCluster)
}

func startCluster(tb testing.TB) []string {
	cli := lookBinary(tb, "VWR_REDIS_CLI", "redis-cli", "/usr/bin/redis-cli")
	var addrs []string
	for i := 0; i < 3; i++ {
		addr, _ := startRedisNode(tb, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("testenv: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, a := range addrs {
			host, port, _ := net.SplitHostPort(a)
			out, err := exec.Command(cli, "-h", host, "-p", port, "cluster", "info").Output()
			if err != nil || !strings.Contains(string(out), "cluster_state:ok") {
				ok = false
				break
			}
		}
		if ok {
			return addrs
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("testenv: redis cluster on %v did not reach cluster_state:ok", addrs)
	return nil
}

// externalAWS is the AWS_ENDPOINT_URL the test binary was started with: an
// endpoint the tests did not start (LocalStack, a shared moto), read once
// before any test's t.Setenv can change it.
var externalAWS = strings.TrimRight(os.Getenv("AWS_ENDPOINT_URL"), "/")

// externalDynamoDB is AWS_ENDPOINT_URL_DYNAMODB at start: DynamoDB's own
// endpoint when the AWS suites run against LocalStack, whose DynamoDB is
// DynamoDB Local (`make test-localstack` sends DynamoDB to moto instead).
var externalDynamoDB = strings.TrimRight(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), "/")

// DynamoDB returns the endpoint URL for DynamoDB clients: the
// AWS_ENDPOINT_URL_DYNAMODB the test binary was started with, else Moto's.
// Tests give DynamoDB clients this one and every other client Moto's, so one
// run can use two emulators, as the SDK does with the same two variables.
func DynamoDB(tb testing.TB) string {
	tb.Helper()
	if externalDynamoDB != "" {
		return externalDynamo.get(tb, func(tb testing.TB) string { return useExternal(tb, externalDynamoDB) })
	}
	return Moto(tb)
}

// Moto returns the endpoint URL of the AWS stand-in for DynamoDB and SQS.
// When the test binary was started with AWS_ENDPOINT_URL (`make test-aws
// AWS_ENDPOINT_URL=http://localhost:4566`), that endpoint is used and nothing
// is started; otherwise this test binary's private moto server
// (http://127.0.0.1:port), started on first use. Point AWS clients at it with
// AWS_ENDPOINT_URL or an explicit BaseEndpoint; use unique table and queue
// names per test.
func Moto(tb testing.TB) string {
	tb.Helper()
	if externalAWS != "" {
		return externalServer.get(tb, func(tb testing.TB) string { return useExternal(tb, externalAWS) })
	}
	return motoServer.get(tb, startMoto)
}

// useExternal checks that the endpoint answers before the tests use it.
func useExternal(tb testing.TB, url string) string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if answers(url) {
			return url
		}
		if time.Now().After(deadline) {
			tb.Fatalf("testenv: AWS_ENDPOINT_URL=%s does not answer HTTP; start LocalStack (or unset it to use moto from `make testenv`)", url)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// answers is the health check: any HTTP response to GET / means the server
// is up. It asks nothing a particular emulator alone serves (moto's
// /moto-api/, LocalStack's /_localstack/health), so it works with both.
func answers(url string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url + "/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// motoListening is the line moto_server (werkzeug) logs with the port it got.
var motoListening = regexp.MustCompile(`Running on http://127\.0\.0\.1:(\d+)`)

func startMoto(tb testing.TB) string {
	root := RepoRoot(tb)
	// Unless VWR_MOTO_SERVER names one, prefer the project's pinned venv
	// over anything else on PATH.
	bin := filepath.Join(root, ".venv", "bin", "moto_server")
	if os.Getenv("VWR_MOTO_SERVER") != "" || !fileExists(bin) {
		bin = lookBinary(tb, "VWR_MOTO_SERVER", "moto_server")
	}
	dir, err := os.MkdirTemp("", "vwr-moto-")
	if err != nil {
		tb.Fatalf("testenv: temp dir: %v", err)
	}
	// Port 0: the kernel picks a free port and moto logs it.
	s := start(tb, bin, []string{"-H", "127.0.0.1", "-p", "0"}, dir)
	deadline := time.Now().Add(60 * time.Second)
	url := ""
	for time.Now().Before(deadline) {
		if url == "" {
			if m := motoListening.FindStringSubmatch(s.log()); m != nil {
				url = "http://127.0.0.1:" + m[1]
			}
		}
		if url != "" && answers(url) {
			return url
		}
		select {
		case <-s.exited:
			tb.Fatalf("testenv: moto_server exited; log:\n%s", s.log())
		case <-time.After(100 * time.Millisecond):
		}
	}
	tb.Fatalf("testenv: moto_server did not answer within 60s; log:\n%s", s.log())
	return ""
}

// AWSEnv sets the environment an AWS SDK client needs to talk to endpoint with
// dummy credentials, for the duration of the test. It uses t.Setenv, so the
// calling test must not be parallel; parallel tests should build clients with
// an explicit endpoint instead.
func AWSEnv(t *testing.T, endpoint string) {
	t.Helper()
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_REGION", "us-east-1")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var uniqueMu sync.Mutex
var uniqueN int

// UniqueID returns an id, valid under ^[A-Za-z0-9_-]{1,64}$, that no other
// test in any concurrently running package uses, for keys and table names.
func UniqueID(tb testing.TB) string {
	tb.Helper()
	uniqueMu.Lock()
	uniqueN++
	n := uniqueN
	uniqueMu.Unlock()
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, tb.Name())
	suffix := fmt.Sprintf("-%d-%d", os.Getpid(), n)
	if len(name)+len(suffix) > 64 {
		name = name[len(name)+len(suffix)-64:]
	}
	return name + suffix
}

// fatalCatcher turns Fatal into a recorded message and a panic that
// shared.get recovers, so a failed start does not end the test inside once.Do.
type fatalCatcher struct {
	testing.TB
	msg string
}

type fatalPanic struct{}

func (f *fatalCatcher) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(fatalPanic{})
}

func (f *fatalCatcher) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(fatalPanic{})
}

func (f *fatalCatcher) recover() {
	if r := recover(); r != nil {
		if _, ok := r.(fatalPanic); !ok {
			panic(r)
		}
	}
}
