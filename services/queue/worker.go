package queue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/eventsettings"
	"github.com/vwr-go/vwr/internal/token"
)

// WorkerConfig sets how often the worker admits and cleans up. Zero fields
// take the defaults in WithDefaults.
type WorkerConfig struct {
	AdmissionInterval    time.Duration // QUEUE_ADMISSION_INTERVAL_MS, 1000ms
	StaleCleanupInterval time.Duration // QUEUE_STALE_CLEANUP_INTERVAL_MS, 30000ms
	// Parallelism bounds how many events one pass works on at once
	// (QUEUE_WORKER_PARALLELISM, 16).
	Parallelism int
}

// Defaults of WorkerConfig (seed §4.5).
const (
	DefaultAdmissionInterval    = time.Second
	DefaultStaleCleanupInterval = 30 * time.Second
	DefaultWorkerParallelism    = 16
)

// LossWatchInterval is how often a worker reads the epoch of each event for
// which its instance holds unclaimed admissions: another instance may find
// a loss first, and this one must put its admissions back before their
// owners poll (see unclaimed), not only at its own next step.
const LossWatchInterval = 200 * time.Millisecond

// RebuildGrace is how long the line has, at least, to form again after the
// ledger's replay before admissions resume: while the replay was pending,
// everyone the store had lost was asked to come back in a moment (503,
// which pages retry after about 2 s).
const RebuildGrace = 5 * time.Second

// LockTTL bounds how long one worker may hold an event's admission lock; a
// worker that dies mid-pass blocks the event for at most this long.
const LockTTL = 4 * time.Second

// WithDefaults fills zero fields with the defaults.
func (c WorkerConfig) WithDefaults() WorkerConfig {
	if c.AdmissionInterval == 0 {
		c.AdmissionInterval = DefaultAdmissionInterval
	}
	if c.StaleCleanupInterval == 0 {
		c.StaleCleanupInterval = DefaultStaleCleanupInterval
	}
	if c.Parallelism == 0 {
		c.Parallelism = DefaultWorkerParallelism
	}
	return c
}

// Worker admits people from every active event's line and drops queued users
// whose heartbeat went stale. Any number of workers may run against one
// store: a per-event lock, taken for admission passes and stale cleanup
// alike, keeps them from working the same event at once, and every step is
// atomic, so the threshold holds regardless.
type Worker struct {
	svc *Service
	cfg WorkerConfig
	log *slog.Logger
	// id names this worker in the cluster-wide leases of its periodic
	// passes (Store.Lease).
	id string
	// soon are events whose loss this instance just found, or whose
	// recovery window just ended: Run passes over them at once, so neither
	// the ledger's replay nor the first admission after the window waits
	// for the next admission interval.
	soon chan string
	// windowEnds are the recovery windows a timer is armed for.
	windowEnds sync.Map // event id + window end → true
	// relogMu guards relogged, the settings-store losses whose ledgers this
	// worker has queued again (relog).
	relogMu  sync.Mutex
	relogged int
	// thMu guards thresholds, the configured events' thresholds as the
	// last pass saw them: a raised one wakes its event (wakeRaised).
	thMu       sync.Mutex
	thresholds map[string]int64
	// enlistMu guards enlisted, when this worker last put the listed
	// events missing from the visit schedule on it (enlist).
	enlistMu sync.Mutex
	enlisted time.Time
}

// MaxVisitGap is the longest the admission pass leaves a listed event in
// which nobody holds a slot unvisited when nothing wakes it sooner (an
// event with a line but no threshold, say); where someone holds one, the
// first slot to free by time is the next visit. Leaves, lines forming and
// raised thresholds wake an event sooner.
const MaxVisitGap = 5 * time.Minute

// NewWorker returns a worker over svc's store and configuration. A nil logger
// discards.
func NewWorker(svc *Service, cfg WorkerConfig, log *slog.Logger) *Worker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Worker{svc: svc, cfg: cfg.WithDefaults(), log: log, soon: make(chan string, 64), id: token.NewTokenID()}
	svc.onLoss = w.passNow
	svc.batchBeats()
	svc.lines.on.Store(true)
	return w
}

