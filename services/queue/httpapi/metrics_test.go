package httpapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Event ids are client-chosen label values; their series must stay bounded.
func TestMetricsBoundEventLabels(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	for i := 0; i < MaxEventLabels+500; i++ {
		ev := fmt.Sprintf("ev%d", i)
		m.Admitted(ev, 1)
		m.QueueDepth(ev, 5, 1)
	}
	if n := testutil.CollectAndCount(m.admissions); n != MaxEventLabels+1 {
		t.Fatalf("%d admission series, want %d plus %s", n, MaxEventLabels, OtherEventLabel)
	}
	if got := testutil.ToFloat64(m.admissions.WithLabelValues(OtherEventLabel)); got != 500 {
		t.Fatalf("%s admissions = %v, want 500", OtherEventLabel, got)
	}
	if n := testutil.CollectAndCount(m.queueSize); n != MaxEventLabels {
		t.Fatalf("%d queue-size series, want %d (no shared gauge)", n, MaxEventLabels)
	}
	// An event already labelled keeps its own series.
	m.Admitted("ev0", 2)
	if got := testutil.ToFloat64(m.admissions.WithLabelValues("ev0")); got != 3 {
		t.Fatalf("ev0 admissions = %v, want 3", got)
	}
	// An idle event's gauges are removed.
	m.QueueDepth("ev1", 0, 0)
	if n := testutil.CollectAndCount(m.queueSize); n != MaxEventLabels-1 {
		t.Fatalf("%d queue-size series after ev1 went idle, want %d", n, MaxEventLabels-1)
	}
}

// The labels rotate to the events that are live now: once an event has
// gone unseen for EventLabelIdle, a new one takes its place (and its series
// go), while the set stays bounded.
func TestMetricsLabelsRotate(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	for i := range MaxEventLabels {
		m.Admitted(fmt.Sprintf("old%d", i), 1)
	}
	now = now.Add(EventLabelIdle / 2)
	m.Admitted("old0", 1) // still live
	m.Admitted("early", 1)
	if got := testutil.ToFloat64(m.admissions.WithLabelValues(OtherEventLabel)); got != 1 {
		t.Fatalf("a new event while none is idle: %s = %v, want 1", OtherEventLabel, got)
	}
	now = now.Add(EventLabelIdle/2 + time.Second)
	for i := range 10 {
		ev := fmt.Sprintf("new%d", i)
		m.Admitted(ev, 2)
		m.QueueDepth(ev, 7, 1)
	}
	if n := testutil.CollectAndCount(m.admissions); n != MaxEventLabels+1 {
		t.Fatalf("%d admission series, want %d plus %s", n, MaxEventLabels, OtherEventLabel)
	}
	for i := range 10 {
		if got := testutil.ToFloat64(m.admissions.WithLabelValues(fmt.Sprintf("new%d", i))); got != 2 {
			t.Fatalf("new%d admissions = %v, want its own series at 2", i, got)
		}
	}
	if got := testutil.ToFloat64(m.admissions.WithLabelValues("old0")); got != 2 {
		t.Fatalf("old0, seen recently, lost its series (%v)", got)
	}
}
