// Package emf writes CloudWatch Embedded Metric Format: one JSON document per
// line on a Lambda's stdout, which CloudWatch Logs turns into metrics without
// any API call from the function.
package emf

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Writer emits one EMF line per value, in two series: one with its single
// dimension (per event) and one without any (the sum over every value of
// the dimension), which is what alarms watch. A nil *Writer emits nothing.
// It is safe for concurrent use.
type Writer struct {
	mu        sync.Mutex
	w         io.Writer
	now       func() time.Time
	namespace string
	dimension string
}

// New writes to w (os.Stdout in a Lambda) under namespace, each value
// carrying one dimension named dimension. A nil now is time.Now.
func New(w io.Writer, namespace, dimension string, now func() time.Time) *Writer {
	if now == nil {
		now = time.Now
	}
	return &Writer{w: w, now: now, namespace: namespace, dimension: dimension}
}

type metric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string     `json:"Namespace"`
	Dimensions [][]string `json:"Dimensions"`
	Metrics    []metric   `json:"Metrics"`
}

type meta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Count records n occurrences of name for the dimension value dim.
func (m *Writer) Count(dim, name string, n int64) { m.emit(dim, name, "Count", n) }

// Gauge records the current value of name for the dimension value dim.
func (m *Writer) Gauge(dim, name string, v int64) { m.emit(dim, name, "None", v) }

func (m *Writer) emit(dim, name, unit string, v int64) {
	if m == nil || m.w == nil {
		return
	}
	doc := map[string]any{
		"_aws": meta{
			Timestamp: m.now().UnixMilli(),
			CloudWatchMetrics: []directive{{
				Namespace: m.namespace,
				// An empty dimension set publishes the value without
				// dimensions as well: one series over all events.
				Dimensions: [][]string{{m.dimension}, {}},
				Metrics:    []metric{{Name: name, Unit: unit}},
			}},
		},
		m.dimension: dim,
		name:        v,
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
