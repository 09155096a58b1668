package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/loadtest"
	"github.com/vwr-go/vwr/internal/testenv"
)

// runLoadtestCLI runs `vwr loadtest` with args into a temporary folder and
// returns the folder and stdout.
func runLoadtestCLI(t *testing.T, env map[string]string, args ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args = append([]string{"loadtest", "-out", dir, "-quiet"}, args...)
	if code := dispatch(context.Background(), invocation{Args: args, Stdout: &out, Stderr: &errb, Env: env}); code != exitOK {
		t.Fatalf("vwr %s: exit %d\nstderr: %s\nstdout: %s", strings.Join(args, " "), code, errb.String(), out.String())
	}
	return dir, out.String()
}

func readReport(t *testing.T, dir string) (loadtest.Report, map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, loadtest.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var rep loadtest.Report
	var raw map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	return rep, raw
}

// TestLoadtestReportSchema: report.json has exactly the top-level
// keys, every documented field, and values that make sense together; the
// plots are SVG; the summary is printed. Junk events run alongside, so the
// faults list is exercised too, and every visitor tries to hold one of 100
// seats on the protected site. It runs alone: beside
// TestLoadtestIdleBesideManyEvents at a load average of 31 a few junk
// enters got 503s and Tier 2 checks transport errors, which it counts.
func TestLoadtestReportSchema(t *testing.T) {
	dir, stdout := runLoadtestCLI(t, map[string]string{},
		"-visitors", "300", "-rate", "150", "-threshold", "30", "-dwell", "500ms", "-shards", "2", "-seats", "100",
		"-event", testenv.UniqueID(t), "-fault", "junk-events@1s", "-junk-rate", "20", "-timeout", "3m")
	rep, raw := readReport(t, dir)

	want := []string{"visitors", "errors", "latencyMs", "throughputPerSecond", "inversions", "maxActive", "threshold",
		"overAdmissions", "admittedTwice", "waitEstimateError", "backendOpsPerVisitor", "redisBytesPerWaiter", "lostVisitors", "faults"}
	if len(raw) != len(want) {
		t.Errorf("top-level keys %v, want exactly %v", keys(raw), want)
	}
	for _, k := range want {
		if _, ok := raw[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	nested := map[string][]string{
		"inversions":           {"tier1", "tier2"},
		"waitEstimateError":    {"median", "p90", "peopleAheadError"},
		"backendOpsPerVisitor": {"dynamoReads", "dynamoWrites", "hottestItemWriteShare", "hottestPartitionWriteShare", "redisCommandsPerRequest", "redisByRequest", "redisBackgroundCommandsPerSecond"},
		"throughputPerSecond":  {"requests", "admissions"},
	}
	for k, fields := range nested {
		m, _ := raw[k].(map[string]any)
		for _, f := range fields {
			if _, ok := m[f]; !ok {
				t.Errorf("%s lacks %q", k, f)
			}
		}
	}

	vis, _ := raw["visitors"].(map[string]any)
	for _, f := range []string{"seatsHeld", "soldOut", "seatsHeldTwice", "reentered", "reentryRefused"} {
		if _, ok := vis[f]; !ok {
			t.Errorf("visitors lacks %q", f)
		}
	}
	v := rep.Visitors
	if v.Total != 300 || v.Admitted != 300 || v.Left != 300 || v.Unfinished != 0 || rep.LostVisitors != 0 {
		t.Errorf("visitors %+v, lost %d: want all 300 admitted and gone", v, rep.LostVisitors)
	}
	// Holds outlast the run (5 min), so the first 100 to choose get the
	// seats and everyone after finds the sale sold out.
	if v.SeatsHeld != 100 || v.SoldOut != 200 || v.SeatsHeldTwice != 0 {
		t.Errorf("seats: %d held, %d sold out, %d held twice; want 100, 200, 0", v.SeatsHeld, v.SoldOut, v.SeatsHeldTwice)
	}
	if rep.Threshold != 30 || rep.MaxActive < 1 || rep.MaxActive > rep.Threshold || rep.OverAdmissions != 0 {
		t.Errorf("maxActive %d, threshold %d, overAdmissions %d", rep.MaxActive, rep.Threshold, rep.OverAdmissions)
	}
	if rep.Inversions.Tier1 != 0 || rep.Inversions.Tier2 != 0 {
		t.Errorf("inversions %+v", rep.Inversions)
	}
	for _, ep := range []string{"tier1.assign", "tier1.status", "tier1.check", "tier2.check", "tier2.leave", "site.seats", "site.hold"} {
		l, ok := rep.LatencyMs[ep]
		if !ok || l.Count == 0 || l.P50 <= 0 || l.P50 > l.P95 || l.P95 > l.P99 {
			t.Errorf("latency %s = %+v", ep, l)
		}
	}
	if n := rep.LatencyMs["tier1.assign"].Count; n != 300 {
		t.Errorf("%d Tier 1 enters, want one per visitor", n)
	}
	tp := rep.ThroughputPerSecond
	if tp.Requests <= 0 || tp.Admissions <= 0 || tp.PeakAdmissions < 1 || v.DurationSeconds <= 0 {
		t.Errorf("throughput %+v over %v s", tp, v.DurationSeconds)
	}
	w := rep.WaitEstimateError
	if w.Samples < 1 || w.Median < 0 || w.P90 < w.Median {
		t.Errorf("waitEstimateError %+v", w)
	}
	b := rep.BackendOpsPerVisitor
	// A join or a leave is one round trip carrying one script call, apart
	// from the check that lists an event, its first since a retire (two
	// more: SADD, relisted.lua), and a new connection's handshake; queued
	// polls may be answered from an instance's memory (fewer).
	if b.Tier1Store != "redis" || b.RedisRoundTripsPerRequest > 1.1 || b.RedisCommandsPerRequest > 1.1 {
		t.Errorf("backendOpsPerVisitor %+v", b)
	}
	for _, k := range []string{loadtest.KindJoin, loadtest.KindLeave} {
		if c := b.RedisByRequest[k]; c.RedisCommandsPerRequest < 1 || c.RedisCommandsPerRequest > 1.2 || c.RedisRoundTripsPerRequest > 1.2 {
			t.Errorf("%s: %+v, want about one round trip carrying one script call (issue 17: ≤ 1.2 commands)", k, c)
		}
	}
	// Every visitor joined once, left once, and seated visitors (dwell
	// 500 ms) renewed nothing; the split adds up to the whole.
	var split int64
	for _, c := range b.RedisByRequest {
		split += c.Requests
	}
	if j, l := b.RedisByRequest[loadtest.KindJoin], b.RedisByRequest[loadtest.KindLeave]; j.Requests != 300 || l.Requests != 300 ||
		j.RedisCommandsPerRequest < 1 || split != rep.LatencyMs["tier2.check"].Count+rep.LatencyMs["tier2.leave"].Count {
		t.Errorf("redisByRequest %+v: want 300 joins and 300 leaves, adding up to every Tier 2 request", b.RedisByRequest)
	}
	// The measurement itself: answers read in the store's step are exact,
	// so none of them may fall out of the bound (the estimates' bound is
	// TestLoadtestTier2Bounds').
	if pa := w.PeopleAheadError; pa == nil || pa.Samples < 1 || pa.OutOfBoundExact != 0 {
		t.Errorf("peopleAheadError %+v: want samples, no exact answer out of bound", pa)
	}
	if rep.RedisBytesPerWaiter != nil {
		t.Errorf("redisBytesPerWaiter %v on embedded Redis, which has no MEMORY USAGE", *rep.RedisBytesPerWaiter)
	}
	if len(rep.Faults) != 1 || rep.Faults[0].Kind != loadtest.FaultJunkEvents || !rep.Faults[0].Injected {
		t.Errorf("faults %+v", rep.Faults)
	}
	if len(rep.Errors["junk.assign"]) != 0 || rep.LatencyMs["junk.check"].Count == 0 {
		t.Errorf("junk traffic: errors %v, latency %+v", rep.Errors, rep.LatencyMs["junk.check"])
	}
	for _, name := range loadtest.Plots {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("%s: %v, not an SVG", name, err)
		}
	}
	if !strings.Contains(stdout, "300 visitors (burst at 150/s)") || !strings.Contains(stdout, "inversions") {
		t.Errorf("summary:\n%s", stdout)
	}
}

func TestLoadtestRefusesBadSeats(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), invocation{Args: []string{"loadtest", "-seats", "5000", "-out", t.TempDir()}, Stdout: &out, Stderr: &errb})
	if code != exitUsage || !strings.Contains(errb.String(), "-seats must be 0..1040") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestSeatVenue(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{1: 1, 24: 24, 100: 100, 1040: 1040, 41: 42, 1039: 1040} {
		if v := seatVenue(n); v.Total() != want || v.Rows > 26 || v.PerRow > 40 {
			t.Errorf("seatVenue(%d) = %d×%d, want %d seats", n, v.Rows, v.PerRow, want)
		}
	}
}

