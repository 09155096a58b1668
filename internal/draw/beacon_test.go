package draw_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/draw"
)

func quicknet(t *testing.T) draw.ChainInfo {
	t.Helper()
	c, err := draw.ParseChainInfo([]byte(draw.QuicknetInfo))
	if err != nil {
		t.Fatalf("quicknet info: %v", err)
	}
	return c
}

// Round 1000 of the real quicknet chain, as its relays serve it: the same
// code that verifies the local stand-in verifies the League of Entropy.
var quicknet1000 = draw.Beacon{
	Round:      1000,
	Randomness: mustHex("fe290beca10872ef2fb164d2aa4442de4566183ec51c56ff3cd603d930e54fdd"),
	Signature:  mustHex("b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39"),
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestQuicknetChainHashIsDrands(t *testing.T) {
	t.Parallel()
	c := quicknet(t)
	if got := hex.EncodeToString(c.ComputeHash()); got != "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971" {
		t.Fatalf("chain hash = %s", got)
	}
}

func TestVerifyRealQuicknetRound(t *testing.T) {
	t.Parallel()
	c := quicknet(t)
	if err := c.Verify(quicknet1000); err != nil {
		t.Fatalf("round 1000: %v", err)
	}
	cases := map[string]func(b *draw.Beacon){
		"other round":        func(b *draw.Beacon) { b.Round = 1001 },
		"flipped signature":  func(b *draw.Beacon) { b.Signature[10] ^= 1 },
		"flipped randomness": func(b *draw.Beacon) { b.Randomness[0] ^= 1 },
		"point at infinity": func(b *draw.Beacon) {
			b.Signature = append([]byte{0xc0}, make([]byte, 47)...)
			r := sha256.Sum256(b.Signature)
			b.Randomness = r[:]
		},
		"uncompressed": func(b *draw.Beacon) { b.Signature = append(b.Signature, make([]byte, 48)...) },
		"48 random bytes": func(b *draw.Beacon) {
			b.Signature = sha256Twice()
			r := sha256.Sum256(b.Signature)
			b.Randomness = r[:]
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			b := quicknet1000
			b.Signature = append([]byte(nil), b.Signature...)
			b.Randomness = append([]byte(nil), b.Randomness...)
			mutate(&b)
			if err := c.Verify(b); err == nil {
				t.Fatal("verified a forged beacon")
			}
		})
	}
}

// sha256Twice is 48 bytes that are not a point: a forged signature.
func sha256Twice() []byte {
	a := sha256.Sum256([]byte("forged"))
	b := sha256.Sum256(a[:])
	out := append(a[:], b[:16]...)
	out[0] = out[0]&0x1f | 0x80
	return out
}

func TestChainInfoRejectsTampering(t *testing.T) {
	t.Parallel()
	c := quicknet(t)
	c.GenesisTime++
	if err := c.Check(); !errors.Is(err, draw.ErrMismatch) {
		t.Fatalf("Check with a moved genesis: %v", err)
	}
}

func TestRounds(t *testing.T) {
	t.Parallel()
	c := quicknet(t)
	g := time.Unix(c.GenesisTime, 0)
	tests := []struct {
		at        time.Time
		at0, next uint64
	}{
		{g.Add(-time.Second), 0, 1},
		{g, 1, 2},
		{g.Add(2 * time.Second), 1, 2},
		{g.Add(3 * time.Second), 2, 3},
	}
	for _, tt := range tests {
		if got := c.RoundAt(tt.at); got != tt.at0 {
			t.Errorf("RoundAt(%v) = %d, want %d", tt.at, got, tt.at0)
		}
		if got := c.RoundAfter(tt.at); got != tt.next {
			t.Errorf("RoundAfter(%v) = %d, want %d", tt.at, got, tt.next)
		}
		if r := c.RoundAfter(tt.at); !c.TimeOf(r).After(tt.at) {
			t.Errorf("round %d at %v is not after %v", r, c.TimeOf(r), tt.at)
		}
	}
}
