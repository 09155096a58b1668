// Package localbeacon is a stand-in for a drand relay: it serves drand's
// HTTP API (/{chainhash}/info, /{chainhash}/public/{round} and
// /{chainhash}/public/latest) for a chain of its own, signing each round
// with a BLS key pair of the quicknet scheme once the clock reaches it.
// Tests and `vwr local -demo` run the draw's real verification offline
// against it. It is not a randomness source for production: whoever holds
// its seed knows every round in advance.
package localbeacon

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudflare/circl/sign/bls"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
)

// Beacon is a local drand chain.
type Beacon struct {
	clk  clock.Clock
	key  *bls.PrivateKey[bls.KeyG2SigG1]
	info draw.ChainInfo
	down atomic.Bool
}

// New returns a chain with period `period` and genesis `genesis`, keyed by
// seed (at least 32 bytes; the same seed gives the same chain).
func New(clk clock.Clock, seed []byte, genesis time.Time, period time.Duration) (*Beacon, error) {
	key, err := bls.KeyGen[bls.KeyG2SigG1](seed, []byte("vwr-localbeacon"), nil)
	if err != nil {
		return nil, fmt.Errorf("localbeacon: key: %w", err)
	}
	pub, err := key.PublicKey().MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("localbeacon: public key: %w", err)
	}
	group := sha256.Sum256(append([]byte("vwr-localbeacon group "), seed...))
	info := draw.ChainInfo{
		PublicKey: pub, Period: int(period / time.Second), GenesisTime: genesis.Unix(),
		GroupHash: group[:], SchemeID: draw.SchemeUnchainedG1,
	}
	info.Metadata.BeaconID = "vwr-local"
	info.Hash = info.ComputeHash()
	if err := info.Check(); err != nil {
		return nil, err
	}
	return &Beacon{clk: clk, key: key, info: info}, nil
}

// Info is the chain's info, as /info serves it.
func (b *Beacon) Info() draw.ChainInfo { return b.info }

// InfoJSON is Info as JSON, the form VWR_DRAW_CHAIN_INFO takes.
func (b *Beacon) InfoJSON() string {
	j, _ := json.Marshal(b.info)
	return string(j)
}

// SetDown makes every request fail with 503 (a relay outage) until cleared.
func (b *Beacon) SetDown(down bool) { b.down.Store(down) }

// Round signs round r, whether or not it is out yet.
func (b *Beacon) Round(r uint64) draw.Beacon {
	sig := bls.Sign(b.key, draw.RoundMessage(r))
	rnd := sha256.Sum256(sig)
	return draw.Beacon{Round: r, Randomness: rnd[:], Signature: draw.Hex(sig)}
}

// ServeHTTP serves drand's HTTP API under any prefix ending in the chain hash.
func (b *Beacon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if b.down.Load() {
		http.Error(w, `{"error":"down"}`, http.StatusServiceUnavailable)
		return
	}
	hash := fmt.Sprintf("%x", []byte(b.info.Hash))
	_, rest, ok := strings.Cut(r.URL.Path, "/"+hash+"/")
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	latest := b.info.RoundAt(b.clk.Now())
	var body any
	switch {
	case rest == "info":
		body = b.info
	case rest == "public/latest" && latest > 0:
		body = b.Round(latest)
	case strings.HasPrefix(rest, "public/"):
		n, err := strconv.ParseUint(strings.TrimPrefix(rest, "public/"), 10, 64)
		if err != nil || n == 0 || n > latest {
			// drand answers 404 for a round that is not out yet.
			http.NotFound(w, r)
			return
		}
		body = b.Round(n)
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=60")
	_ = json.NewEncoder(w).Encode(body)
}
