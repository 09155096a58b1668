package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
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
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// drawnSale is a drawn 40-ticket sale served over HTTP, with the receipt
// ticket 0's page would have kept.
type drawnSale struct {
	api, chainHash string
	receipt        draw.Receipt
}

// drawnServer serves Tier 1 over a drawn 40-ticket sale of event ev,
// scheduled through `vwr admin schedule`, on a local beacon stand-in.
func drawnServer(t *testing.T, ev string) drawnSale {
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
	out := drawnSale{api: srv.URL + Tier1Prefix, chainHash: hex.EncodeToString(dc.Chain.Hash)}

	opens := storetest.Epoch.Add(time.Hour)
	code, stdout, stderr := runVWR(t, map[string]string{"VWR_ADMIN_TOKEN": token},
		"admin", "schedule", "-url", out.api, "-event", ev, "-opens", opens.Format(time.RFC3339), "-prequeue-from", "09:30:00Z")
	if code != exitOK || !strings.Contains(stdout, `"phase": "prequeue"`) {
		t.Fatalf("vwr admin schedule: %d\n%s\n%s", code, stdout, stderr)
	}
	clk.Set(opens.Add(-time.Minute))
	for i := range 40 {
		nonce := bytes.Repeat([]byte{byte(i)}, 16)
		res, err := svc.AssignWithNonce(ctx, ev, "", nonce)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			out.receipt = draw.Receipt{
				Receipt: draw.ReceiptVersion, Rule: draw.Rule, EventID: ev, RequestID: res.RequestID, ClientNonce: nonce,
				H: res.TicketHash[:], OpensAt: res.Sale.OpensAt, Round: res.Sale.Round, RoundAt: dc.Chain.TimeOf(res.Sale.Round),
				ChainHash: dc.Chain.Hash, IssuedAt: clk.Now(),
			}
		}
	}
	// The advancer closes the list at the opening; the page sees R a
	// second later; the round draws.
	clk.Set(opens)
	if _, err := svc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	seen := opens.Add(time.Second)
	chk, err := svc.Check(ctx, ev, out.receipt.RequestID)
	if err != nil || chk.Sale == nil || len(chk.Sale.Root) != 32 {
		t.Fatalf("check after the close = %+v, %v", chk, err)
	}
	out.receipt.Root, out.receipt.RootSeenAt = chk.Sale.Root, &seen
	clk.Set(opens.Add(time.Minute))
	if _, err := svc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	// The tick above drew already: the round was out.
	if out, err := svc.Draw(ctx, ev); err != nil || out != tier1.DrawAlready {
		t.Fatalf("draw: %q, %v", out, err)
	}
	if chk, err = svc.Check(ctx, ev, out.receipt.RequestID); err != nil || chk.Proof == nil {
		t.Fatalf("check after the draw = %+v, %v", chk, err)
	}
	out.receipt.Position = uint32(chk.Position)
	out.receipt.Proof = &draw.ReceiptProof{Index: chk.Proof.Index, N: chk.Proof.N}
	for _, s := range chk.Proof.Siblings {
		out.receipt.Proof.Siblings = append(out.receipt.Proof.Siblings, append(draw.Hex(nil), s[:]...))
	}
	return out
}

