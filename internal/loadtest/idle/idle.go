// Package idle puts a Tier 2 fleet beside many configured events in which
// nobody waits, and measures what the fleet then asks of Redis: issue 17's
// "idle beside 20,000 events" figure. `vwr loadtest -idle-events` and
// bench's BenchmarkTier2Scale both set the events up with it.
package idle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/eventsettings"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/app"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

// EventID is the id of the i-th idle event.
func EventID(i int) string { return fmt.Sprintf("idle-%05d", i) }

// Populate configures n events (EventID, open, threshold 10) in settings,
// makes every instance see them, and gives each one holder through the
// instances in turn: a direct admission, so each event is listed and on
// the workers' schedule, while nobody waits anywhere. The holders' slots
// free at the instances' active idle limit (QUEUE_ACTIVE_IDLE_SECONDS):
// a measurement that must see no slot free sets it above its length.
func Populate(ctx context.Context, settings eventsettings.Store, apps []*app.App, n int) ([]string, error) {
	if len(apps) == 0 {
		return nil, errors.New("idle: no instance")
	}
	evs := make([]string, n)
	for i := range evs {
		evs[i] = EventID(i)
	}
	if err := parallel(n, func(w, i int) error {
		_, err := settings.PutQueueSettings(ctx, evs[i], eventsettings.Settings{Threshold: 10, Open: true})
		return err
	}); err != nil {
		return nil, fmt.Errorf("idle: configure: %w", err)
	}
	for _, a := range apps {
		if a.Settings == nil {
			continue
		}
		if err := a.Settings.Refresh(ctx); err != nil {
			return nil, fmt.Errorf("idle: refresh settings: %w", err)
		}
	}
	if err := parallel(n, func(w, i int) error {
		// A check answered "unavailable" (a 503: running workers may be
		// settling the new event's epoch) is sent again, as the page would.
		for try := 0; ; try++ {
			_, err := apps[w%len(apps)].Service.Check(ctx, evs[i], queue.Identity{UserID: "holder", Position: 1, Pass: true})
			if err == nil || !errors.Is(err, queue.ErrUnavailable) || try == 50 {
				return err
			}
			if err := clock.Sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
	}); err != nil {
		return nil, fmt.Errorf("idle: admit the holders: %w", err)
	}
	return evs, nil
}

// parallel runs f(worker, i) for i in [0, n) on 32 workers and returns the
// first error.
func parallel(n int, f func(w, i int) error) error {
	const workers = 32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := f(w, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Settle waits until every event of evs has had its first admission pass
// (its admissions ranked: no rank-pending key left), the workers' schedule
// (under the store's key prefix) has no visit due, and no instance of apps
// visited an event (scheduled its next visit: vwr_queue_script_duration_seconds
// {script="schedule"}) for 2 s. The first passes after Populate rank the
// direct admissions, log them to the ledger and schedule each event's next
// visit for when its slot may free; instances also visit the events woken
// on them in memory (a direct admission, a threshold their settings cache
// saw rise: every new event on every instance), which Redis does not show.
// It returns how long that took.
func Settle(ctx context.Context, rdb redis.UniversalClient, prefix string, evs []string, apps []*app.App, timeout time.Duration) (time.Duration, error) {
	visits := redisstore.VisitsKey(prefix)
	start := time.Now()
	for deadline := start.Add(timeout); ; {
		due, err := rdb.ZCount(ctx, visits, "-inf", strconv.FormatInt(time.Now().UnixMilli(), 10)).Result()
		if err != nil {
			return 0, fmt.Errorf("idle: read the schedule: %w", err)
		}
		unvisited, err := unranked(ctx, rdb, prefix, evs)
		if err != nil {
			return 0, err
		}
		v0, err := visited(apps)
		if err != nil {
			return 0, err
		}
		if err := clock.Sleep(ctx, 2*time.Second); err != nil {
			return 0, err
		}
		v1, err := visited(apps)
		if err != nil {
			return 0, err
		}
		if due == 0 && unvisited == 0 && v1 == v0 {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("idle: after %s, %d of %d events still await their first admission pass, %d visits are due and the instances made %d visits in the last 2 s",
				timeout, unvisited, len(evs), due, v1-v0)
		}
	}
}

// visited sums the instances' visits so far: their schedule writes, one
// per visit (services/queue's Worker.admitPass).
func visited(apps []*app.App) (uint64, error) {
	var n uint64
	for _, a := range apps {
		if a == nil || a.Metrics == nil {
			continue
		}
		mfs, err := a.Metrics.Registry().Gather()
		if err != nil {
			return 0, fmt.Errorf("idle: read the metrics: %w", err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "vwr_queue_script_duration_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "script" && l.GetValue() == "schedule" {
						n += m.GetHistogram().GetSampleCount()
					}
				}
			}
		}
	}
	return n, nil
}

// unranked counts the events of evs whose admissions no pass has ranked
// yet, in pipelines of 1,000 EXISTS.
func unranked(ctx context.Context, rdb redis.UniversalClient, prefix string, evs []string) (int64, error) {
	var n int64
	for from := 0; from < len(evs); from += 1000 {
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, ev := range evs[from:min(from+1000, len(evs))] {
				p.Exists(ctx, redisstore.RankPendingKey(prefix, ev))
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("idle: read the events' pending rankings: %w", err)
		}
		for _, c := range cmds {
			n += c.(*redis.IntCmd).Val()
		}
	}
	return n, nil
}

// Load is what Redis executed during a measurement.
type Load struct {
	Seconds float64
	// Commands counts every command executed (INFO commandstats calls,
	// summed over a Cluster's masters), those that scripts ran included,
	// the measurement's own INFO left out; ByCommand by name.
	Commands  int64
	ByCommand map[string]int64
}

// Measure reads INFO commandstats, waits d, reads it again and returns the
// difference.
func Measure(ctx context.Context, rdb redis.UniversalClient, d time.Duration) (Load, error) {
	s0, err := commandCalls(ctx, rdb)
	if err != nil {
		return Load{}, err
	}
	t0 := time.Now()
	if err := clock.Sleep(ctx, d); err != nil {
		return Load{}, err
	}
	s1, err := commandCalls(ctx, rdb)
	if err != nil {
		return Load{}, err
	}
	l := Load{Seconds: time.Since(t0).Seconds(), ByCommand: map[string]int64{}}
	for name, calls := range s1 {
		if dn := calls - s0[name]; dn > 0 && name != "info" {
			l.ByCommand[name] = dn
			l.Commands += dn
		}
	}
	return l, nil
}

// commandCalls is INFO commandstats' calls by command name, summed over
// every master of a Cluster.
func commandCalls(ctx context.Context, rdb redis.UniversalClient) (map[string]int64, error) {
	out := map[string]int64{}
	var mu sync.Mutex
	read := func(ctx context.Context, c *redis.Client) error {
		raw, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return fmt.Errorf("idle: INFO commandstats: %w", err)
		}
		calls := ParseCommandCalls(raw)
		if len(calls) == 0 {
			return errors.New("idle: INFO commandstats lists no command (a real redis-server is needed)")
		}
		mu.Lock()
		defer mu.Unlock()
		for k, v := range calls {
			out[k] += v
		}
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, read)
	case *redis.Client:
		err = read(ctx, c)
	default:
		err = fmt.Errorf("idle: cannot read INFO through a %T", rdb)
	}
	return out, err
}

// ParseCommandCalls reads the calls of each cmdstat_<name> line of INFO
// commandstats.
func ParseCommandCalls(info string) map[string]int64 {
	out := map[string]int64{}
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if k, v, _ := strings.Cut(kv, "="); k == "calls" {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					out[strings.TrimPrefix(name, "cmdstat_")] = n
				}
			}
		}
	}
	return out
}
