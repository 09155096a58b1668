// Package notify publishes Tier 2 admissions as "admitted" messages to an SQS
// FIFO queue. It is an auxiliary channel and must never slow down or fail a
// user request: Admitted only puts the admission into a bounded in-memory
// buffer (or drops and counts it when the buffer is full), and one background
// sender drains the buffer with SendMessageBatch. The message schema lives in
// internal/admitted, next to its consumer.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/services/queue"
)

// API is the part of the SQS client the publisher uses.
type API interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Notifier is a queue.Notifier with a lifecycle: Close flushes what is
// buffered, and Register exposes the vwr_sqs_* metrics on a registry that may
// only exist after the notifier was handed to the queue.
type Notifier interface {
	queue.Notifier
	Register(reg prometheus.Registerer) error
	Close(ctx context.Context) error
}

// Options are the publisher's collaborators. Every field may be left zero.
type Options struct {
	Registerer prometheus.Registerer // where the vwr_sqs_* metrics go; nil: nowhere
	Logger     *slog.Logger          // nil: discard
	Clock      clock.Clock           // nil: wall clock
	// Sleep waits between retries; tests replace it. nil: a timer that ctx cancels.
	Sleep func(ctx context.Context, d time.Duration) error
}

// dropLogEvery rate-limits the "dropped" log line: one per interval at most.
const dropLogEvery = 10 * time.Second

// maxBackoff caps the doubling retry delay.
const maxBackoff = 2 * time.Second

// Stats are the publisher's counters since it started.
type Stats struct {
	Enqueued        int64 // accepted into the buffer
	Sent            int64 // acknowledged by SQS
	Failed          int64 // given up on after MaxAttempts, or rejected by SQS as the sender's fault
	DroppedFull     int64 // dropped because the buffer was full
	DroppedClosed   int64 // arrived after Close
	DroppedShutdown int64 // still buffered when Close's context ended
	Invalid         int64 // admissions that do not make a valid message
	Retries         int64 // SendMessageBatch calls repeated after a failure
}

// Publisher is the SQS Notifier.
type Publisher struct {
	cfg    Config
	api    API
	log    *slog.Logger
	clock  clock.Clock
	sleep  func(context.Context, time.Duration) error
	buf    chan queue.Admission
	mu     sync.RWMutex // guards closed against the close of buf
	closed bool

	ctx       context.Context // ends when Close gives up waiting
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once

	lastDropLog atomic.Int64 // unix nanos of the last "dropped" line
	stats       struct {
		enqueued, sent, failed, droppedFull, droppedClosed, droppedShutdown, invalid, retries atomic.Int64
	}
}

var _ Notifier = (*Publisher)(nil)

// New starts a Publisher sending through api. cfg must be enabled and valid.
func New(cfg Config, api API, opts Options) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if !cfg.Enabled {
		return nil, errors.New("notify: New needs SQS_ENABLED=true; use Open for the optional publisher")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Publisher{
		cfg:   cfg,
		api:   api,
		log:   opts.Logger,
		clock: opts.Clock,
		sleep: opts.Sleep,
		buf:   make(chan queue.Admission, cfg.BufferSize),
		done:  make(chan struct{}),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.clock == nil {
		p.clock = clock.System{}
	}
	if p.sleep == nil {
		p.sleep = clock.Sleep
	}
	if opts.Registerer != nil {
		if err := p.Register(opts.Registerer); err != nil {
			return nil, err
		}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.run()
	return p, nil
}

// Admitted buffers a for sending. It never blocks: when the buffer is full the
// admission is dropped and counted, because the queue itself must not wait
// for an auxiliary channel.
func (p *Publisher) Admitted(a queue.Admission) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.stats.droppedClosed.Add(1)
		p.logDrop("closed")
		return
	}
	select {
	case p.buf <- a:
		p.stats.enqueued.Add(1)
	default:
		p.stats.droppedFull.Add(1)
		p.logDrop("buffer_full")
	}
}

// Buffered is the number of admissions waiting to be sent.
func (p *Publisher) Buffered() int { return len(p.buf) }

// Capacity is the buffer's size.
func (p *Publisher) Capacity() int { return cap(p.buf) }

// Stats returns a snapshot of the counters.
func (p *Publisher) Stats() Stats {
	s := &p.stats
	return Stats{
		Enqueued: s.enqueued.Load(), Sent: s.sent.Load(), Failed: s.failed.Load(),
		DroppedFull: s.droppedFull.Load(), DroppedClosed: s.droppedClosed.Load(),
		DroppedShutdown: s.droppedShutdown.Load(), Invalid: s.invalid.Load(), Retries: s.retries.Load(),
	}
}

// Close stops accepting admissions and sends what is buffered. If ctx ends
// first, sending stops, the rest is counted as dropped, and ctx's error is
// returned. Close is safe to call more than once.
func (p *Publisher) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.buf)
		p.mu.Unlock()
	})
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.cancel()
		<-p.done
		return fmt.Errorf("notify: flush on close: %w", ctx.Err())
	}
}

// run is the single sender. One sender keeps each event's messages in the
// order they were admitted, which is what a FIFO group promises downstream.
// Batches form greedily: whatever piled up while the previous call was in
// flight goes out next, up to MaxBatch, so no timer delays a lone message.
func (p *Publisher) run() {
	defer close(p.done)
	defer p.cancel()
	batch := make([]queue.Admission, 0, MaxBatch)
	for {
		a, ok := <-p.buf
		if !ok {
			return
		}
		batch = append(batch[:0], a)
	fill:
		for len(batch) < MaxBatch {
			select {
			case a, ok := <-p.buf:
				if !ok {
					break fill
				}
				batch = append(batch, a)
			default:
				break fill
			}
		}
		p.send(batch)
	}
}