func jsonFile(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestVerifyDrawCLI(t *testing.T) {
	t.Parallel()
	sale := drawnServer(t, "sale-1")
	file := filepath.Join(t.TempDir(), "draw.json")

	code, stdout, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-1", "-url", sale.api, "-chain-hash", sale.chainHash, "-save", file)
	if code != exitOK || !strings.HasPrefix(stdout, "OK sale-1: 40 tickets drawn") || !strings.Contains(stdout, "is NOT drand's public quicknet chain") {
		t.Fatalf("verify-draw -url: %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-1", "-file", file, "-chain-hash", sale.chainHash); code != exitOK {
		t.Fatalf("verify-draw -file: %d\n%s\n%s", code, stdout, stderr)
	}
	// Without -chain-hash only drand's public quicknet chain is trusted.
	code, _, stderr = runVWR(t, nil, "verify-draw", "-event", "sale-1", "-file", file)
	if code != exitError || !strings.Contains(stderr, "not drand's public quicknet chain") || !strings.Contains(stderr, "-chain-hash "+sale.chainHash) {
		t.Fatalf("verify-draw of a stand-in chain without -chain-hash: %d %s", code, stderr)
	}
	other := strings.Repeat("ab", 32)
	if code, _, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-1", "-file", file, "-chain-hash", other); code != exitError || !strings.Contains(stderr, "FAIL") {
		t.Fatalf("verify-draw against another chain: %d %s", code, stderr)
	}
	if code, _, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-2", "-file", file, "-chain-hash", sale.chainHash); code != exitError {
		t.Fatalf("verify-draw of another event: %d %s", code, stderr)
	}

	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// One flip in each kind of published field.
	for _, field := range []string{`"signature":"`, `"randomness":"`, `"root":"`, `"merkleRoot":"`, `"tickets":["`, `"positions":[`, `"round":`,
		`"opensAt":"`, `"public_key":"`, `"closedAt":"`, `"marginMs":`, `"scheduledAt":"`, `"scheduledRound":`} {
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
		if code, _, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-1", "-file", bad, "-chain-hash", sale.chainHash); code != exitError || !strings.Contains(stderr, "FAIL") {
			t.Errorf("flipped %s: exit %d, want %d (%s)", field, code, exitError, stderr)
		}
	}
}

func TestVerifyDrawReceipts(t *testing.T) {
	t.Parallel()
	sale := drawnServer(t, "sale-r")
	file := filepath.Join(t.TempDir(), "draw.json")
	verify := func(receipts ...draw.Receipt) (int, string, string) {
		args := []string{"verify-draw", "-event", "sale-r", "-file", file, "-chain-hash", sale.chainHash}
		for _, rc := range receipts {
			args = append(args, "-receipt", jsonFile(t, rc))
		}
		return runVWR(t, nil, args...)
	}
	if code, _, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-r", "-url", sale.api, "-chain-hash", sale.chainHash, "-save", file); code != exitOK {
		t.Fatalf("download: %s", stderr)
	}
	good := sale.receipt
	code, stdout, stderr := verify(good, good)
	if code != exitOK || strings.Count(stdout, "before the round: the list was fixed before its randomness existed") != 2 {
		t.Fatalf("honest receipts: %d\n%s\n%s", code, stdout, stderr)
	}

	// Tampered receipts fail: another R, a proof that leads elsewhere,
	// another position, another nonce.
	otherR := good
	otherR.Root = bytes.Repeat([]byte{7}, 32)
	badProof := good
	badProof.Proof = &draw.ReceiptProof{Index: good.Proof.Index, N: good.Proof.N, Siblings: append([]draw.Hex{bytes.Repeat([]byte{1}, 32)}, good.Proof.Siblings[1:]...)}
	badPos := good
	badPos.Position = good.Position%40 + 1
	badNonce := good
	badNonce.ClientNonce = bytes.Repeat([]byte{0xee}, 16)
	for name, rc := range map[string]draw.Receipt{"R": otherR, "proof": badProof, "position": badPos, "nonce": badNonce} {
		code, _, stderr := verify(good, rc)
		if code != exitError || !strings.Contains(stderr, "FAIL: receipt") {
			t.Errorf("receipt with a tampered %s: exit %d, %s", name, code, stderr)
		}
	}

	// A receipt that saw R only after the round, or never, cannot prove the
	// close: it is flagged, and with no receipt that can the output says so.
	late := good
	after := good.RoundAt.Add(time.Hour)
	late.RootSeenAt = &after
	noR := good
	noR.Root, noR.RootSeenAt = nil, nil
	code, stdout, stderr = verify(late, noR)
	if code != exitOK || strings.Count(stdout, "UNPROVEN CLOSE") != 2 || !strings.Contains(stdout, "cannot prove the close") ||
		!strings.Contains(stdout, "No receipt proves that the list closed before the beacon round") {
		t.Fatalf("late and R-less receipts: %d\n%s\n%s", code, stdout, stderr)
	}
	// A receipt of another format is refused, not misread.
	junk := jsonFile(t, map[string]any{"receipt": draw.ReceiptVersion, "surprise": 1})
	if code, _, stderr := runVWR(t, nil, "verify-draw", "-event", "sale-r", "-file", file, "-chain-hash", sale.chainHash, "-receipt", junk); code != exitError || !strings.Contains(stderr, "unknown field") {
		t.Fatalf("a receipt with an unknown field: %d %s", code, stderr)
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