// flushBeats writes the queued users' heartbeats its instance heard since
// the last tick: one call per event, in one pipeline (Store.Beat). A batch
// that fails is kept for the next tick. Every worker flushes at each
// admission tick, so a heartbeat reaches the store at most one admission
// interval after the poll, and a sweep (which flushes first) never drops
// anyone this instance heard from in time.
func (w *Worker) flushBeats(ctx context.Context) error {
	s := w.svc
	b := s.takeBeats()
	if len(b) == 0 {
		return nil
	}
	start := time.Now()
	err := s.store.Beat(ctx, b)
	s.observe("beat", start, err)
	if err != nil {
		s.putBackBeats(b)
		return unavailable("beat", "", err)
	}
	return nil
}

// tidyLines drops, every pruneEvery until ctx is done, the remembered
// places older than MemoryMaxAge and the lines nobody is remembered in. It
// reads nothing: polls read the lines they need (Service.fromMemory), so
// an instance whose remembered visitors do not poll costs Redis nothing.
func (w *Worker) tidyLines(ctx context.Context) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.svc.lines.tidy(w.svc.clk.Now())
		}
	}
}

// passNow asks Run to pass over eventID now; it never blocks (a full
// queue only delays the pass to the next interval).
func (w *Worker) passNow(eventID string) {
	select {
	case w.soon <- eventID:
	default:
	}
}

// leaseSpan is how long a periodic pass's lease lasts, in intervals: its
// holder renews it every interval, and another instance's worker takes the
// duty over within this long of the holder stopping.
const leaseSpan = 1.5

// leads reports whether this worker holds duty's cluster-wide lease (taking
// or renewing it), so that one worker of the whole fleet makes each
// periodic pass, not one per instance. When the store cannot say, it leads:
// a pass made twice costs work, never a promise.
func (w *Worker) leads(ctx context.Context, duty string, every time.Duration) bool {
	start := time.Now()
	ok, err := w.svc.store.Lease(ctx, duty, w.id, time.Duration(float64(every)*leaseSpan))
	w.svc.observe("lease", start, err)
	return ok || err != nil
}

// Run admits every AdmissionInterval, cleans up every StaleCleanupInterval
// and watches for losses every LossWatchInterval until ctx is done. The
// admission pass and the stale cleanup over every listed event are made by
// one worker of the fleet at a time (leads); the others keep their own
// books (unclaimed admissions, the ledger's relog), pass over the events a
// loss or a recovery window sends them (soon), and watch for losses.
func (w *Worker) Run(ctx context.Context) {
	admit := time.NewTicker(w.cfg.AdmissionInterval)
	defer admit.Stop()
	cleanup := time.NewTicker(w.cfg.StaleCleanupInterval)
	defer cleanup.Stop()
	watch := time.NewTicker(LossWatchInterval)
	defer watch.Stop()
	var lines sync.WaitGroup
	lines.Add(2)
	go func() { defer lines.Done(); w.tidyLines(ctx) }()
	go func() {
		defer lines.Done()
		w.svc.WatchLines(ctx, func(err error) {
			w.log.Warn("line changes subscription failed; polls go to the store until it holds", "err", err)
		})
	}()
	defer lines.Wait()
	defer func() {
		// Write what this instance heard before it stops.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = w.flushBeats(fctx)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-w.soon:
			if _, err := w.admitEvent(ctx, ev); err != nil && ctx.Err() == nil {
				w.log.Error("admission pass after a loss or a recovery window failed", "event", ev, "err", err)
			}
		case <-watch.C:
			if n, err := w.WatchLossesOnce(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("loss watch failed", "restored", n, "err", err)
			}
		case <-admit.C:
			if !w.leads(ctx, "admit", w.cfg.AdmissionInterval) {
				if n, err := w.visitWoken(ctx); err != nil && ctx.Err() == nil {
					w.log.Error("admission pass over woken events failed", "admitted", n, "err", err)
				}
				continue
			}
			if n, err := w.AdmitOnce(ctx); err != nil && ctx.Err() == nil {
				w.log.Error("admission pass failed", "admitted", n, "err", err)
			}
		case <-cleanup.C:
			if !w.leads(ctx, "cleanup", w.cfg.StaleCleanupInterval) {
				continue
			}
			if n, err := w.CleanupOnce(ctx); err != nil && ctx.Err() == nil {
				w.log.Error("stale cleanup failed", "removed", n, "err", err)
			} else if n > 0 {
				w.log.Info("stale cleanup", "removed", n)
			}
		}
	}
}

