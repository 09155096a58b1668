package applog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

func TestNewFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format, want string
	}{{"", `{"time":`}, {"auto", `{"time":`}, {"json", `{"time":`}, {"text", "time="}, {"TEXT", "time="}} {
		var b bytes.Buffer
		New(&b, Config{Format: tc.format}).Info("hello")
		if !strings.HasPrefix(b.String(), tc.want) {
			t.Errorf("LOG_FORMAT=%q wrote %q, want it to start with %q", tc.format, b.String(), tc.want)
		}
	}
	// A file is not a terminal: auto writes JSON to it.
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Fatal("a regular file reads as a terminal")
	}
	if err := (Config{Format: "yaml"}).Validate(); err == nil || !strings.Contains(err.Error(), "LOG_FORMAT") {
		t.Fatalf("Validate(yaml) = %v", err)
	}
}

func TestQuietWritesARepeatOncePerPause(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}))
	q := Quiet(base.With("component", "worker"), time.Minute)
	other := Quiet(base.With("component", "settings"), time.Minute)
	for range 5 {
		q.Error("admission pass failed", "err", "dial tcp: refused")
		q.Info("stale cleanup", "removed", 1) // below warn: never held back
	}
	other.Error("admission pass failed") // another logger's line is its own
	q.Warn("loss watch failed")          // another message too
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		lines = append(lines, m)
	}
	count := map[string]int{}
	for _, l := range lines {
		count[l["component"].(string)+":"+l["msg"].(string)]++
	}
	if count["worker:admission pass failed"] != 1 || count["worker:stale cleanup"] != 5 ||
		count["settings:admission pass failed"] != 1 || count["worker:loss watch failed"] != 1 {
		t.Fatalf("lines = %v", count)
	}

	// After the pause the next one is written with the count left out.
	var c bytes.Buffer
	h := Quiet(slog.New(slog.NewJSONHandler(&c, nil)), 20*time.Millisecond)
	h.Error("down")
	h.Error("down")
	h.Error("down")
	time.Sleep(30 * time.Millisecond)
	h.Error("down")
	got := strings.Split(strings.TrimSpace(c.String()), "\n")
	if len(got) != 2 || !strings.Contains(got[1], `"repeated":2`) {
		t.Fatalf("after the pause: %q", got)
	}
}
