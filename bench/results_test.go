package bench

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite BENCHMARKS.md's generated part from bench/results.json")

// TestBenchmarksMD keeps BENCHMARKS.md's figures exactly those of
// bench/results.json, which only `make bench` writes: nobody edits a figure
// by hand.
func TestBenchmarksMD(t *testing.T) {
	t.Parallel()
	root := testenv.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "bench", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Results
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("bench/results.json: %v", err)
	}
	for _, sc := range Scenarios {
		if r.CheckServiceRps[sc] <= 0 || r.CheckFloorRps[sc] <= 0 || r.CheckRawRps[sc] <= 0 || len(r.Rounds[sc]) == 0 {
			t.Errorf("scenario %s has no measurement", sc)
		}
	}
	if r.SaleRehearsal == nil || r.SaleRehearsal.Visitors < 100000 || r.Loadtest.WaitErrorTier1P90 <= 0 || r.SaleRehearsal.WaitErrorTier1P90 <= 0 {
		t.Errorf("results.json lacks the wait-estimate rehearsals at both tiers (make bench, or -bench.only estimates)")
	}
	if r.RedisBytesPerWaitingUser <= 0 || len(r.Tier1Capacity) != 3 || r.Loadtest.Visitors == 0 {
		t.Errorf("results.json lacks figures: %+v", r)
	}
	// docs/draw.md and template.yaml say ten million tickets close and draw
	// within the 1,024 MB the advancer and draw Lambdas get.
	sizes := map[int64]bool{}
	for _, run := range r.DrawScale.Runs {
		sizes[run.Tickets] = true
		if run.PeakRSSMiB <= 0 || run.PeakRSSMiB >= 1024 || run.CloseSeconds <= 0 || run.DrawSeconds <= 0 {
			t.Errorf("draw at %d tickets: %+v, want a measured peak below 1,024 MiB", run.Tickets, run)
		}
	}
	if !sizes[1_000_000] || !sizes[10_000_000] {
		t.Errorf("results.json has no draw figures for 1 M and 10 M tickets: %+v", r.DrawScale)
	}
	path := filepath.Join(root, "BENCHMARKS.md")
	if *update {
		if err := updateMD(path, r); err != nil {
			t.Fatal(err)
		}
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), Render(r)) {
		t.Fatal("BENCHMARKS.md differs from bench/results.json: run `make bench`, or `go test ./bench -run TestBenchmarksMD -update` after editing the prose of Render")
	}
}