// WatchLossesOnce reads the epoch of every event for which this instance
// holds unclaimed admissions, all in one pipelined read (Store.Epochs),
// and on a loss puts them back (Service.sawEpoch); it returns how many it
// put back.
func (w *Worker) WatchLossesOnce(ctx context.Context) (int, error) {
	s := w.svc
	events := s.unclaimed.eventIDs()
	if len(events) == 0 {
		return 0, nil
	}
	start := time.Now()
	ids, err := s.store.Epochs(ctx, events)
	s.observe("epoch", start, err)
	if err != nil {
		return 0, unavailable("epochs", "", err)
	}
	n := 0
	for i, ev := range events {
		n += len(s.sawEpoch(ctx, ev, EpochState{ID: ids[i]}))
	}
	return n, nil
}

// visitWoken is the tick of a worker that does not lead the periodic
// pass: its own books, then the events woken on this instance (a leave, a
// direct admission, a raised threshold).
func (w *Worker) visitWoken(ctx context.Context) (int, error) {
	w.svc.unclaimed.sweep(w.svc.clk.Now())
	beatErr := w.flushBeats(ctx)
	relogErr := w.relog(ctx)
	wakeErr := w.wakeRaised(ctx)
	n, err := w.each(ctx, w.svc.takeWoken(), w.visit)
	return n, errors.Join(beatErr, relogErr, wakeErr, err)
}

// AdmitOnce makes one admission pass and returns how many users it let in.
// It visits only the events that may have work: those the visit schedule
// says are due (Store.DueVisits: one read, whatever the number of listed events)
// and those woken on this instance, at most Parallelism at a time. A
// visit schedules the event's next one (admitPass), so an event with a
// full active set or an empty line costs nothing until a slot may free,
// someone leaves or joins its empty line, or its threshold is raised. A
// failing event does not stop the others; their errors are joined.
func (w *Worker) AdmitOnce(ctx context.Context) (int, error) {
	s := w.svc
	s.unclaimed.sweep(s.clk.Now())
	beatErr := w.flushBeats(ctx)
	relogErr := w.relog(ctx)
	wakeErr := w.wakeRaised(ctx)
	enlistErr := w.enlist(ctx, false)
	start := time.Now()
	due, err := s.store.DueVisits(ctx, s.clk.Now())
	s.observe("due", start, err)
	if err != nil {
		return 0, errors.Join(beatErr, relogErr, wakeErr, enlistErr, unavailable("due", "", err))
	}
	work := s.takeWoken()
	seen := make(map[string]bool, len(work)+len(due))
	for _, ev := range work {
		seen[ev] = true
	}
	for _, ev := range due {
		// Nothing valid ever schedules an invalid id; skip rather than build keys from it.
		if !seen[ev] && ValidID(ev) {
			seen[ev] = true
			work = append(work, ev)
		}
	}
	n, err := w.each(ctx, work, w.visit)
	return n, errors.Join(beatErr, relogErr, wakeErr, enlistErr, err)
}

