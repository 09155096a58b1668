package tier1app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/token"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRedisStoreOnACluster: VWR_TIER1_STORE=redis takes a Cluster URL, as a
// Lambda on ElastiCache in cluster mode would get, and the store works on
// the real 3-node cluster the tests start.
func TestRedisStoreOnACluster(t *testing.T) {
	t.Parallel()
	url := "redis+cluster://" + strings.Join(testenv.RedisCluster(t), ",")
	c, err := FromEnv(map[string]string{"VWR_TIER1_STORE": "redis", "VWR_TIER1_REDIS_URL": url})
	if err != nil {
		t.Fatal(err)
	}
	store, closeStore, err := OpenStore(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeStore() })
	keys, err := token.NewKeyRing("t1", []byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	svc := tier1.New(store, keys, clk, c.Service())
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	if _, err := svc.Activate(ctx, ev, 4, 10); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i := 0; i < 20; i++ {
		r, err := svc.Assign(ctx, ev, "")
		if err != nil || !r.Active || seen[r.Position] {
			t.Fatalf("assign %d on the cluster: %+v, %v", i, r, err)
		}
		seen[r.Position] = true
	}
	st, err := svc.AdvanceBy(ctx, ev, 5)
	if err != nil || st.Assigned != 20 || st.ServingCounter != 5 {
		t.Fatalf("admin status on the cluster: %+v, %v", st, err)
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want int64
		ok   bool
	}{
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}, 1024 << 20 * 9 / 10, true},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "GOMEMLIMIT": "500MiB"}, 0, false},
		{map[string]string{}, 0, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}, 0, false},
	} {
		if got, ok := memoryLimit(tc.env); got != tc.want || ok != tc.ok {
			t.Errorf("memoryLimit(%v) = %d, %v; want %d, %v", tc.env, got, ok, tc.want, tc.ok)
		}
	}
}
