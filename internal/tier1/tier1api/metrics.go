package tier1api

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of every Tier 1 metric.
const Namespace = "vwr/tier1"

// Metric names emitted by the handlers.
const (
	MetricAssignments    = "Assignments"
	MetricAdmissions     = "Admissions"
	MetricServingCounter = "ServingCounter"
	MetricThrottles      = "Throttles"
	// MetricReleased counts visitors a serving-counter raise let through.
	MetricReleased = "Released"
)

// AllEvents is the EventId dimension of metrics not tied to one event.
const AllEvents = "all"

// Metrics writes CloudWatch Embedded Metric Format lines: one JSON document
// per line on stdout, which CloudWatch Logs turns into metrics without any
// API call from the function. A nil *Metrics emits nothing (vwr local).
type Metrics struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewMetrics writes EMF lines to w (os.Stdout in a Lambda).
func NewMetrics(w io.Writer, now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	return &Metrics{w: w, now: now}
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// Count records n occurrences of name for an event.
func (m *Metrics) Count(eventID, name string, n int64) { m.emit(eventID, name, "Count", n) }

// Gauge records the current value of name for an event.
func (m *Metrics) Gauge(eventID, name string, v int64) { m.emit(eventID, name, "None", v) }

func (m *Metrics) emit(eventID, name, unit string, v int64) {
	if m == nil || m.w == nil {
		return
	}
	doc := map[string]any{
		"_aws": emfMeta{
			Timestamp: m.now().UnixMilli(),
			CloudWatchMetrics: []emfDirective{{
				Namespace:  Namespace,
				Dimensions: [][]string{{"EventId"}},
				Metrics:    []emfMetric{{Name: name, Unit: unit}},
			}},
		},
		"EventId": eventID,
		name:      v,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	b = append(b, '\n')
	m.mu.Lock()
	_, _ = m.w.Write(b)
	m.mu.Unlock()
}
