package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vwr-go/vwr/internal/loadtest"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestLoadtestTier2Bounds is issue 17's rehearsal in CI: 1,000 visitors on
// two Tier 2 instances, Tier 1 letting them through faster than Tier 2
// admits (-batch 500), so a line of hundreds forms and most queued polls
// are answered from an instance's memory of it. Nobody is passed over,
// nobody is let in above the threshold, nobody is lost, and the people-ahead
// measurement samples hundreds of answers, estimated ones among them, with
// no answer read in the store's step out of the bound (a check of the
// measurement). Issue 17's two bounds on answers from memory: Redis
// commands per queued poll ≤ 0.3, and sampled people-ahead counts within
// max(5, 2 %) of the exact rank, at most 2 out of it (below;
// docs/tier2-store.md, "Guarantees").
func TestLoadtestTier2Bounds(t *testing.T) {
	tier2, tier1 := testenv.NewOwnRedis(t), testenv.NewOwnRedis(t)
	dir, stdout := runLoadtestCLI(t, map[string]string{"REDIS_URL": "redis://" + tier2.Addr, "VWR_TIER1_REDIS_URL": "redis://" + tier1.Addr},
		"-visitors", "1000", "-rate", "250", "-threshold", "50", "-dwell", "1s", "-batch", "500", "-shards", "4",
		"-ahead-sample-every", "2", "-event", testenv.UniqueID(t), "-timeout", "4m")
	t.Logf("summary:\n%s", stdout)
	rep, _ := readReport(t, dir)
	if rep.Inversions.Tier2 != 0 {
		passed, _ := os.ReadFile(filepath.Join(dir, loadtest.PassedOverFile))
		t.Errorf("%d Tier 2 inversions; passed over:\n%s", rep.Inversions.Tier2, passed)
	}
	if rep.OverAdmissions != 0 || rep.MaxActive > rep.Threshold {
		t.Errorf("%d over-admissions, %d active at most of %d", rep.OverAdmissions, rep.MaxActive, rep.Threshold)
	}
	if v := rep.Visitors; rep.LostVisitors != 0 || v.Admitted != 1000 || v.Left != 1000 || v.Unfinished != 0 {
		t.Errorf("lost %d, visitors %+v", rep.LostVisitors, v)
	}
	polls := rep.BackendOpsPerVisitor.RedisByRequest[loadtest.KindQueuedPoll]
	if polls.Requests < 1000 {
		t.Errorf("queued polls %+v: want ≥ 1,000", polls)
	}
	pa := rep.WaitEstimateError.PeopleAheadError
	if pa == nil || pa.Samples < 200 || pa.EstimatedShare == 0 || pa.OutOfBoundExact != 0 {
		t.Fatalf("people ahead vs the exact rank %+v: want ≥ 200 samples, some estimated, no exact answer out of the bound", pa)
	}
	t.Logf("%.3f Redis commands per queued poll; %d of %d people-ahead counts beyond max(5, 2 %%), the furthest off %+v",
		polls.RedisCommandsPerRequest, pa.OutOfBound, pa.Samples, pa.Worst)
	if polls.RedisCommandsPerRequest > 0.3 {
		t.Errorf("%.3f Redis commands per queued poll, want ≤ 0.3", polls.RedisCommandsPerRequest)
	}
	// Goal 0. One answer in a run may still lag (1 of 7,955 and 1 of 7,844,
	// one admission batch each, in two of ten runs at 6024129–4ba9e1b; 0 in
	// the eight others): most likely (not proven) Redis wrote the sampler's ZRANK reply
	// before the admission's message to the instance and was descheduled in
	// between, so no check on the instance could see it. Before the instance waited for what was sent
	// (36c21b3): 7 of 7,824 at load 9–10.
	if pa.OutOfBound > 2 {
		t.Errorf("%d of %d people-ahead counts beyond max(5, 2 %%) of the exact rank, want at most 2 (goal 0); the furthest off: %+v", pa.OutOfBound, pa.Samples, pa.Worst)
	}
}
