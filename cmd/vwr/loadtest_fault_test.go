package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vwr-go/vwr/internal/loadtest"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestLoadtestSurvivesRedisFlush: 1,000 visitors on a real redis-server of
// the test's own, with one FLUSHALL of Tier 2's Redis mid-sale. Nobody is
// passed over, nobody holds a token above the threshold, nobody loses a
// place, the only failures are 503s (and cut connections) between the flush
// (none before it), and the median wait estimate is off by less than half.
//
// It ran 2,000 visitors with the flush at 8 s (58 s of sale); half of them
// with the flush at 4 s is the same sale at half scale: at the flush about
// a fifth are through, a line of hundreds waits with estimates made before
// it and a hundred hold slots, and about half arrive after it, so the
// estimates that cannot foresee the pause are about as large a share.
func TestLoadtestSurvivesRedisFlush(t *testing.T) {
	own := testenv.NewOwnRedis(t)
	dir, stdout := runLoadtestCLI(t, map[string]string{
		"REDIS_URL": "redis://" + own.Addr,
		// Short entry tokens let the recovery window after the flush be
		// short too (it must outlast the tokens already out).
		"QUEUE_ENTRY_TOKEN_TTL_SECONDS": "5", "QUEUE_RECOVERY_WINDOW_SECONDS": "10",
	},
		"-visitors", "1000", "-rate", "200", "-threshold", "100", "-dwell", "1s", "-batch", "150",
		"-event", testenv.UniqueID(t), "-fault", "redis-flush@4s", "-timeout", "4m")
	t.Logf("summary:\n%s", stdout)
	rep, _ := faultReport(t, dir, 1000, loadtest.FaultRedisFlush, false)
	// Estimates given before the flush cannot foresee the pause it causes;
	// those given during the recovery window include it. Measured here:
	// 6–8 % (median) in three runs at a load average of 6–10 on the 2-core
	// machine. With 2,000 visitors and the flush at 8 s: 18–21 % with two
	// runs sharing the 2 cores, 21 % alone at a load average of 11, and once
	// 55 % at 17 (a starved server admits more slowly than its own recent
	// rate says).
	if w := rep.WaitEstimateError; w.Samples < 100 || w.Median >= 0.5 {
		t.Errorf("wait estimate error %+v: want a median below 50 %% over ≥ 100 waiting visitors", w)
	}
	if rep.RedisBytesPerWaiter == nil || *rep.RedisBytesPerWaiter <= 0 {
		t.Errorf("redisBytesPerWaiter %v: a real redis-server answers MEMORY USAGE", rep.RedisBytesPerWaiter)
	}
}

// faultReport is what every fault run must show (issue 20): nobody over the
// threshold, nobody passed over, nobody admitted twice, nobody lost, every
// visitor through, the only failures 503s (and cut connections) from the
// fault on, and every re-entry refused.
func faultReport(t *testing.T, dir string, visitors int64, kind string, reentry bool) (loadtest.Report, loadtest.FaultReport) {
	t.Helper()
	rep, _ := readReport(t, dir)
	if len(rep.Faults) != 1 || rep.Faults[0].Kind != kind || !rep.Faults[0].Injected {
		t.Fatalf("faults %+v", rep.Faults)
	}
	f := rep.Faults[0]
	var failures int64
	for ep, codes := range rep.Errors {
		for code, n := range codes {
			failures += n
			if code != "503" && code != "transport" {
				t.Errorf("%d × %s on %s: only 503s are expected, during the fault", n, code, ep)
			}
		}
	}
	if failures != f.ErrorCount {
		t.Errorf("%d failures, %d of them after the fault: none may come before it", failures, f.ErrorCount)
	}
	if rep.Inversions.Tier1 != 0 || rep.Inversions.Tier2 != 0 {
		passed, _ := os.ReadFile(filepath.Join(dir, loadtest.PassedOverFile))
		t.Errorf("inversions %+v; passed over (seconds since the first arrival):\n%s", rep.Inversions, passed)
	}
	if rep.OverAdmissions != 0 || rep.MaxActive > rep.Threshold {
		t.Errorf("%d over-admissions, %d active at most of %d", rep.OverAdmissions, rep.MaxActive, rep.Threshold)
	}
	if rep.AdmittedTwice != 0 {
		t.Errorf("%d visitors admitted twice", rep.AdmittedTwice)
	}
	if rep.LostVisitors != 0 || rep.Visitors.Admitted != visitors || rep.Visitors.Left != visitors || rep.Visitors.Unfinished != 0 {
		t.Errorf("lost %d, visitors %+v", rep.LostVisitors, rep.Visitors)
	}
	if v := rep.Visitors; reentry && (v.Reentered == 0 || v.ReentryRefused != v.Reentered) {
		t.Errorf("re-entry: %d tried the same pass again, %d told done; want all of them (and some)", v.Reentered, v.ReentryRefused)
	}
	if f.RecoverySeconds == nil {
		t.Errorf("admissions never resumed after the fault: %+v", f)
	}
	return rep, f
}

