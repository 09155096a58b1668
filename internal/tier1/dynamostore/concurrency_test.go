package dynamostore_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

// TestConcurrentEntersAndAdvancers is the concurrency test against
// moto: 12 goroutines × 100 enters on 4 shards while two advancers tick
// after every 60 enters, then ticks until everyone is admitted. moto
// answers one request at a time in about 10 ms on a 2-core machine, so the
// test costs its request count: about 2.4 per enter plus one snapshot per
// worker per tick. The batch is small enough that about a third of the line
// is left for the drain, where every tick must admit exactly one batch.
func TestConcurrentEntersAndAdvancers(t *testing.T) {
	t.Parallel()
	const (
		workers    = 12
		each       = 100
		shards     = 4
		batch      = 40
		roundEvery = 60 // enters between two advancer rounds
	)
	counter := dynamostore.NewCounter()
	store := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{counter.Register}})
	clk := clock.NewManual(storetest.Epoch)
	keys := storetest.Keys(t)
	quiet := slog.New(slog.DiscardHandler)
	adv1 := tier1.New(store, keys, clk, tier1.Config{Logger: quiet})
	adv2 := tier1.New(store, keys, clk, tier1.Config{Logger: quiet})
	ctx := context.Background()
	event := testenv.UniqueID(t)
	if _, err := adv1.Activate(ctx, event, shards, batch); err != nil {
		t.Fatal(err)
	}
	counter.Reset()

	type entered struct {
		pos    tier1.Position
		ticket int64 // arrival order, taken just before the enter
	}
	var (
		mu      sync.Mutex
		all     []entered
		tickets atomic.Int64
		wg      sync.WaitGroup
		failed  atomic.Bool
		// due gets a value every roundEvery enters, so the advancers tick
		// while people enter, paced by progress instead of sleeps.
		due = make(chan struct{}, workers*each/roundEvery)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := tier1.New(store, keys, clk, tier1.Config{Logger: quiet})
			for i := range each {
				key := ""
				if i%10 == 0 {
					key = fmt.Sprintf("w%d-%d", w, i)
				}
				ticket := tickets.Add(1)
				if ticket%roundEvery == 0 {
					due <- struct{}{}
				}
				r, err := svc.Assign(ctx, event, key)
				if err != nil || !r.Active {
					t.Errorf("Assign: %+v, %v", r, err)
					failed.Store(true)
					return
				}
				if key != "" {
					again, err := svc.Assign(ctx, event, key)
					if err != nil || !again.Reused || again.RequestID != r.RequestID || again.Position != r.Position {
						t.Errorf("idempotent retry = %+v, %v; first %+v", again, err, r)
						failed.Store(true)
						return
					}
				}
				p := tier1.Position{RequestID: r.RequestID, Position: r.Position, Shard: int((r.Position - 1) % shards)}
				mu.Lock()
				all = append(all, entered{p, ticket})
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// Two advancers tick together while people enter; the clock moves one
	// tick between rounds. Exactly one of them may raise per tick.
	round := func() (raised int, admitted int64) {
		clk.Advance(10 * time.Second)
		var rs [2][]tier1.TickResult
		var twg sync.WaitGroup
		for i, s := range []*tier1.Service{adv1, adv2} {
			twg.Add(1)
			go func() {
				defer twg.Done()
				res, err := s.Tick(ctx)
				if err != nil {
					t.Errorf("Tick: %v", err)
				}
				rs[i] = res
			}()
		}
		twg.Wait()
		for _, res := range rs {
			for _, r := range res {
				if r.EventID == event && r.Skipped == "" {
					raised++
					admitted += r.Admitted
				}
			}
		}
		st, err := adv1.AdminStatus(ctx, event)
		if err != nil {
			t.Fatalf("AdminStatus: %v", err)
		}
		if st.ServingCounter > st.MaxAssigned {
			t.Fatalf("serving %d passed maxAssigned %d", st.ServingCounter, st.MaxAssigned)
		}
		if raised > 1 {
			t.Fatalf("both advancers raised in one tick")
		}
		if admitted > batch {
			t.Fatalf("one tick admitted %d > batch %d", admitted, batch)
		}
		return raised, admitted
	}
	rounds := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-due:
			round()
			rounds++
		}
	}
	if failed.Load() {
		t.FailNow()
	}
	enterStats := counter.Stats()

	snap, err := store.Snapshot(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	positions := make([]tier1.Position, len(all))
	for i, e := range all {
		positions[i] = e.pos
	}
	if len(positions) != workers*each {
		t.Fatalf("%d enters recorded, want %d", len(positions), workers*each)
	}
	storetest.CheckStrided(t, positions, shards, snap.Counters)

	// Fairness: how far each position is from its arrival rank.
	var worst int64
	for _, e := range all {
		worst = max(worst, abs(e.pos.Position-e.ticket))
	}
	bound := tier1.FairnessBound(workers*each, shards, 1e-6)
	t.Logf("fairness: %d visitors on %d shards: worst |position − arrival rank| = %d (bound %d + %d in flight)", len(all), shards, worst, bound, workers)
	if worst > bound+workers {
		t.Errorf("worst displacement %d exceeds the bound %d + %d", worst, bound, workers)
	}

	// With everyone in, each tick admits exactly one batch until the line is empty.
	drained := 0
	for ; ; drained++ {
		before, _ := adv1.AdminStatus(ctx, event)
		if before.Waiting == 0 {
			break
		}
		raised, admitted := round()
		after, _ := adv1.AdminStatus(ctx, event)
		want := min(int64(batch), before.Waiting)
		if raised != 1 || admitted != want || after.Admitted-before.Admitted != want {
			t.Fatalf("tick from %+v: raised %d, admitted %d (status says %d), want exactly %d", before, raised, admitted, after.Admitted-before.Admitted, want)
		}
		if after.ServingCounter > after.MaxAssigned {
			t.Fatalf("serving %d passed maxAssigned %d", after.ServingCounter, after.MaxAssigned)
		}
	}
	if drained == 0 {
		t.Fatalf("the line was empty when the enters ended: raise workers×each or lower batch so the drain is tested")
	}
	final, _ := adv1.AdminStatus(ctx, event)
	if final.ServingCounter != final.MaxAssigned || final.Admitted != workers*each {
		t.Fatalf("final status %+v: want everyone admitted, serving = maxAssigned", final)
	}

	hot, hotPart := enterStats.Items[0], enterStats.Partitions[0]
	t.Logf("%d drain rounds", drained)
	t.Logf("during %d rounds of enters: %d writes, %d reads for %d visitors (%.2f writes/visitor); hottest item %s took %.1f%% of writes, hottest partition %s %.1f%%",
		rounds, enterStats.Writes, enterStats.Reads, len(all), float64(enterStats.Writes)/float64(len(all)),
		hot.Key, 100*enterStats.HottestWriteShare(), hotPart.Key, 100*enterStats.HottestPartitionWriteShare())
	if share := enterStats.HottestWriteShare(); share > 0.2 {
		t.Errorf("hottest item took %.2f of writes; with %d shards each shard should take about 1/%d of the writes", share, shards, 2*shards)
	}
	// Each shard is its own partition, so no partition is hotter than the
	// hottest shard item (with shared partition keys it took ~1/2).
	if hotPart.Writes != hot.Writes || !strings.HasPrefix(hotPart.Key, store.Config().EventsTable+"/pk="+event+"#s") {
		t.Errorf("hottest partition %+v, want the hottest shard's own partition (hottest item %+v)", hotPart, hot)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
