package tier1api

// Namespace is the CloudWatch namespace of every Tier 1 metric, and
// MetricDimension the one dimension each carries.
const (
	Namespace       = "vwr/tier1"
	MetricDimension = "EventId"
)

// Metric names emitted by the handlers.
const (
	MetricAssignments    = "Assignments"
	MetricAdmissions     = "Admissions"
	MetricServingCounter = "ServingCounter"
	MetricThrottles      = "Throttles"
	// MetricReleased counts visitors a serving-counter raise let through.
	MetricReleased = "Released"
	// MetricEventsWaiting is, per advancer tick, how many events have
	// people waiting to be let through (raised this tick, by this advancer
	// or another): with Released it tells a stalled serving counter.
	MetricEventsWaiting = "EventsWaiting"
	// MetricPowRefused counts proof-of-work solutions refused as invalid or
	// replayed (not arrivals that had none yet: that is the normal 428).
	MetricPowRefused = "PowRefused"
	// MetricClientBounded counts arrivals refused for their client's bound.
	MetricClientBounded = "ClientBounded"
)

// AllEvents is the EventId of metrics not tied to one event.
const AllEvents = "all"

// Metrics receives the handlers' counters and gauges, per event. On Lambda
// internal/emf writes them as CloudWatch Embedded Metric Format lines.
type Metrics interface {
	Count(eventID, name string, n int64)
	Gauge(eventID, name string, v int64)
}

// noMetrics records nothing (vwr local).
type noMetrics struct{}

func (noMetrics) Count(string, string, int64) {}
func (noMetrics) Gauge(string, string, int64) {}
