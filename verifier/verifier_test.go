package verifier_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// python runs verify_draw.py with the project's .venv (py_ecc) and
// decodes its JSON answer; code is its exit status.
func python(t *testing.T, out any, args ...string) int {
	t.Helper()
	root := testenv.RepoRoot(t)
	py := filepath.Join(root, ".venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("%s missing: %s", py, testenv.InstallHint)
	}
	cmd := exec.Command(py, append([]string{filepath.Join(root, "verifier", "verify_draw.py")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("verify_draw.py: %v", err)
	}
	if strings.Contains(stderr.String(), "ModuleNotFoundError") {
		t.Fatalf("verify_draw.py: py_ecc missing: %s\n%s", testenv.InstallHint, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("verify_draw.py answered %q (%v), stderr %s", stdout.String(), err, stderr.String())
	}
	return code
}

func writeJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "*.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	return f.Name()
}

// pyResult is the second verifier's answer for a bundle.
type pyResult struct {
	OK         bool     `json:"ok"`
	Error      *string  `json:"error"`
	ChainHash  string   `json:"chainHash"`
	MerkleRoot string   `json:"merkleRoot"`
	Root       string   `json:"root"`
	Randomness string   `json:"randomness"`
	Positions  []uint32 `json:"positions"`
	Receipts   []struct {
		OK          bool   `json:"ok"`
		ProvesClose bool   `json:"provesClose"`
		Position    uint32 `json:"position"`
		Error       string `json:"error"`
	} `json:"receipts"`
}

// agree runs both verifiers on a bundle (and receipts) and requires the
// same verdict; on an honest bundle, the same values too.
func agree(t *testing.T, b draw.Bundle, chain []byte, receipts ...draw.Receipt) pyResult {
	t.Helper()
	args := []string{"bundle", writeJSON(t, b), "--chain-hash", hex.EncodeToString(chain)}
	for _, rc := range receipts {
		args = append(args, "--receipt", writeJSON(t, rc))
	}
	var py pyResult
	python(t, &py, args...)
	goErr := draw.Verify(b, chain, "")
	if (goErr == nil) != py.OK {
		t.Fatalf("Go says %v, the second verifier says ok=%v (%v)", goErr, py.OK, py.Error)
	}
	if goErr != nil {
		return py
	}
	d := b.Draw
	if py.ChainHash != hex.EncodeToString(d.Chain.Hash) || py.MerkleRoot != hex.EncodeToString(d.MerkleRoot) ||
		py.Root != hex.EncodeToString(d.Root) || py.Randomness != hex.EncodeToString(d.Beacon.Randomness) ||
		!reflect.DeepEqual(py.Positions, b.Positions) {
		t.Fatalf("the second verifier computed other values: %+v", py)
	}
	for i, rc := range receipts {
		got, err := draw.CheckReceipt(b, rc)
		p := py.Receipts[i]
		if (err == nil) != p.OK || (err == nil && (got.ProvesClose != p.ProvesClose || got.Position != p.Position)) {
			t.Fatalf("receipt %d: Go %+v, %v; second verifier %+v", i, got, err, p)
		}
	}
	return py
}

// TestSecondVerifierKnownAnswer: the known-answer vector (quicknet round
// 1000, seven tickets) as a published bundle.
func TestSecondVerifierKnownAnswer(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "internal", "draw", "testdata", "kat.json"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Chain  draw.ChainInfo `json:"chain"`
		Beacon draw.Beacon    `json:"beacon"`
		Sorted []draw.Hex     `json:"sorted"`
		Sale   struct {
			EventID        string    `json:"eventId"`
			ScheduledAt    time.Time `json:"scheduledAt"`
			OpensAt        time.Time `json:"opensAt"`
			MarginMs       int64     `json:"marginMs"`
			ScheduledRound uint64    `json:"scheduledRound"`
			Round          uint64    `json:"round"`
			ClosedAt       time.Time `json:"closedAt"`
		} `json:"sale"`
		MerkleRoot draw.Hex `json:"merkleRoot"`
		Root       draw.Hex `json:"root"`
		Positions  []uint32 `json:"positions"`
	}
	if err := json.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	n := int64(len(k.Sorted))
	l := draw.LayoutFor(len(k.Sorted))
	s := k.Sale
	doc := draw.Doc{
		Rule: draw.Rule, EventID: s.EventID, Status: draw.StatusDrawn, ScheduledAt: s.ScheduledAt, OpensAt: s.OpensAt,
		MarginMs: s.MarginMs, Chain: k.Chain, ScheduledRound: s.ScheduledRound, ScheduledRoundAt: k.Chain.TimeOf(s.ScheduledRound),
		Round: s.Round, RoundAt: k.Chain.TimeOf(s.Round), ClosedAt: &s.ClosedAt, MerkleRoot: k.MerkleRoot, Root: k.Root,
		N: &n, Beacon: &k.Beacon, ChunkSize: l.ChunkSize, Chunks: l.Chunks(),
	}
	py := agree(t, draw.Bundle{Draw: doc, Tickets: k.Sorted, Positions: k.Positions}, draw.Quicknet().Hash)
	if !py.OK {
		t.Fatalf("the second verifier refuses the known-answer vector: %v", *py.Error)
	}
}

// TestSecondVerifierQuicknetRounds: real quicknet rounds verify in both,
// forgeries in neither.
func TestSecondVerifierQuicknetRounds(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/quicknet-rounds.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Chain  draw.ChainInfo `json:"chain"`
		Valid  []draw.Beacon  `json:"valid"`
		Forged []draw.Beacon  `json:"forged"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v.Chain.Hash, draw.Quicknet().Hash) {
		t.Fatal("the vector's chain is not quicknet")
	}
	all := append(append([]draw.Beacon(nil), v.Valid...), v.Forged...)
	var py []bool
	python(t, &py, "beacons", writeJSON(t, map[string]any{"chain": v.Chain, "beacons": all}))
	for i, b := range all {
		want := i < len(v.Valid)
		if goOK := v.Chain.Verify(b) == nil; goOK != want || py[i] != want {
			t.Errorf("round %d (%s): Go %v, second verifier %v, want %v", b.Round, map[bool]string{true: "real", false: "forged"}[want], goOK, py[i], want)
		}
	}
}

// localDraw draws a sale of n tickets through the real Service on a
// redis-server with the local beacon stand-in; closeLate closes the list
// 2 s after the scheduled round's time − margin. It returns the published
// bundle and the receipt ticket 0's page would hold.
func localDraw(t *testing.T, n int, closeLate bool) (draw.Bundle, draw.Receipt, []byte) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	clk := clock.NewManual(storetest.Epoch)
	_, dc := storetest.Beacon(t, clk)
	svc := tier1.New(redisstore.New(rdb, redisstore.WithPrefix(testenv.UniqueID(t)+":")), storetest.Keys(t), clk,
		tier1.Config{Draw: dc, Logger: slog.New(slog.DiscardHandler)})
	ev, opens := "local-draw", storetest.Epoch.Add(time.Hour)
	if _, err := svc.Schedule(ctx, ev, opens, time.Time{}); err != nil {
		t.Fatal(err)
	}
	var rc draw.Receipt
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				nonce := sha256.Sum256([]byte(fmt.Sprintf("nonce %d", i)))
				res, err := svc.AssignWithNonce(ctx, ev, "", nonce[:16])
				if err != nil {
					t.Error(err)
					return
				}
				if i == 0 {
					mu.Lock()
					rc = draw.Receipt{Receipt: draw.ReceiptVersion, Rule: draw.Rule, EventID: ev, RequestID: res.RequestID,
						ClientNonce: nonce[:16], H: res.TicketHash[:], OpensAt: res.Sale.OpensAt, Round: res.Sale.Round,
						RoundAt: dc.Chain.TimeOf(res.Sale.Round), ChainHash: dc.Chain.Hash, IssuedAt: clk.Now()}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	closeAt := opens
	if closeLate {
		closeAt = dc.Chain.TimeOf(rc.Round).Add(-dc.Margin + 2*time.Second)
	}
	clk.Set(closeAt)
	if _, err := svc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	chk, err := svc.Check(ctx, ev, rc.RequestID)
	if err != nil || chk.Sale == nil {
		t.Fatalf("check after the close: %+v, %v", chk, err)
	}
	seen := closeAt.Add(500 * time.Millisecond)
	rc.Root, rc.RootSeenAt = chk.Sale.Root, &seen
	clk.Set(dc.Chain.TimeOf(chk.Sale.Round).Add(time.Second))
	if out, err := svc.Draw(ctx, ev); err != nil || out != tier1.DrawDone {
		t.Fatalf("draw: %q, %v", out, err)
	}
	if chk, err = svc.Check(ctx, ev, rc.RequestID); err != nil || chk.Proof == nil {
		t.Fatalf("check after the draw: %+v, %v", chk, err)
	}
	rc.Position = uint32(chk.Position)
	rc.Proof = &draw.ReceiptProof{Index: chk.Proof.Index, N: chk.Proof.N}
	for _, s := range chk.Proof.Siblings {
		rc.Proof.Siblings = append(rc.Proof.Siblings, append(draw.Hex(nil), s[:]...))
	}
	return storetest.Bundle(t, svc, ev), rc, dc.Chain.Hash
}

// TestSecondVerifierLocalDraw: a 2,100-ticket draw through the real
// Service and store (three chunks), on time and after a late close, with
// receipts; then tampered copies, which both verifiers refuse.
func TestSecondVerifierLocalDraw(t *testing.T) {
	t.Parallel()
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late close %v", late), func(t *testing.T) {
			t.Parallel()
			b, rc, chain := localDraw(t, 2100, late)
			if late != (b.Draw.RoundMoved == draw.MovedLateClose) || b.Draw.Chunks != 3 {
				t.Fatalf("draw: moved %q, %d chunks", b.Draw.RoundMoved, b.Draw.Chunks)
			}
			afterRound := b.Draw.RoundAt.Add(time.Second)
			seenLate, noR, badPos := rc, rc, rc
			seenLate.RootSeenAt = &afterRound
			noR.Root, noR.RootSeenAt = nil, nil
			badPos.Position = rc.Position%2100 + 1
			py := agree(t, b, chain, rc, seenLate, noR, badPos)
			if !py.OK || !py.Receipts[0].ProvesClose || py.Receipts[1].ProvesClose || py.Receipts[2].ProvesClose || py.Receipts[3].OK {
				t.Fatalf("second verifier: %+v", py)
			}
			if late {
				return
			}
			// Tampering, one kind at a time: both refuse each.
			other := sha256.Sum256([]byte("other"))
			later := b.Draw.ClosedAt.Add(time.Millisecond)
			for name, change := range map[string]func(*draw.Bundle){
				"a ticket":       func(x *draw.Bundle) { x.Tickets[5] = other[:] },
				"two positions":  func(x *draw.Bundle) { x.Positions[0], x.Positions[1] = x.Positions[1], x.Positions[0] },
				"R":              func(x *draw.Bundle) { x.Draw.Root = other[:] },
				"Merkle root":    func(x *draw.Bundle) { x.Draw.MerkleRoot = other[:] },
				"closedAt":       func(x *draw.Bundle) { x.Draw.ClosedAt = &later },
				"margin":         func(x *draw.Bundle) { x.Draw.MarginMs++ },
				"round":          func(x *draw.Bundle) { x.Draw.Round++ },
				"scheduledRound": func(x *draw.Bundle) { x.Draw.ScheduledRound-- },
				"signature":      func(x *draw.Bundle) { x.Draw.Beacon.Signature[20] ^= 1 },
				"randomness":     func(x *draw.Bundle) { x.Draw.Beacon.Randomness[0] ^= 1 },
				"opensAt":        func(x *draw.Bundle) { x.Draw.OpensAt = x.Draw.OpensAt.Add(time.Second) },
				"chain key":      func(x *draw.Bundle) { x.Draw.Chain.PublicKey[5] ^= 1 },
				"dropped ticket": func(x *draw.Bundle) { x.Tickets, x.Positions = x.Tickets[1:], x.Positions[1:] },
			} {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					var c draw.Bundle
					raw, _ := json.Marshal(b)
					if err := json.Unmarshal(raw, &c); err != nil {
						t.Fatal(err)
					}
					change(&c)
					if py := agree(t, c, chain); py.OK {
						t.Fatalf("both verifiers accepted a bundle with a changed %s", name)
					}
				})
			}
		})
	}
}
