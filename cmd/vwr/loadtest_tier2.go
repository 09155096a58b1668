package main

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/services/queue/app"
)

// tier2Instance is one Tier 2 process of a rehearsal: an app.App, its jobs
// (the worker, the settings refresh, the clock sync) and the handler its
// server sends requests to. A restart replaces the App with a fresh one,
// so nothing of its memory survives, as when the process restarts;
// meanwhile the instance answers 503, as a load balancer with no healthy
// target would.
type tier2Instance struct {
	// open builds a fresh App with its own Redis client (which close of
	// the instance closes).
	open func() (*app.App, redis.UniversalClient, error)

	mu       sync.Mutex
	app      *app.App
	rdb      redis.UniversalClient // nil when the App's client is not ours to close
	handler  http.Handler
	stopJobs context.CancelFunc
	jobs     sync.WaitGroup
}

var errInstanceDown = jsonhttp.Unavailable("unavailable", "the instance is restarting")

// ServeHTTP serves the current App, or 503 while there is none.
func (in *tier2Instance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.mu.Lock()
	h := in.handler
	in.mu.Unlock()
	if h == nil {
		jsonhttp.WriteError(w, errInstanceDown)
		return
	}
	h.ServeHTTP(w, r)
}

// run serves a (ready) App and starts its jobs under ctx.
func (in *tier2Instance) run(ctx context.Context, a *app.App, rdb redis.UniversalClient) {
	mux := http.NewServeMux()
	a.API.Register(mux)
	mux.Handle("/", a.API.NotFound())
	jctx, cancel := context.WithCancel(ctx)
	in.mu.Lock()
	in.app, in.rdb, in.handler, in.stopJobs = a, rdb, mux, cancel
	in.mu.Unlock()
	for _, job := range a.Jobs() {
		in.jobs.Add(1)
		go func() { defer in.jobs.Done(); job(jctx) }()
	}
}

// stop takes the App out of service and ends its jobs; requests already
// under way finish.
func (in *tier2Instance) stop() {
	in.mu.Lock()
	a, rdb, cancel := in.app, in.rdb, in.stopJobs
	in.app, in.rdb, in.handler, in.stopJobs = nil, nil, nil, nil
	in.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	in.jobs.Wait()
	if rdb != nil {
		_ = a.Close()
		_ = rdb.Close()
	}
}

// restart stops the instance and starts a fresh App once it is ready.
func (in *tier2Instance) restart(ctx context.Context) error {
	in.stop()
	a, rdb, err := in.open()
	if err != nil {
		return err
	}
	if err := a.WaitReady(ctx); err != nil {
		_ = a.Close()
		_ = rdb.Close()
		return err
	}
	in.run(ctx, a, rdb)
	return nil
}

// restartDown is how long a restart keeps an instance out of service.
const restartDown = 500 * time.Millisecond

// restartAll restarts every instance at once: all are down (for
// restartDown) before any comes back.
func restartAll(ctx context.Context, ins ...*tier2Instance) error {
	var wg sync.WaitGroup
	for _, in := range ins {
		wg.Add(1)
		go func() { defer wg.Done(); in.stop() }()
	}
	wg.Wait()
	if err := clock.Sleep(ctx, restartDown); err != nil {
		return err
	}
	errs := make([]error, len(ins))
	for i, in := range ins {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = in.restart(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}
