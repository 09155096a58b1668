package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { Main(m) }

func TestRedisAnswers(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: Redis(t)})
	t.Cleanup(func() { c.Close() })
	key := UniqueID(t)
	if err := c.Set(context.Background(), key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got := c.Get(context.Background(), key).Val(); got != "v" {
		t.Fatalf("GET = %q, want v", got)
	}
	if a, b := Redis(t), Redis(t); a != b {
		t.Fatalf("Redis started twice: %s, %s", a, b)
	}
}

func TestRedisClusterCoversAllSlots(t *testing.T) {
	t.Parallel()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: RedisCluster(t)})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	covered := 0
	for _, s := range slots {
		covered += s.End - s.Start + 1
	}
	if covered != 16384 || len(slots) != 3 {
		t.Fatalf("cluster covers %d slots in %d ranges, want 16384 in 3", covered, len(slots))
	}
	// Keys in different slots must still be reachable through the client.
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := c.Set(ctx, UniqueID(t)+k, 1, 0).Err(); err != nil {
			t.Fatalf("SET on cluster: %v", err)
		}
	}
}

// TestMotoAnswers: the AWS stand-ins (moto, or AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_DYNAMODB) serve DynamoDB and SQS calls through the SDK,
// as the store and notify tests use them.
func TestMotoAnswers(t *testing.T) {
	t.Parallel()
	cfg := func(endpoint string) aws.Config {
		return aws.Config{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(endpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		}
	}
	ctx := context.Background()
	if _, err := dynamodb.NewFromConfig(cfg(DynamoDB(t))).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("DynamoDB ListTables: %v", err)
	}
	if _, err := sqs.NewFromConfig(cfg(Moto(t))).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("SQS ListQueues: %v", err)
	}
}

// TestHealthCheckIsNeutral: any HTTP answer counts, whatever the path serves
// (LocalStack and moto answer / differently), and a closed port does not.
func TestHealthCheckIsNeutral(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer srv.Close()
	if !answers(srv.URL) {
		t.Fatal("a server answering 404 on / is up")
	}
	if got := useExternal(t, srv.URL); got != srv.URL {
		t.Fatalf("useExternal = %q, want %q", got, srv.URL)
	}
	if answers(fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))) {
		t.Fatal("a closed port answered")
	}
}

func TestUniqueIDIsValidAndDistinct(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		id := UniqueID(t)
		if !re.MatchString(id) {
			t.Fatalf("UniqueID %q does not match the id pattern", id)
		}
		if seen[id] {
			t.Fatalf("UniqueID repeated %q", id)
		}
		seen[id] = true
	}
}

// TestRedisMovesOffATakenPort hands redis-server a port another process
// listens on: it must fail to bind there and come up on a new port, as
// itself. Not parallel: it swaps pickPort while no other test starts a server.
func TestRedisMovesOffATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPort = func(tb testing.TB) int {
		calls++
		if calls == 1 {
			return taken
		}
		return FreePort(tb)
	}
	defer func() { pickPort = FreePort }()
	addr, s := startRedisNode(t)
	defer s.discard()
	if calls < 2 || addr == l.Addr().String() {
		t.Fatalf("started on %s after %d port picks; want a second pick", addr, calls)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil || !strings.Contains(info, fmt.Sprintf("process_id:%d\r\n", s.cmd.Process.Pid)) {
		t.Fatalf("INFO on %s: %v; not the started server", addr, err)
	}
}

func TestRedisTLSNeedsTLSAndThePassword(t *testing.T) {
	t.Parallel()
	r := RedisTLS(t)
	ctx := context.Background()
	good := redis.NewClient(&redis.Options{Addr: r.Addr, Password: r.Password, TLSConfig: &tls.Config{RootCAs: r.RootCAs}})
	t.Cleanup(func() { good.Close() })
	if err := good.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING over TLS with the password: %v", err)
	}
	for name, o := range map[string]*redis.Options{
		"plain TCP":   {Addr: r.Addr, Password: r.Password},
		"no password": {Addr: r.Addr, TLSConfig: &tls.Config{RootCAs: r.RootCAs}},
	} {
		o.MaxRetries, o.DialTimeout, o.ReadTimeout = -1, time.Second, time.Second
		c := redis.NewClient(o)
		if err := c.Ping(ctx).Err(); err == nil {
			t.Errorf("%s: PING succeeded", name)
		}
		c.Close()
	}
}

// TestDynamoDBClientsUseDynamoDB: a test's DynamoDB client takes its
// endpoint from DynamoDB(t), never Moto(t), or `make test-localstack` sends
// its calls to LocalStack, which serves no DynamoDB there.
func TestDynamoDBClientsUseDynamoDB(t *testing.T) {
	t.Parallel()
	root := RepoRoot(t)
	bad := regexp.MustCompile(`dynamodb\.(New|NewFromConfig)\(.*Moto\(|BaseEndpoint:\s*aws\.String\((testenv\.)?Moto\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), "service/dynamodb\"") {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if bad.MatchString(line) && !strings.Contains(line, "sqs") {
				t.Errorf("%s:%d: a DynamoDB client on Moto(t); use testenv.DynamoDB(t)", strings.TrimPrefix(path, root+"/"), i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