// send delivers one batch, retrying the entries that failed for reasons other
// than the sender's fault, with doubling backoff. A retried entry may land
// after later entries of its group that succeeded the first time; the
// consumer only counts, so that reordering is accepted rather than holding
// every later admission back.
func (p *Publisher) send(batch []queue.Admission) {
	if p.ctx.Err() != nil {
		p.stats.droppedShutdown.Add(int64(len(batch)))
		return
	}
	entries := make([]types.SendMessageBatchRequestEntry, 0, len(batch))
	for i, a := range batch {
		e, err := p.entry(i, a)
		if err != nil {
			p.stats.invalid.Add(1)
			p.log.Error("notify: admission not publishable", "event", a.EventID, "err", err.Error())
			continue
		}
		entries = append(entries, e)
	}
	backoff := p.cfg.RetryBackoff.D()
	for attempt := 1; len(entries) > 0; attempt++ {
		retry, err := p.call(entries)
		if err == nil && len(retry) == 0 {
			return
		}
		if attempt >= int(p.cfg.MaxAttempts) || p.ctx.Err() != nil {
			p.stats.failed.Add(int64(len(retry)))
			p.log.Warn("notify: SendMessageBatch gave up", "entries", len(retry), "attempts", attempt, "err", errString(err))
			return
		}
		if err := p.sleep(p.ctx, backoff); err != nil {
			p.stats.droppedShutdown.Add(int64(len(retry)))
			return
		}
		backoff = min(backoff*2, maxBackoff)
		p.stats.retries.Add(1)
		entries = retry
	}
}

// call makes one SendMessageBatch and returns the entries worth retrying.
func (p *Publisher) call(entries []types.SendMessageBatchRequestEntry) ([]types.SendMessageBatchRequestEntry, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.SendTimeout.D())
	defer cancel()
	out, err := p.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
		QueueUrl: aws.String(p.cfg.QueueURL),
		Entries:  entries,
	})
	if err != nil {
		return entries, err
	}
	p.stats.sent.Add(int64(len(out.Successful)))
	if len(out.Failed) == 0 {
		return nil, nil
	}
	byID := make(map[string]types.SendMessageBatchRequestEntry, len(entries))
	for _, e := range entries {
		byID[aws.ToString(e.Id)] = e
	}
	var retry []types.SendMessageBatchRequestEntry
	for _, f := range out.Failed {
		if f.SenderFault {
			p.stats.failed.Add(1)
			p.log.Error("notify: SQS rejected a message", "code", aws.ToString(f.Code))
			continue
		}
		if e, ok := byID[aws.ToString(f.Id)]; ok {
			retry = append(retry, e)
		}
	}
	return retry, nil
}

// entry turns an admission into a batch entry: group = event, so each event's
// admissions stay in order; dedup id = admitted.DedupID, so a repeated send
// of the same admission within SQS's five-minute window is delivered once.
func (p *Publisher) entry(i int, a queue.Admission) (types.SendMessageBatchRequestEntry, error) {
	at := a.AdmittedAt
	if at.IsZero() {
		at = p.clock.Now()
	}
	m := admitted.Message{
		Action:       admitted.Action,
		EventID:      a.EventID,
		UserID:       a.UserID,
		EntryTokenID: a.EntryJTI,
		ExpiresAt:    a.ExpiresAt.UTC(),
		Timestamp:    at.UTC().Truncate(time.Millisecond),
	}
	body, err := m.Encode()
	if err != nil {
		return types.SendMessageBatchRequestEntry{}, err
	}
	return types.SendMessageBatchRequestEntry{
		Id:                     aws.String(strconv.Itoa(i)),
		MessageBody:            aws.String(string(body)),
		MessageGroupId:         aws.String(m.EventID),
		MessageDeduplicationId: aws.String(m.DedupID()),
	}, nil
}

// logDrop writes at most one line per dropLogEvery, carrying the totals.
func (p *Publisher) logDrop(reason string) {
	now := p.clock.Now().UnixNano()
	last := p.lastDropLog.Load()
	if last != 0 && now-last < int64(dropLogEvery) {
		return
	}
	if !p.lastDropLog.CompareAndSwap(last, now) {
		return
	}
	p.log.Warn("notify: admission notifications dropped",
		"reason", reason,
		"droppedFull", p.stats.droppedFull.Load(),
		"droppedClosed", p.stats.droppedClosed.Load(),
		"capacity", cap(p.buf))
}

// Register exposes the counters as vwr_sqs_* metrics on reg.
func (p *Publisher) Register(reg prometheus.Registerer) error {
	counter := func(result string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "vwr_sqs_notifications_total",
			Help:        "Admission notifications by outcome: enqueued, sent, failed, dropped_full, dropped_closed, dropped_shutdown, invalid.",
			ConstLabels: prometheus.Labels{"result": result},
		}, func() float64 { return float64(v.Load()) })
	}
	s := &p.stats
	cs := []prometheus.Collector{
		counter("enqueued", &s.enqueued),
		counter("sent", &s.sent),
		counter("failed", &s.failed),
		counter("dropped_full", &s.droppedFull),
		counter("dropped_closed", &s.droppedClosed),
		counter("dropped_shutdown", &s.droppedShutdown),
		counter("invalid", &s.invalid),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "vwr_sqs_send_retries_total",
			Help: "SendMessageBatch calls repeated after a failure.",
		}, func() float64 { return float64(s.retries.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vwr_sqs_buffer_length",
			Help: "Admissions waiting in the in-memory buffer.",
		}, func() float64 { return float64(len(p.buf)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vwr_sqs_buffer_capacity",
			Help: "Size of the in-memory buffer (SQS_BUFFER_SIZE).",
		}, func() float64 { return float64(cap(p.buf)) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("notify: register metrics: %w", err)
		}
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
