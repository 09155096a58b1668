package httpapi_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/httpapi"
)

// admissionLog is a Notifier shared by every Service in a test: it records
// admissions in the order they were reported.
type admissionLog struct {
	mu  sync.Mutex
	all []queue.Admission
}

func (l *admissionLog) Admitted(a queue.Admission) {
	l.mu.Lock()
	l.all = append(l.all, a)
	l.mu.Unlock()
}

func (l *admissionLog) snapshot() []queue.Admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

func (l *admissionLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// runWorker runs w until the test ends.
func runWorker(t *testing.T, w *queue.Worker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// parallelDo runs fn over items with n goroutines.
func parallelDo[T any](n int, items []T, fn func(T)) {
	ch := make(chan T)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				fn(it)
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
}

// TestConcurrentAdmission: two API servers and two workers share one Redis.
// 50 holders fill the threshold, then 5,000 users with distinct Tier 1
// positions arrive in random order, concurrently, through either server.
// The shared manual clock then expires one generation of actives at a time;
// each generation must be exactly the next 50 positions, in order, while a
// sampler checks that the active set never exceeds the threshold.
func TestConcurrentAdmission(t *testing.T) {
	t.Parallel()
	const (
		threshold = 50
		users     = 5000
		holders   = threshold
	)
	clk := clock.NewManual(time.Now().UTC().Truncate(time.Millisecond))
	log := &admissionLog{}
	prefix := testenv.UniqueID(t) + ":"
	o := options{threshold: threshold, notifier: log, clock: clk, prefix: prefix, adminToken: adminToken}
	a, b := setup(t, o), setup(t, o)
	servers := []*httptest.Server{a.srv, b.srv}
	ev := testenv.UniqueID(t)
	for _, s := range []*testBundle{a, b} {
		runWorker(t, queue.NewWorker(s.svc, queue.WorkerConfig{AdmissionInterval: 3 * time.Millisecond, StaleCleanupInterval: time.Hour}, nil))
	}

	// Sample the active set continuously, straight from Redis and through
	// the admin API, until the test ends.
	activeKey := prefix + "{" + ev + "}:active"
	var maxActive, maxReported, samples atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		ctx := context.Background()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, err := a.rdb.ZCard(ctx, activeKey).Result(); err == nil && n > maxActive.Load() {
				maxActive.Store(n)
			}
			if n, ok := reportedActive(b.srv.URL, ev); ok && n > maxReported.Load() {
				maxReported.Store(n)
			}
			samples.Add(1)
		}
	}()
	stopSampler := sync.OnceFunc(func() { close(stop); <-sampled })
	t.Cleanup(stopSampler)

	check := func(uid string, pos int64) reply {
		srv := servers[rand.IntN(len(servers))]
		return doAt(t, srv.URL, "POST", "/api/queue/check/"+ev, bearer(a.pass(t, ev, uid, pos)), nil)
	}
	uid := func(pos int64) string { return "u" + itoa(pos) }

	for pos := int64(1); pos <= holders; pos++ {
		if r := check(uid(pos), pos); r.str("status") != "active" {
			t.Fatalf("holder %d = %v", pos, r)
		}
	}
	positions := make([]int64, users)
	for i := range positions {
		positions[i] = holders + 1 + int64(i)
	}
	rand.Shuffle(len(positions), func(i, j int) { positions[i], positions[j] = positions[j], positions[i] })
	var joinErrs atomic.Int64
	parallelDo(32, positions, func(pos int64) {
		if r := check(uid(pos), pos); r.status != 200 || r.str("status") != "queued" {
			joinErrs.Add(1)
			t.Errorf("join %d = %v", pos, r)
		}
	})
	if joinErrs.Load() > 0 {
		t.FailNow()
	}
	if n := log.len(); n != holders {
		t.Fatalf("%d admissions before any slot expired, want the %d holders", n, holders)
	}

	for gen := 1; gen <= users/threshold; gen++ {
		clk.Advance(activeTTL + time.Millisecond)
		want := holders + gen*threshold
		waitFor(t, 20*time.Second, "generation "+itoa(int64(gen)), func() bool { return log.len() >= want })
		adm := log.snapshot()[want-threshold : want]
		// Each admitted user's next check returns the entry token, through
		// either server, without extending the slot.
		parallelDo(16, adm, func(ad queue.Admission) {
			pos := posOf(t, ad.UserID)
			r := check(ad.UserID, pos)
			if r.status != 200 || r.str("status") != "active" || r.cookie == nil ||
				r.cookie.MaxAge != int(queue.DefaultEntryTokenTTL/time.Second) {
				t.Errorf("admitted %s: check = %v", ad.UserID, r)
				return
			}
			if e, err := a.entry.VerifyEntry(r.str("entryToken"), ev, clk.Now()); err != nil || e.UserID != ad.UserID {
				t.Errorf("admitted %s: entry token: %v", ad.UserID, err)
			}
		})
		if t.Failed() {
			t.FailNow()
		}
	}
	stopSampler()

	all := log.snapshot()
	if len(all) != holders+users {
		t.Fatalf("%d admissions, want %d", len(all), holders+users)
	}
	seen := map[string]bool{}
	for i, ad := range all {
		if seen[ad.UserID] {
			t.Fatalf("%s admitted twice", ad.UserID)
		}
		seen[ad.UserID] = true
		if i >= holders {
			if got, want := posOf(t, ad.UserID), int64(i+1); got != want {
				t.Fatalf("admission #%d was position %d, want %d (order must follow Tier 1 positions)", i+1, got, want)
			}
		}
	}
	if maxActive.Load() > threshold || maxReported.Load() > threshold {
		t.Fatalf("active exceeded the threshold: %d in Redis, %d reported (threshold %d)", maxActive.Load(), maxReported.Load(), threshold)
	}
	if maxActive.Load() != threshold || samples.Load() < 100 {
		t.Fatalf("sampler saw max %d over %d samples; it did not watch the run", maxActive.Load(), samples.Load())
	}
	t.Logf("%d admissions in position order; %d samples, active peaked at %d", len(all), samples.Load(), maxActive.Load())
}

