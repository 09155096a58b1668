package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// drawnServer serves Tier 1 over a drawn 40-ticket sale of event ev,
// scheduled through `vwr admin schedule`.
func drawnServer(t *testing.T, ev string) (api string, chainHash string) {
	t.Helper()
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	clk := clock.NewManual(storetest.Epoch)
	_, dc := storetest.Beacon(t, clk)
	svc := tier1.New(redisstore.New(rdb), storetest.Keys(t), clk, tier1.Config{Draw: dc, Logger: slog.New(slog.DiscardHandler)})
	const token = "verify-draw-admin"
	h := tier1api.New(tier1api.Deps{Service: svc, Clock: clk}, tier1api.AdminOptions{Token: token}).Handler()
	srv := httptest.NewServer(http.StripPrefix(Tier1Prefix, h))
	t.Cleanup(srv.Close)
	api = srv.URL + Tier1Prefix

	opens := storetest.Epoch.Add(time.Hour)
	code, stdout, stderr := runVWR(t, map[string]string{"VWR_ADMIN_TOKEN": token},
		"admin", "schedule", "-url", api, "-event", ev, "-opens", opens.Format(time.RFC3339), "-prequeue-from", "09:30:00Z")
	if code != exitOK || !strings.Contains(stdout, `"phase": "prequeue"`) {
		t.Fatalf("vwr admin schedule: %d\n%s\n%s", code, stdout, stderr)
	}
	for i := range 40 {
		nonce := bytes.Repeat([]byte{byte(i)}, 16)
		if _, err := svc.AssignWithNonce(ctx, ev, "", nonce); err != nil {
			t.Fatal(err)
		}
	}
	clk.Set(opens.Add(time.Minute))
	if _, err := svc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	// The tick above drew already: the round was out.
	if out, err := svc.Draw(ctx, ev); err != nil || out != tier1.DrawAlready {
		t.Fatalf("draw: %q, %v", out, err)
	}
	return api, hex.EncodeToString(dc.Chain.Hash)
}

func TestVerifyDrawCLI(t *testing.T) {
	t.Parallel()
	api, chain := drawnServer(t, "sale-1")
	file := filepath.Join(t.TempDir(), "draw.json")

	code, stdout, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-1", "-url", api, "-chain-hash", chain, "-save", file)
	if code != exitOK || !strings.HasPrefix(stdout, "OK sale-1: 40 tickets drawn") {
		t.Fatalf("verify-draw -url: %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-1", "-file", file); code != exitOK {
		t.Fatalf("verify-draw -file: %d\n%s\n%s", code, stdout, stderr)
	}
	other := strings.Repeat("ab", 32)
	if code, _, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-1", "-file", file, "-chain-hash", other); code != exitError || !strings.Contains(stderr, "FAIL") {
		t.Fatalf("verify-draw against another chain: %d %s", code, stderr)
	}
	if code, _, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-2", "-file", file); code != exitError {
		t.Fatalf("verify-draw of another event: %d %s", code, stderr)
	}

	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// One flip in each kind of published field.
	for _, field := range []string{`"signature":"`, `"randomness":"`, `"root":"`, `"merkleRoot":"`, `"tickets":["`, `"positions":[`, `"round":`, `"opensAt":"`, `"public_key":"`} {
		i := bytes.Index(raw, []byte(field))
		if i < 0 {
			t.Fatalf("bundle has no %s", field)
		}
		flipped := bytes.Clone(raw)
		flipped[i+len(field)+2] ^= 1
		bad := filepath.Join(t.TempDir(), "bad.json")
		if err := os.WriteFile(bad, flipped, 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-1", "-file", bad); code != exitError || !strings.Contains(stderr, "FAIL") {
			t.Errorf("flipped %s: exit %d, want %d (%s)", field, code, exitError, stderr)
		}
	}
}

func TestVerifyDrawAndScheduleUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify-draw", "-url", "http://x"}, "-event is required"},
		{[]string{"verify-draw", "-event", "e"}, "exactly one of -url and -file"},
		{[]string{"verify-draw", "-event", "e", "-url", "http://x", "-file", "f"}, "exactly one of -url and -file"},
		{[]string{"verify-draw", "-event", "e", "-file", "f", "-chain-hash", "zz"}, "-chain-hash must be 64 hex digits"},
		{[]string{"admin", "schedule", "-event", "e"}, "schedule needs -opens"},
		{[]string{"admin", "schedule", "-event", "e", "-opens", "tomorrow"}, "is not RFC 3339"},
		{[]string{"admin", "schedule", "-event", "e", "-opens", "2026-12-01T10:00:00Z", "-prequeue-from", "11:00:00Z"}, "must be before -opens"},
		{[]string{"admin", "schedule", "-event", "e", "-opens", "2026-12-01T10:00:00Z", "-prequeue-from", "soon"}, "neither RFC 3339"},
	} {
		code, _, stderr := runVWR(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("vwr %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}