// TestLoadtestPow: with -pow every visitor solves its challenge as the page
// does and still gets in; the report gains powSolveMs and powCost, the 428s
// are the expected first step rather than errors, and nothing is lost.
func TestLoadtestPow(t *testing.T) {
	t.Parallel()
	dir, stdout := runLoadtestCLI(t, map[string]string{},
		"-visitors", "120", "-rate", "120", "-threshold", "40", "-dwell", "300ms", "-shards", "2",
		"-pow", "5000", "-pow-tickets", "1000", "-event", testenv.UniqueID(t), "-timeout", "3m")
	rep, raw := readReport(t, dir)
	v := rep.Visitors
	if v.Admitted != 120 || v.GaveUp != 0 || rep.LostVisitors != 0 {
		t.Fatalf("visitors %+v, lost %d: every paying visitor should get through", v, rep.LostVisitors)
	}
	if v.PowSolveMs == nil || v.PowSolveMs.Samples != 120 || v.PowSolveMs.Median <= 0 || v.PowSolveMs.P90 < v.PowSolveMs.Median {
		t.Fatalf("powSolveMs %+v: want one solve per visitor", v.PowSolveMs)
	}
	c := v.PowCost
	if c == nil || c.ExpectedHashes != 5000 || c.Tickets != 1000 || c.HashesPerSecond <= 0 || c.CPUSeconds <= 0 {
		t.Fatalf("powCost %+v", c)
	}
	// K tickets cost K solves at the mean: between K × the fastest and K × the p90-ish.
	if c.CPUSeconds > float64(c.Tickets)*v.PowSolveMs.P90*3/1000 {
		t.Errorf("powCost %.2f s for %d tickets does not follow the solve times %+v", c.CPUSeconds, c.Tickets, v.PowSolveMs)
	}
	for ep, codes := range rep.Errors {
		if strings.HasPrefix(ep, "tier1.assign") {
			t.Errorf("assign errors %s: %v (a 428 is the challenge, not an error; nothing else should fail)", ep, codes)
		}
	}
	if lat, ok := rep.LatencyMs["tier1.assign.unpaid"]; !ok || lat.Count != 120 {
		t.Errorf("unpaid assigns %+v: want one per visitor", lat)
	}
	if visitors, _ := raw["visitors"].(map[string]any); visitors["powSolveMs"] == nil || visitors["powCost"] == nil {
		t.Errorf("report.json visitors lack powSolveMs/powCost: %v", visitors)
	}
	if !strings.Contains(stdout, "proof of work (5000 expected hashes): solved in") {
		t.Errorf("summary lacks the proof of work:\n%s", stdout)
	}
}

