package httpapi

import (
	"fmt"
	"testing"

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