// enlist puts every listed event missing from the visit schedule on it,
// due at once, at the first pass of this worker and then once per stale
// cleanup interval (or now, with force), and forgets the epochs of events
// no longer listed (Service.pruneEpochs). It costs one read of the listed
// events and one write per 2,000 of them: the safety net for an event
// listed but not scheduled (a write that failed, a store written before
// the schedule existed), never the way work is found.
func (w *Worker) enlist(ctx context.Context, force bool) error {
	w.enlistMu.Lock()
	defer w.enlistMu.Unlock()
	if !force && !w.enlisted.IsZero() && time.Since(w.enlisted) < w.cfg.StaleCleanupInterval {
		return nil
	}
	s := w.svc
	start := time.Now()
	events, err := s.store.Listed(ctx)
	s.observe("active_events", start, err)
	if err != nil {
		return unavailable("active events", "", err)
	}
	valid := events[:0]
	for _, ev := range events {
		if ValidID(ev) {
			valid = append(valid, ev)
		}
	}
	start = time.Now()
	n, err := s.store.Enlist(ctx, valid)
	s.observe("enlist", start, err)
	if err != nil {
		return unavailable("enlist", "", err)
	}
	if n > 0 && !w.enlisted.IsZero() {
		w.log.Warn("listed events were missing from the visit schedule; scheduled them", "events", n)
	}
	w.enlisted = time.Now()
	s.pruneEpochs(valid)
	return nil
}

// wakeRaised makes every configured event whose threshold rose since the
// last pass due at once (one write for all of them): a raised threshold
// frees slots without any request to the event.
func (w *Worker) wakeRaised(ctx context.Context) error {
	s := w.svc
	if s.settings == nil || !s.settings.Loaded() {
		return nil
	}
	w.thMu.Lock()
	defer w.thMu.Unlock()
	now := make(map[string]int64, len(w.thresholds))
	var raised []string
	s.settings.Range(func(ev string, es eventsettings.Settings) {
		var th int64
		if es.Open {
			th = es.Threshold
		}
		if old, ok := w.thresholds[ev]; ok && th > old {
			raised = append(raised, ev)
		}
		now[ev] = th
	})
	if len(raised) > 0 {
		start := time.Now()
		err := s.store.Wake(ctx, raised)
		s.observe("wake", start, err)
		if err != nil {
			return unavailable("wake", "", err) // keep the old thresholds: the next pass tries again
		}
	}
	w.thresholds = now
	return nil
}

