package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestLoadtestIdleBesideManyEvents is issue 17's idle bound: a short sale
// on 4 Tier 2 instances beside 20,000 more configured events, each holding
// one admitted visitor, then Redis commands/s while nobody waits (INFO
// commandstats over 10 s, every command a script runs counted too) at most
// 1,000. Tier 2, Tier 1 and the settings store each have a redis-server of
// their own, so the count is Tier 2's alone. Measured at 35 commands/s on
// the 2-core development machine at a load average of 11.
//
// It runs beside the other parallel tests (go test's -parallel, GOMAXPROCS:
// one other at a time on 2 cores), none of them a fault rehearsal: nothing
// it asserts is a deadline short enough for that load to break (the sale
// has 3 minutes, the idle count only falls when the workers are slowed).
func TestLoadtestIdleBesideManyEvents(t *testing.T) {
	t.Parallel()
	tier2, tier1, settings := testenv.NewOwnRedis(t), testenv.NewOwnRedis(t), testenv.NewOwnRedis(t)
	dir, stdout := runLoadtestCLI(t, map[string]string{"REDIS_URL": "redis://" + tier2.Addr,
		"VWR_TIER1_REDIS_URL": "redis://" + tier1.Addr, "VWR_SETTINGS_REDIS_URL": "redis://" + settings.Addr},
		"-visitors", "100", "-rate", "100", "-threshold", "20", "-dwell", "1s",
		"-tier2-instances", "4", "-idle-events", "20000", "-idle-duration", "10s",
		"-event", testenv.UniqueID(t), "-timeout", "3m")
	t.Logf("summary:\n%s", stdout)
	rep, raw := readReport(t, dir)
	b := rep.BackendOpsPerVisitor
	if b.IdleCommandsPerSecond == nil || b.Idle == nil {
		t.Fatalf("no idle figure: %v", raw["backendOpsPerVisitor"])
	}
	if i := b.Idle; i.Events != 20000 || i.Instances != 4 || i.Seconds < 10 || i.Commands < 1 {
		t.Errorf("idle %+v: want 20,000 events, 4 instances, ≥ 10 s measured and the workers' own commands counted", *i)
	}
	if r := *b.IdleCommandsPerSecond; r > 1000 {
		t.Errorf("idle: %.1f Redis commands/s beside 20,000 events with 4 instances, want ≤ 1,000; by command: %v", r, b.Idle.ByCommand)
	}
	if rep.LostVisitors != 0 || rep.OverAdmissions != 0 || rep.Inversions.Tier2 != 0 || rep.Visitors.Admitted != 100 {
		t.Errorf("the sale beside them: lost %d, over-admissions %d, inversions %+v, admitted %d of 100",
			rep.LostVisitors, rep.OverAdmissions, rep.Inversions, rep.Visitors.Admitted)
	}
	if !strings.Contains(stdout, "4 Tier 2 instances") || !strings.Contains(stdout, "idle: ") {
		t.Errorf("summary:\n%s", stdout)
	}
}

// TestLoadtestRefusesBadIdleFlags: the idle phase needs a redis-server, and
// the stack's shape flags mean nothing against -base.
func TestLoadtestRefusesBadIdleFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-tier2-instances", "0"}, "-tier2-instances must be 1..16"},
		{[]string{"-idle-events", "-1"}, "-idle-events at least 0"},
		{[]string{"-base", "http://127.0.0.1:1", "-idle-events", "10"}, "with -base the target is what it is"},
		{[]string{"-idle-events", "10"}, "set REDIS_URL to a redis-server"},
		{[]string{"-tier2-instances", "1", "-fault", "tier2-kill@1s"}, "tier2-kill needs -tier2-instances 2 or more"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"loadtest", "-quiet", "-out", t.TempDir()}, c.args...)
		code := dispatch(context.Background(), invocation{Args: args, Stdout: &out, Stderr: &errb, Env: map[string]string{}})
		if code == exitOK || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want a refusal naming %q", c.args, code, errb.String(), c.want)
		}
	}
}
