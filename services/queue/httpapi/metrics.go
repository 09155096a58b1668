package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/services/queue"
)

// Metrics are the Tier 2 Prometheus series, on their own registry so that
// several APIs (tests, two servers in one process) never collide. It is also
// the queue.Observer that feeds admissions, queue depth and script latency
// from the Service and Worker. A nil *Metrics records nothing.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	admissions *prometheus.CounterVec
	queueSize  *prometheus.GaugeVec
	active     *prometheus.GaugeVec
	script     *prometheus.HistogramVec

	// Event ids become label values; anyone holding a pass for any event id
	// could otherwise grow the series without bound. At most
	// MaxEventLabels ids have their own series at once; a new id takes the
	// place of one unseen for EventLabelIdle (whose series go), else it
	// shares OtherEventLabel, so a long-running instance keeps reporting
	// the events that are live now.
	labelsMu sync.Mutex
	labels   map[string]time.Time // event id → last seen
	// noneIdleBefore: no label can have been idle for EventLabelIdle
	// before then, so a full set need not be searched.
	noneIdleBefore time.Time
	now            func() time.Time
}

// MaxEventLabels is how many distinct event ids have their own series at once.
const MaxEventLabels = 1000

// EventLabelIdle is how long an event id must go unseen before a new one
// may take its series' place.
const EventLabelIdle = 10 * time.Minute

// OtherEventLabel is the admissions label of events beyond MaxEventLabels.
const OtherEventLabel = "_other"

// NewMetrics creates the series on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		labels: map[string]time.Time{},
		now:    time.Now,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vwr_http_requests_total", Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vwr_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"route"}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vwr_queue_admissions_total", Help: "Users admitted (direct entries in check and worker admissions) by event.",
		}, []string{"event"}),
		queueSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vwr_queue_size", Help: "Users waiting in an event's queue, as last observed.",
		}, []string{"event"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vwr_queue_active_users", Help: "Users holding an active slot in an event, as last observed.",
		}, []string{"event"}),
		script: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vwr_queue_script_duration_seconds", Help: "Latency of queue store calls (one Lua script each on Redis) by script and result.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"script", "result"}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.admissions, m.queueSize, m.active, m.script,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry holding the series, for callers that add their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

var _ queue.Observer = (*Metrics)(nil)

// ScriptDone records one store call's (Lua script's) latency and outcome.
func (m *Metrics) ScriptDone(name string, d time.Duration, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.script.WithLabelValues(name, result).Observe(d.Seconds())
}

// Admitted counts n users let into eventID.
func (m *Metrics) Admitted(eventID string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.admissions.WithLabelValues(m.eventLabel(eventID)).Add(float64(n))
}

// eventLabel is eventID when it has its own series or can have them (a
// free place, or the place of the id unseen longest, if for at least
// EventLabelIdle), else OtherEventLabel.
func (m *Metrics) eventLabel(eventID string) string {
	now := m.now()
	m.labelsMu.Lock()
	defer m.labelsMu.Unlock()
	if _, ok := m.labels[eventID]; ok {
		m.labels[eventID] = now
		return eventID
	}
	if len(m.labels) >= MaxEventLabels {
		if now.Before(m.noneIdleBefore) {
			return OtherEventLabel
		}
		oldest, seen := "", now
		for ev, at := range m.labels {
			if at.Before(seen) {
				oldest, seen = ev, at
			}
		}
		if now.Sub(seen) < EventLabelIdle {
			m.noneIdleBefore = seen.Add(EventLabelIdle)
			return OtherEventLabel
		}
		delete(m.labels, oldest)
		m.admissions.DeleteLabelValues(oldest)
		m.queueSize.DeleteLabelValues(oldest)
		m.active.DeleteLabelValues(oldest)
	}
	m.labels[eventID] = now
	return eventID
}

// QueueDepth records an event's line and active sizes.
func (m *Metrics) QueueDepth(eventID string, queued, active int64) {
	if m == nil {
		return
	}
	ev := m.eventLabel(eventID)
	switch {
	case ev == OtherEventLabel:
		// A gauge shared by many events would only show the last one.
	case queued == 0 && active == 0:
		// An idle event's gauges go, so retired events don't linger.
		m.queueSize.DeleteLabelValues(ev)
		m.active.DeleteLabelValues(ev)
	default:
		m.queueSize.WithLabelValues(ev).Set(float64(queued))
		m.active.WithLabelValues(ev).Set(float64(active))
	}
}

func (m *Metrics) observeView(v queue.View) { m.QueueDepth(v.EventID, v.QueueSize, v.CurrentUsers) }

func (m *Metrics) observeStats(s queue.Stats) { m.QueueDepth(s.EventID, s.QueueSize, s.CurrentUsers) }

func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// recorder captures what a handler wrote, plus who was served and why it
// failed, for the log line and metrics.
type recorder struct {
	jsonhttp.Recorder
	user string
	err  error
}

// setUser tells the request log who was served.
func setUser(w http.ResponseWriter, uid string) {
	if rec, ok := w.(*recorder); ok {
		rec.user = uid
	}
}

// instrument wraps h so that each request is counted under route and, when
// LOG_LEVEL lets its level through (see applog), logged as one JSON line with
// stable keys.
func (a *API) instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{Recorder: jsonhttp.Recorder{ResponseWriter: w}}
		h.ServeHTTP(rec, r)
		if rec.Status == 0 {
			rec.Status = http.StatusOK
		}
		elapsed := time.Since(start)
		if m := a.cfg.Metrics; m != nil {
			m.requests.WithLabelValues(route, strconv.Itoa(rec.Status)).Inc()
			m.duration.WithLabelValues(route).Observe(elapsed.Seconds())
		}
		if lvl, _ := a.cfg.Log.RequestLevel(rec.Status, elapsed); !a.cfg.Logger.Enabled(r.Context(), lvl) {
			return
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("route", route),
		}
		if ev := r.PathValue("eventId"); ev != "" && queue.ValidID(ev) {
			attrs = append(attrs, slog.String("event", ev))
		}
		if rec.user != "" {
			attrs = append(attrs, slog.String("uid", rec.user))
		}
		if rec.err != nil {
			attrs = append(attrs, slog.String("code", failure(rec.err).Code))
		}
		a.cfg.Log.Request(r.Context(), a.cfg.Logger, rec.Status, elapsed, rec.err, attrs...)
	})
}