// TestLoadtestWaitEstimates is the rehearsal's bound on both tiers' wait
// estimates, first and later: 1,000 visitors arrive in 4 s, Tier 1 lets in
// 60 a second and Tier 2 drains 50, so visitors wait at both tiers, and
// every median error stays at or below 50 % (`make bench` shows the 25 %
// goal). A Tier 1 estimate that summed a young history as a minute's rate
// was off by a median of 4,140 % here; holes counted as people ahead fail
// the people-ahead share.
//
// Both tiers run on redis-servers of their own, as `make bench` does. On
// the embedded Redis (miniredis) every script holds one lock while it runs
// interpreted Lua and sorts the sorted set; on a loaded machine that lock
// convoys Tier 2's checks to seconds (p50 1.1 s where redis-server gave
// 34 ms, one core shared with seven busy loops), admissions stall, the
// pace falls during each wait and estimates made from the pace before come
// out short: a Tier 2 median error of 50–67 % measured so, 29 % on
// redis-servers. It mostly waits (about 9 CPU seconds in 36 s), so it runs
// beside the other parallel tests, none of them a fault rehearsal: beside
// TestLoadtestIdleBesideManyEvents setting up its 20,000 events (the
// package's heaviest CPU) the Tier 2 first median was 14–35 % at a load
// average of 13–16 on the 2 shared cores and 35 % at 31 (Tier 1 27 %);
// alone, 7–11 % at 5–7.
func TestLoadtestWaitEstimates(t *testing.T) {
	t.Parallel()
	tier2, tier1 := testenv.NewOwnRedis(t), testenv.NewOwnRedis(t)
	dir, stdout := runLoadtestCLI(t, map[string]string{"REDIS_URL": "redis://" + tier2.Addr, "VWR_TIER1_REDIS_URL": "redis://" + tier1.Addr},
		"-visitors", "1000", "-rate", "250", "-threshold", "100", "-dwell", "2s", "-batch", "60", "-shards", "4",
		"-event", testenv.UniqueID(t), "-timeout", "4m")
	rep, raw := readReport(t, dir)
	t.Logf("summary:\n%s", stdout)
	if rep.Visitors.Admitted != 1000 || rep.LostVisitors != 0 {
		t.Fatalf("visitors %+v, lost %d", rep.Visitors, rep.LostVisitors)
	}
	w := rep.WaitEstimateError
	if w.Tier1 == nil || w.Later == nil || w.Tier1.Later == nil || w.Tier1.PeopleAhead == nil {
		t.Fatalf("waitEstimateError lacks first/later at both tiers: %s", raw["waitEstimateError"])
	}
	for _, c := range []struct {
		name string
		e    loadtest.WaitError
		min  int64
	}{{"Tier 1 first", *w.Tier1, 500}, {"Tier 1 later", *w.Tier1.Later, 100}, {"Tier 2 first", w, 500}, {"Tier 2 later", *w.Later, 500}} {
		if c.e.Samples < c.min || c.e.Median > 0.5 || c.e.P90 < c.e.Median {
			t.Errorf("%s estimate error %+v: want a median ≤ 50 %% over ≥ %d estimates", c.name, c.e, c.min)
		}
	}
	if pa := w.Tier1.PeopleAhead; pa.Samples < 500 || pa.WithinBound < 0.9 {
		t.Errorf("people ahead %+v: want ≥ 90 %% within 2 %% of the line or 16 people", *pa)
	}
	if !strings.Contains(stdout, "Tier 1 wait estimate error: first median") || !strings.Contains(stdout, "Tier 2 wait estimate error: first median") {
		t.Errorf("the summary does not print both tiers' first and later errors:\n%s", stdout)
	}
}