// reportedActive reads currentUsers from the admin stats endpoint. It runs
// off the test goroutine, so it reports failure instead of calling t.Fatal.
func reportedActive(base, ev string) (int64, bool) {
	req, _ := http.NewRequest("GET", base+"/api/queue/admin/stats/"+ev, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var body struct {
		CurrentUsers int64 `json:"currentUsers"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return 0, false
	}
	return body.CurrentUsers, true
}

// admitPasses is how many admission passes (each begins with one read of
// the visit schedule) m has seen end ("due" store calls).
func admitPasses(t *testing.T, m *httpapi.Metrics) uint64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() != "vwr_queue_script_duration_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "script" && l.GetValue() == "due" {
					n += s.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func posOf(t *testing.T, uid string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimPrefix(uid, "u"), 10, 64)
	if err != nil {
		t.Fatalf("user id %q: %v", uid, err)
	}
	return n
}

// TestSelfHealAfterFlush wipes Redis mid-run. Every user's next check must
// put them back at the place their Tier 1 position gives them, and the
// worker must find the event again.
//
// It runs on a dedicated logical database (DB 9 of the package's
// redis-server) and wipes it with FLUSHDB: the store lives in one database,
// so that is exactly what FLUSHALL does to it, while the other tests, which
// run in parallel on DB 0, keep their data. No other test uses DB 9.
func TestSelfHealAfterFlush(t *testing.T) {
	t.Parallel()
	const (
		threshold = 10
		users     = 200
	)
	clk := clock.NewManual(time.Now().UTC().Truncate(time.Millisecond))
	log := &admissionLog{}
	b := setup(t, options{threshold: threshold, notifier: log, clock: clk, redisDB: 9})
	runWorker(t, queue.NewWorker(b.svc, queue.WorkerConfig{AdmissionInterval: 3 * time.Millisecond, StaleCleanupInterval: time.Hour}, nil))
	ev := testenv.UniqueID(t)
	uid := func(pos int64) string { return "u" + itoa(pos) }
	check := func(pos int64) reply {
		return b.do(t, "POST", "/api/queue/check/"+ev, bearer(b.pass(t, ev, uid(pos), pos)), nil)
	}
	// Arrive: the first `threshold` positions in order (they get the
	// slots), everyone else concurrently in random order.
	arrive := func(phase string) {
		t.Helper()
		for pos := int64(1); pos <= threshold; pos++ {
			if r := check(pos); r.str("status") != "active" {
				t.Fatalf("%s: %d = %v", phase, pos, r)
			}
		}
		rest := make([]int64, 0, users-threshold)
		for pos := int64(threshold + 1); pos <= users; pos++ {
			rest = append(rest, pos)
		}
		rand.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		parallelDo(16, rest, func(pos int64) {
			if r := check(pos); r.str("status") != "queued" {
				t.Errorf("%s: %d = %v, want queued", phase, pos, r)
			}
		})
		if t.Failed() {
			t.FailNow()
		}
		for pos := int64(threshold + 1); pos <= users; pos++ {
			r := b.do(t, "GET", "/api/queue/status/"+ev, bearer(b.pass(t, ev, uid(pos), pos)), nil)
			if r.num("position") != pos-threshold || r.num("queueSize") != users-threshold {
				t.Fatalf("%s: status of %d = %v, want position %d", phase, pos, r, pos-threshold)
			}
		}
	}
	arrive("before flush")
	if err := b.rdb.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// The running worker may take its lock and its pass's lease again at
	// once, and a pass that listed the event before the flush finds it
	// empty (and so finds the loss first: the new epoch) and retires it,
	// leaving the tombstone; nothing else may exist.
	for _, k := range b.keysUnder(t) {
		if !strings.Contains(k, "admission:lock:") && !strings.Contains(k, "queue:lease:") && !strings.Contains(k, "queue:{schedule}:") && !strings.HasSuffix(k, ":retired") && !strings.HasSuffix(k, ":epoch") {
			t.Fatalf("FLUSHDB left %s", k)
		}
	}
	// No message says Redis lost the line: the instance's memory may answer
	// queued polls from before the loss for one snapshot interval, until its
	// next read finds no epoch (docs/tier2-store.md, "Queued polls from
	// memory"). The clock moves past that.
	clk.Advance(queue.SnapshotInterval + time.Millisecond)
	// The instance saw the event's epoch vanish: a recovery window starts,
	// nobody is admitted, and everyone who comes back, in any order, is
	// queued at their Tier 1 position.
	all := make([]int64, 0, users)
	for pos := int64(1); pos <= users; pos++ {
		all = append(all, pos)
	}
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	parallelDo(16, all, func(pos int64) {
		if r := check(pos); r.str("status") != "queued" || !r.flag("recovering") {
			t.Errorf("after flush: %d = %v, want queued and recovering", pos, r)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	for pos := int64(1); pos <= users; pos++ {
		r := b.do(t, "GET", "/api/queue/status/"+ev, bearer(b.pass(t, ev, uid(pos), pos)), nil)
		if r.num("position") != pos {
			t.Fatalf("after flush: status of %d = %v, want position %d", pos, r, pos)
		}
	}

	// Once the window is over the worker admits exactly positions 1 … threshold.
	before := log.len()
	clk.Advance(queue.Config{}.WithDefaults().RecoveryWindow + time.Millisecond)
	waitFor(t, 10*time.Second, "admissions after the flush", func() bool { return log.len() >= before+threshold })
	// A further pass must not admit more: wait until the worker has
	// finished two more passes over the event, so one began after those
	// admissions were seen.
	passes := admitPasses(t, b.metrics)
	waitFor(t, 10*time.Second, "two more admission passes", func() bool { return admitPasses(t, b.metrics) >= passes+2 })
	got := log.snapshot()[before:]
	if len(got) != threshold {
		t.Fatalf("%d admitted after the recovery window, want %d", len(got), threshold)
	}
	for i, ad := range got {
		if want := uid(int64(1 + i)); ad.UserID != want {
			t.Fatalf("admission %d after the flush = %s, want %s", i, ad.UserID, want)
		}
	}
	r := b.do(t, "GET", "/api/queue/status/"+ev, bearer(b.pass(t, ev, uid(users), users)), nil)
	if r.num("position") != users-threshold {
		t.Fatalf("last user after the window = %v, want position %d", r, users-threshold)
	}
}