// TestLoadtestFlushAndRestartDefaults: 1,000 visitors with every Tier 2
// default (20 s tokens, 25 s recovery window). Tier 2's Redis is flushed
// and both instances restart at the same moment, so no process remembers
// the event; a fifth of the admitted visitors leave and try their pass
// again. The loss is found from the epoch kept with the event's settings,
// admissions resume within 30 s, and the wait estimates, which add the
// rest of the 25 s window during it, stay within the bound (median error
// below 50 %; measured 6–7 % at a load average of 6–8).
func TestLoadtestFlushAndRestartDefaults(t *testing.T) {
	own := testenv.NewOwnRedis(t)
	dir, stdout := runLoadtestCLI(t, map[string]string{"REDIS_URL": "redis://" + own.Addr},
		"-visitors", "1000", "-rate", "100", "-threshold", "100", "-dwell", "1s", "-batch", "100", "-reenter", "0.2",
		"-event", testenv.UniqueID(t), "-fault", "redis-flush+restart@6s", "-timeout", "4m")
	t.Logf("summary:\n%s", stdout)
	rep, f := faultReport(t, dir, 1000, loadtest.FaultRedisFlushRestart, true)
	if f.RecoverySeconds != nil && *f.RecoverySeconds > 30 {
		t.Errorf("admissions resumed %.1f s after the fault, want ≤ 30 with the defaults", *f.RecoverySeconds)
	}
	if w := rep.WaitEstimateError; w.Samples < 100 || w.Median >= 0.5 {
		t.Errorf("wait estimate error %+v: want a median below 50 %% over ≥ 100 waiting visitors", w)
	}
}

// TestLoadtestSettingsFlush: 500 visitors; the settings store loses
// everything mid-sale. The instances write the event back, nobody hears a
// 404, and the sale goes on without a pause. The flush at 4 s finds 400
// arrived and a line waiting, and a hundred more arrive after it: 1,000
// visitors (45 s of sale on the embedded Redis) only made the sale after
// it longer.
func TestLoadtestSettingsFlush(t *testing.T) {
	dir, stdout := runLoadtestCLI(t, map[string]string{},
		"-visitors", "500", "-rate", "100", "-threshold", "100", "-dwell", "1s", "-batch", "100", "-reenter", "0.1",
		"-event", testenv.UniqueID(t), "-fault", "settings-flush@4s", "-timeout", "3m")
	t.Logf("summary:\n%s", stdout)
	rep, f := faultReport(t, dir, 500, loadtest.FaultSettingsFlush, true)
	if f.RecoverySeconds == nil || *f.RecoverySeconds > 5 {
		t.Errorf("settings flush: admitting again after %s; want at once", secondsOrNever(f.RecoverySeconds))
	}
	if f.ErrorCount != 0 {
		t.Errorf("settings flush: %d errors after the fault, want none (all errors: %v)", f.ErrorCount, rep.Errors)
	}
	if rep.Faults[0].Note == "" {
		t.Error("no note on the fault")
	}
}

func secondsOrNever(s *float64) string {
	if s == nil {
		return "never"
	}
	return fmt.Sprintf("%.1f s", *s)
}
