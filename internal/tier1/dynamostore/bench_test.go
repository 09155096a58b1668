package dynamostore_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/middleware"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

// BenchmarkEnterPartitionShare measures with the Counter middleware how the
// writes of b.N plain enters spread over partition keys, on moto, for 1, 4
// and 16 shards, and for 16 shards in the legacy layout (every shard under
// the event's partition key) for contrast. docs/tier1-design.md cites a run
// with a fixed count:
//
//	go test -run '^$' -bench EnterPartitionShare -benchtime 4000x ./internal/tier1/dynamostore/
//
// It reports the hottest partition's share of all writes, writes per enter,
// and the enters/s per event at which that partition reaches DynamoDB's
// 1,000 writes/s: 1000 / (share × writes per enter).
func BenchmarkEnterPartitionShare(b *testing.B) {
	cases := []struct {
		name   string
		shards int
		legacy bool
	}{
		{"shards=1", 1, false}, {"shards=4", 4, false}, {"shards=16", 16, false},
		{"legacy/shards=16", 16, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			counter := dynamostore.NewCounter()
			store := newStore(b, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{counter.Register}})
			svc := tier1.New(store, storetest.Keys(b), clock.NewManual(storetest.Epoch), tier1.Config{Logger: slog.New(slog.DiscardHandler)})
			ctx := context.Background()
			event := testenv.UniqueID(b)
			if tc.legacy {
				putLegacyEvent(b, store, event, make([]int64, tc.shards))
			} else if _, err := svc.Activate(ctx, event, tc.shards, 100); err != nil {
				b.Fatal(err)
			}
			counter.Reset()
			b.ResetTimer()
			for range b.N {
				if r, err := svc.Assign(ctx, event, ""); err != nil || !r.Active {
					b.Fatalf("Assign = %+v, %v", r, err)
				}
			}
			b.StopTimer()
			st := counter.Stats()
			hot := st.Partitions[0]
			if own := strings.HasPrefix(hot.Key, store.Config().EventsTable+"/pk="+event+"#s"); own == tc.legacy {
				b.Fatalf("hottest partition %+v: want a shard's own partition: %v", hot, !tc.legacy)
			}
			share, perEnter := st.HottestPartitionWriteShare(), float64(st.Writes)/float64(b.N)
			b.ReportMetric(share, "hot-partition-share")
			b.ReportMetric(st.HottestWriteShare(), "hot-item-share")
			b.ReportMetric(perEnter, "writes/enter")
			b.ReportMetric(1000/(share*perEnter), "enters/s-limit")
			b.ReportMetric(float64(len(st.Partitions)), "partitions")
		})
	}
}