// relog queues every configured event's served record for the durable
// ledger again once the settings store, which keeps the ledgers, is found
// to have lost data (Settings.Losses): the served record in the queue's
// store still knows who was let in and who left, and without it in the
// ledger a later loss of the queue's store would forget them (a leaver's
// token counted back, a served pass admitted again). The next admission
// pass appends what it queued. Until every event is queued it tries again
// at each pass.
func (w *Worker) relog(ctx context.Context) error {
	s := w.svc
	if s.settings == nil || s.ledger == nil {
		return nil
	}
	w.relogMu.Lock()
	defer w.relogMu.Unlock()
	losses := s.settings.Losses()
	if losses == w.relogged {
		return nil
	}
	var errs []error
	queued := 0
	for _, ev := range s.settings.Events() {
		start := time.Now()
		n, err := s.store.Relog(ctx, ev)
		s.observe("relog", start, err)
		if err != nil {
			errs = append(errs, unavailable("relog", ev, err))
			continue
		}
		queued += n
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	w.relogged = losses
	w.log.Warn("the settings store lost data; queued every event's served record for its ledger again", "entries", queued)
	return nil
}

// each runs fn on every event, at most Parallelism at once, and sums what
// it returns.
func (w *Worker) each(ctx context.Context, events []string, fn func(context.Context, string) (int, error)) (int, error) {
	var (
		mu    sync.Mutex
		total int
		errs  []error
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, w.cfg.Parallelism)
	for _, ev := range events {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			n, err := fn(ctx, ev)
			mu.Lock()
			total += n
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// locked runs fn while holding eventID's admission lock and returns what fn
// returns. When another worker holds the lock it skips the event: (0,
// false, nil).
func (w *Worker) locked(ctx context.Context, eventID string, fn func() (int, error)) (int, bool, error) {
	s := w.svc
	owner := token.NewTokenID()
	start := time.Now()
	ok, err := s.store.ClaimAdmission(ctx, eventID, owner, LockTTL)
	s.observe("lock", start, err)
	if err != nil {
		return 0, false, unavailable("lock", eventID, err)
	}
	if !ok {
		return 0, false, nil // another worker is on it
	}
	defer func() {
		// Release even when ctx was cancelled mid-pass, so the event is not
		// blocked until the lock expires.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		start := time.Now()
		_, err := s.store.ReleaseAdmission(uctx, eventID, owner)
		s.observe("unlock", start, err)
		if err != nil {
			w.log.Warn("admission unlock failed", "event", eventID, "err", err)
		}
	}()
	n, err := fn()
	return n, true, err
}

func (w *Worker) admitEvent(ctx context.Context, eventID string) (int, error) {
	n, _, err := w.tryAdmit(ctx, eventID)
	return n, err
}

// tryAdmit is admitEvent; ran is false when another worker held the
// event's lock.
func (w *Worker) tryAdmit(ctx context.Context, eventID string) (n int, ran bool, err error) {
	if !ValidID(eventID) {
		return 0, true, nil
	}
	return w.locked(ctx, eventID, func() (int, error) { return w.admitLocked(ctx, eventID) })
}

// visit is one admission pass over eventID. When another worker holds the
// event's lock, its pass may have read the event before what woke it
// here: the event stays woken for this worker's next tick.
func (w *Worker) visit(ctx context.Context, eventID string) (int, error) {
	n, ran, err := w.tryAdmit(ctx, eventID)
	if !ran && err == nil {
		w.svc.wake(eventID)
	}
	return n, err
}

// admitLocked is one admission pass over eventID, under its lock. When the
// pass finds the event awaiting the replay of its ledger (a loss), it
// replays it and passes once more, so that admissions resume at once if
// the recovery window is over.
func (w *Worker) admitLocked(ctx context.Context, eventID string) (int, error) {
	n, replayed, err := w.admitPass(ctx, eventID)
	if err == nil && replayed {
		var m int
		m, _, err = w.admitPass(ctx, eventID)
		n += m
	}
	return n, err
}

// admitPass is one admit.lua over eventID and what follows it; replayed
// says it replayed the ledger.
func (w *Worker) admitPass(ctx context.Context, eventID string) (int, bool, error) {
	s := w.svc
	th, fixed, err := s.threshold(eventID)
	if err != nil {
		// No longer configured: admit nobody (threshold 0), but still drop
		// expired actives and retire the event once it is empty.
		th, fixed = 0, true
	}
	now := s.clk.Now()
	start := time.Now()
	res, err := s.store.Admit(ctx, AdmitInput{
		EventID:          eventID,
		Now:              now,
		ActiveTTL:        s.cfg.ActiveTTL,
		DefaultThreshold: th,
		FixedThreshold:   fixed,
		Batch:            s.cfg.AdmissionBatchSize,
		Epoch:            s.epochInput(eventID),
		ClaimGrace:       max(s.cfg.ActiveIdle, ClaimHorizon),
		Ledger:           s.ledger != nil,
	})
	s.observe("admit", start, err)
	s.sawEpoch(ctx, eventID, res.Epoch)
	s.unclaimed.add(eventID, res.Admitted, res.Header, now, res.ExpiresAt)
	w.passAtWindowEnd(eventID, now, res.Epoch.RecoveringUntil)
	// The store may fail after its atomic step let people in (the ranking
	// counts live outside the event's slot); those users are active, so
	// they are reported before the error.
	for _, uid := range res.Admitted {
		s.notify.Admitted(newAdmission(eventID, uid, now, res.ExpiresAt))
	}
	n := len(res.Admitted)
	if n > 0 {
		s.lines.changedHere(eventID, res.Admitted, true) // those let in never hear "queued" from here
		if s.lines.push.Load() {
			// The pass's own push will say so too, through the
			// subscription; this instance need not wait for it.
			s.lines.stale(eventID)
		}
	}
	if n > 0 {
		s.obs.Admitted(eventID, n)
	}
	if err != nil {
		return n, false, unavailable("admit", eventID, err)
	}
	if err := w.durable(ctx, eventID, res); err != nil {
		return n, false, err
	}
	s.obs.QueueDepth(eventID, res.QueueSize, res.ActiveCount)
	if res.QueueSize == 0 && res.ActiveCount == 0 && !res.Replay {
		start = time.Now()
		retired, err := s.store.Retire(ctx, eventID)
		s.observe("retire", start, err)
		if err != nil {
			return n, false, unavailable("retire", eventID, err)
		}
		if retired {
			return n, false, nil // off the schedules
		}
	}
	// Still under the lock, so that schedules written by passes over one
	// event land in the order the passes ran.
	var sweep time.Time
	if res.QueueSize > 0 {
		sweep = now // the next cleanup tick sweeps a new line, then once per interval (NX: a scheduled sweep stays)
	}
	start = time.Now()
	err = s.store.Schedule(ctx, eventID, w.nextVisit(now, th, res), sweep)
	s.observe("schedule", start, err)
	if err != nil {
		return n, false, unavailable("schedule", eventID, err)
	}
	return n, res.Replay && s.ledger != nil, nil
}

// nextVisit is when the admission pass must visit an event again after a
// pass that found res, with threshold th, at now, unless something wakes
// it sooner: at once while people wait for free slots (a pass admits a
// batch at most), when the recovery window ends, when the first slot
// frees by time (at most a slot's length away), and MaxVisitGap later
// when nobody holds a slot.
func (w *Worker) nextVisit(now time.Time, th int64, res AdmitResult) time.Time {
	next := now.Add(MaxVisitGap)
	if !res.NextFree.IsZero() {
		next = res.NextFree
	}
	switch {
	case res.Replay, !res.Epoch.RecoveringUntil.After(now) && res.QueueSize > 0 && res.ActiveCount < th:
		return now
	case res.Epoch.RecoveringUntil.After(now) && res.Epoch.RecoveringUntil.Before(next):
		return res.Epoch.RecoveringUntil
	}
	return next
}

// passAtWindowEnd has Run pass over eventID the moment its recovery window
// ends, rather than up to an admission interval later: the pause after a
// loss is the window, not the window plus a tick. Each window arms one
// timer per worker.
func (w *Worker) passAtWindowEnd(eventID string, now, until time.Time) {
	d := until.Sub(now)
	if d <= 0 || d > w.svc.cfg.RecoveryWindow {
		return
	}
	key := eventID + "\x00" + until.String()
	if _, armed := w.windowEnds.LoadOrStore(key, true); armed {
		return
	}
	time.AfterFunc(d+10*time.Millisecond, func() {
		w.windowEnds.Delete(key)
		w.passNow(eventID)
	})
}

// durable keeps the event's durable records in step with the queue's store
// after an admission pass: it replays the ledger into a store that lost
// the event's state, appends the served changes the pass reported, and
// stores a new epoch in the event's settings, so that even an instance
// started after both Redis and every other instance were lost finds out.
func (w *Worker) durable(ctx context.Context, eventID string, res AdmitResult) error {
	s := w.svc
	if s.ledger == nil {
		return nil
	}
	if res.Replay {
		if err := w.replay(ctx, eventID, res.Epoch.ID); err != nil {
			return err
		}
	}
	if len(res.Unlogged) > 0 {
		start := time.Now()
		err := s.ledger.AppendQueueLedger(ctx, eventID, res.Unlogged, s.clk.Now())
		s.observe("ledger_append", start, err)
		if err != nil {
			return unavailable("ledger append", eventID, err)
		}
		start = time.Now()
		err = s.store.Logged(ctx, eventID, res.Unlogged)
		s.observe("logged", start, err)
		if err != nil {
			return unavailable("logged", eventID, err)
		}
	}
	if s.settings != nil && res.Epoch.ID != "" {
		if es, ok := s.settings.Lookup(eventID); ok && es.Epoch != res.Epoch.ID {
			start := time.Now()
			err := s.settings.PutEpoch(ctx, eventID, res.Epoch.ID)
			s.observe("put_epoch", start, err)
			if err != nil {
				return unavailable("put epoch", eventID, err)
			}
		}
	}
	return nil
}

// replay reads eventID's whole ledger and replays it into the queue's
// store; the last call ends the replay of epoch, and admissions resume once
// the recovery window is over. Until then nobody new is admitted, however
// long the durable store takes to answer.
func (w *Worker) replay(ctx context.Context, eventID, epoch string) error {
	s := w.svc
	var entries []Served
	for cursor := ""; ; {
		start := time.Now()
		page, next, err := s.ledger.QueueLedger(ctx, eventID, cursor)
		s.observe("ledger_read", start, err)
		if err != nil {
			return unavailable("ledger read", eventID, err)
		}
		entries = append(entries, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	start := time.Now()
	n, err := s.store.Replay(ctx, ReplayInput{EventID: eventID, Entries: entries, Now: s.clk.Now(), Finish: epoch, Ledger: true,
		RebuildGrace: min(RebuildGrace, s.cfg.RecoveryWindow)})
	s.observe("replay", start, err)
	if err != nil {
		return unavailable("replay", eventID, err)
	}
	w.log.Warn("the queue lost the event's state; replayed its ledger", "event", eventID, "entries", len(entries), "restored", n)
	return nil
}

// sweepMarkShare is the share of StaleCleanupInterval a sweep's due marker
// lives: a little less than the interval, so the instance whose tick comes
// first after it expires sweeps, and a line is swept at least once per
// interval and about once, whatever the number of instances.
const sweepMarkShare = 0.9

// CleanupOnce removes, from every event with a line, queued users whose last
// heartbeat is older than SeenTTL (+ beatEvery, see lines.go), and returns how many it removed. It
// sweeps only the events whose sweep the sweep schedule says is due
// (Store.DueSweeps; an admission pass that finds a line schedules its
// first), each then again one interval later. An event is swept only when
// its due marker (Store.ClaimSweep) says no worker of any instance swept it
// within the interval, so each line is swept about once per interval
// cluster-wide. The sweep takes no admission lock: each page is one atomic
// step that admissions may interleave with.
func (w *Worker) CleanupOnce(ctx context.Context) (int, error) {
	s := w.svc
	if err := w.flushBeats(ctx); err != nil {
		return 0, err // sweeping now could drop someone only the batch says is alive
	}
	now := s.clk.Now()
	start := time.Now()
	work, err := s.store.DueSweeps(ctx, now)
	s.observe("due_sweeps", start, err)
	if err != nil {
		return 0, unavailable("due sweeps", "", err)
	}
	valid := work[:0]
	for _, ev := range work {
		if ValidID(ev) {
			valid = append(valid, ev)
		}
	}
	mark := time.Duration(float64(w.cfg.StaleCleanupInterval) * sweepMarkShare)
	return w.each(ctx, valid, func(ctx context.Context, ev string) (int, error) {
		start := time.Now()
		due, err := s.store.ClaimSweep(ctx, ev, token.NewTokenID(), mark)
		s.observe("sweep_due", start, err)
		if err != nil {
			return 0, unavailable("sweep due", ev, err)
		}
		if !due {
			return 0, nil // another worker swept it within the interval
		}
		start = time.Now()
		err = s.store.ScheduleSweep(ctx, ev, now.Add(w.cfg.StaleCleanupInterval))
		s.observe("schedule_sweep", start, err)
		if err != nil {
			return 0, unavailable("schedule sweep", ev, err)
		}
		start = time.Now()
		// Answers from memory write a visitor's heartbeat every
		// beatEvery, not at every poll: silent for SeenTTL means a
		// heartbeat older than SeenTTL + beatEvery.
		n, err := s.store.Sweep(ctx, ev, now, s.cfg.SeenTTL+beatEvery(s.cfg.SeenTTL))
		s.observe("cleanup", start, err)
		if err != nil {
			return n, unavailable("cleanup", ev, err)
		}
		return n, nil
	})
}
