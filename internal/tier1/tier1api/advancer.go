package tier1api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vwr-go/vwr/internal/tier1"
)

// Advancer runs the serving-counter ticks of one scheduled invocation.
type Advancer struct {
	d     Deps
	ticks int
}

// AdvancerOptions set the ticks per invocation (ADVANCER_TICKS; tier1app
// applies its default, and fewer than one runs one). The gap between ticks is the Service's TickEvery (ADVANCER_TICK_SECONDS),
// the same interval tick slots are numbered by, and it waits with the
// Service's Sleep.
type AdvancerOptions struct {
	Ticks int
}

// NewAdvancer returns the advancer handler.
func NewAdvancer(d Deps, opts AdvancerOptions) *Advancer {
	opts.Ticks = max(opts.Ticks, 1)
	return &Advancer{d: d.withDefaults(), ticks: opts.Ticks}
}

// AdvancerReport is what one invocation did; Lambda logs it as the result.
type AdvancerReport struct {
	Ticks       int           `json:"ticks"`
	FailedTicks int           `json:"failedTicks"`
	Raises      []AdvanceDone `json:"raises"`
}

// AdvanceDone is one raise of one event's serving counter.
type AdvanceDone struct {
	EventID  string `json:"eventId"`
	From     int64  `json:"from"`
	To       int64  `json:"to"`
	Admitted int64  `json:"admitted"`
}

// Handle runs the ticks through Service.RunAdvancer, reporting each tick's
// raises to the metrics. A tick that fails does not stop the next one; the
// invocation fails (and EventBridge's async retry runs it again, which tick
// slots make safe) only when every tick failed.
func (h *Advancer) Handle(ctx context.Context, ev events.EventBridgeEvent) (AdvancerReport, error) {
	start := time.Now()
	var rep AdvancerReport
	var errs []error
	_ = h.d.Service.RunAdvancer(ctx, h.ticks, func(results []tier1.TickResult, err error) {
		rep.Ticks++
		if err != nil {
			rep.FailedTicks++
			errs = append(errs, err)
			if errors.Is(err, tier1.ErrThrottled) {
				h.d.Metrics.Count(AllEvents, MetricThrottles, 1)
			}
		}
		for _, r := range h.record(results) {
			rep.Raises = append(rep.Raises, AdvanceDone{EventID: r.EventID, From: r.From, To: r.To, Admitted: r.Admitted})
		}
		if err == nil || len(results) > 0 {
			h.d.Metrics.Gauge(AllEvents, MetricEventsWaiting, waitingEvents(results))
		}
	})
	attrs := []any{"source", ev.Source, "id", ev.ID, "ticks", rep.Ticks, "failed", rep.FailedTicks,
		"raises", len(rep.Raises), "ms", time.Since(start).Milliseconds()}
	if rep.FailedTicks > 0 {
		h.d.Logger.ErrorContext(ctx, "tier1 advancer", append(attrs, "err", errors.Join(errs...))...)
	} else {
		h.d.Logger.InfoContext(ctx, "tier1 advancer", attrs...)
	}
	if rep.FailedTicks == rep.Ticks && rep.Ticks > 0 {
		return rep, fmt.Errorf("tier1api: every advancer tick failed: %w", tier1.ErrUnavailable)
	}
	return rep, nil
}

// waitingEvents counts the events of a tick with people waiting to be let
// through: raised now, or in this slot by another advancer. Paused, idle and
// pre-queue events are not waiting on the serving counter.
func waitingEvents(results []tier1.TickResult) int64 {
	var n int64
	for _, r := range results {
		if r.Skipped == "" || r.Skipped == "slot-done" {
			n++
		}
	}
	return n
}

// record sends the raises among a tick's results to the metrics and returns
// them.
func (h *Advancer) record(results []tier1.TickResult) []tier1.TickResult {
	var raised []tier1.TickResult
	for _, r := range results {
		if r.Skipped != "" || r.To == r.From {
			continue
		}
		raised = append(raised, r)
		h.d.Metrics.Gauge(r.EventID, MetricServingCounter, r.To)
		h.d.Metrics.Count(r.EventID, MetricReleased, r.Admitted)
	}
	return raised
}

// RunLocal ticks once in every tick slot until ctx ends: vwr local's
// stand-in for the EventBridge schedule. Each tick runs just after its
// slot begins (slots are unix time ÷ TickEvery), so a tick that runs late
// never lands in the slot of the one before and finds it done, which a
// free-running ticker near a slot boundary does under load, losing ticks.
// Errors are logged, never fatal.
func (h *Advancer) RunLocal(ctx context.Context) {
	every := h.d.Service.Config().TickEvery
	for {
		// Waits until just after the next slot begins, waking on the way at
		// a coming sale's opening to close its list.
		now := h.d.Clock.Now()
		next := time.Unix(0, (now.UnixNano()/int64(every)+1)*int64(every)).Add(every / 20)
		if h.d.Service.WaitTick(ctx, next.Sub(now)) != nil {
			return
		}
		results, err := h.d.Service.Tick(ctx)
		if err != nil && ctx.Err() == nil {
			h.d.Logger.Warn("tier1 advancer tick", "err", err)
		}
		h.record(results)
	}
}
