package draw

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cloudflare/circl/sign/bls"
)

// SchemeUnchainedG1 is drand's quicknet scheme: public key on G2, signature
// on G1 over SHA-256(round as 8 big-endian bytes), hashed to the curve with
// RFC 9380's BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_ (circl's G1 DST).
const SchemeUnchainedG1 = "bls-unchained-g1-rfc9380"

// QuicknetInfo is the League of Entropy's quicknet chain info, as its relays
// serve it at /{hash}/info.
const QuicknetInfo = `{"public_key":"83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a","period":3,"genesis_time":1692803367,"hash":"52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971","groupHash":"f477d5c89f21a17c863a7f937c6a6d15859414d2be09cd448d4279af331c5d3e","schemeID":"bls-unchained-g1-rfc9380","metadata":{"beaconID":"quicknet"}}`

// DefaultRelay is the League of Entropy's HTTP relay.
const DefaultRelay = "https://api.drand.sh"

// Quicknet is QuicknetInfo parsed.
func Quicknet() ChainInfo {
	c, err := ParseChainInfo([]byte(QuicknetInfo))
	if err != nil {
		panic("draw: built-in quicknet info: " + err.Error())
	}
	return c
}

// Hex is bytes written as lowercase hex in JSON.
type Hex []byte

// MarshalText writes lowercase hex.
func (h Hex) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(h)), nil }

// UnmarshalText accepts lowercase hex only, so every published byte has one
// spelling.
func (h *Hex) UnmarshalText(b []byte) error {
	if strings.ToLower(string(b)) != string(b) {
		return fmt.Errorf("draw: hex %q is not lowercase", b)
	}
	v, err := hex.DecodeString(string(b))
	if err != nil {
		return fmt.Errorf("draw: %w", err)
	}
	*h = v
	return nil
}

// ChainInfo is a drand chain's public information, in drand's JSON.
type ChainInfo struct {
	PublicKey   Hex    `json:"public_key"`
	Period      int    `json:"period"` // seconds
	GenesisTime int64  `json:"genesis_time"`
	Hash        Hex    `json:"hash"`
	GroupHash   Hex    `json:"groupHash"`
	SchemeID    string `json:"schemeID"`
	Metadata    struct {
		BeaconID string `json:"beaconID"`
	} `json:"metadata"`
}

// ParseChainInfo decodes and checks chain info JSON.
func ParseChainInfo(b []byte) (ChainInfo, error) {
	var c ChainInfo
	if err := json.Unmarshal(b, &c); err != nil {
		return ChainInfo{}, fmt.Errorf("draw: chain info: %w", err)
	}
	return c, c.Check()
}

// ComputeHash is drand's chain hash: SHA-256(period as uint32 BE ‖ genesis
// as int64 BE ‖ public key ‖ group hash ‖ beacon id unless "default").
func (c ChainInfo) ComputeHash() []byte {
	h := sha256.New()
	_ = binary.Write(h, binary.BigEndian, uint32(c.Period))
	_ = binary.Write(h, binary.BigEndian, c.GenesisTime)
	h.Write(c.PublicKey)
	h.Write(c.GroupHash)
	if id := c.Metadata.BeaconID; id != "" && id != "default" {
		h.Write([]byte(id))
	}
	return h.Sum(nil)
}

// Check verifies that the info names the scheme vwr verifies, that its
// public key decodes, and that its hash is the hash of its fields.
func (c ChainInfo) Check() error {
	if c.SchemeID != SchemeUnchainedG1 {
		return fmt.Errorf("draw: chain scheme %q, want %q", c.SchemeID, SchemeUnchainedG1)
	}
	if c.Period < 1 {
		return errors.New("draw: chain period must be at least 1 s")
	}
	if _, err := c.publicKey(); err != nil {
		return err
	}
	if hex.EncodeToString(c.ComputeHash()) != hex.EncodeToString(c.Hash) {
		return fmt.Errorf("%w: chain hash %x is not the hash of the chain info (%x)", ErrMismatch, []byte(c.Hash), c.ComputeHash())
	}
	return nil
}

// Point encodings (docs/draw.md): compressed, flags in the first byte's top
// three bits (0x80 compressed, 0x40 point at infinity, 0x20 sign of y).
const (
	g1Compressed = 48
	g2Compressed = 96
	flagInfinity = 0x40
	flagCompress = 0x80
)

// compressedPoint checks that b is a compressed point of size n that is not
// the point at infinity; decoding (circl) checks the curve and the
// prime-order subgroup.
func compressedPoint(b []byte, n int, what string) error {
	if len(b) != n || b[0]&flagCompress == 0 || b[0]&flagInfinity != 0 {
		return fmt.Errorf("%w: %s must be a compressed %d-byte point other than infinity", ErrMismatch, what, n)
	}
	return nil
}

func (c ChainInfo) publicKey() (*bls.PublicKey[bls.KeyG2SigG1], error) {
	if err := compressedPoint(c.PublicKey, g2Compressed, "chain public key"); err != nil {
		return nil, err
	}
	pk := new(bls.PublicKey[bls.KeyG2SigG1])
	if err := pk.UnmarshalBinary(c.PublicKey); err != nil {
		return nil, fmt.Errorf("draw: chain public key: %w", err)
	}
	return pk, nil
}

// RoundAt is the latest round published at t (0 before genesis).
func (c ChainInfo) RoundAt(t time.Time) uint64 {
	if t.Unix() < c.GenesisTime {
		return 0
	}
	return uint64((t.Unix()-c.GenesisTime)/int64(c.Period)) + 1
}

// TimeOf is when round r is published.
func (c ChainInfo) TimeOf(r uint64) time.Time {
	return time.Unix(c.GenesisTime+int64(r-1)*int64(c.Period), 0).UTC()
}

// RoundAfter is the first round published strictly after t.
func (c ChainInfo) RoundAfter(t time.Time) uint64 {
	r := c.RoundAt(t) + 1
	for !c.TimeOf(r).After(t) {
		r++
	}
	return r
}

// FirstRoundAtOrAfter is the first round published at t or later: the round
// a late close moves a sale to is the first one at least the margin after
// the close.
func (c ChainInfo) FirstRoundAtOrAfter(t time.Time) uint64 {
	r := c.RoundAt(t)
	if r == 0 || c.TimeOf(r).Before(t) {
		r++
	}
	return r
}

// Beacon is one drand round, in drand's JSON.
type Beacon struct {
	Round      uint64 `json:"round"`
	Randomness Hex    `json:"randomness"`
	Signature  Hex    `json:"signature"`
}

// RoundMessage is what a quicknet node signs for round r.
func RoundMessage(r uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], r)
	m := sha256.Sum256(b[:])
	return m[:]
}

// Verify checks b's BLS signature under the chain's public key and that its
// randomness is SHA-256 of the signature.
func (c ChainInfo) Verify(b Beacon) error {
	pk, err := c.publicKey()
	if err != nil {
		return err
	}
	if err := compressedPoint(b.Signature, g1Compressed, fmt.Sprintf("beacon round %d signature", b.Round)); err != nil {
		return err
	}
	if !bls.Verify(pk, RoundMessage(b.Round), bls.Signature(b.Signature)) {
		return fmt.Errorf("%w: beacon round %d: BLS signature does not verify under the chain key", ErrMismatch, b.Round)
	}
	if r := sha256.Sum256(b.Signature); hex.EncodeToString(r[:]) != hex.EncodeToString(b.Randomness) {
		return fmt.Errorf("%w: beacon round %d: randomness is not SHA-256(signature)", ErrMismatch, b.Round)
	}
	return nil
}

// ErrRoundNotYet is a round the beacon has not published (yet).
var ErrRoundNotYet = errors.New("draw: beacon round not published yet")

// Client fetches rounds from a drand HTTP relay (or the local stand-in).
type Client struct {
	URL   string // relay base URL, e.g. https://api.drand.sh
	Chain ChainInfo
	HTTP  *http.Client // default: 5 s timeout
}

// Fetch returns round r, verified. A round not out yet is ErrRoundNotYet;
// an unreachable relay is an error: the draw waits, it never falls back.
func (c Client) Fetch(ctx context.Context, r uint64) (Beacon, error) {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	url := fmt.Sprintf("%s/%x/public/%d", strings.TrimRight(c.URL, "/"), []byte(c.Chain.Hash), r)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Beacon{}, fmt.Errorf("draw: beacon request: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Beacon{}, fmt.Errorf("draw: beacon: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return Beacon{}, fmt.Errorf("draw: beacon: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusTooEarly:
		return Beacon{}, ErrRoundNotYet
	case resp.StatusCode != http.StatusOK:
		return Beacon{}, fmt.Errorf("draw: beacon round %d: HTTP %d", r, resp.StatusCode)
	}
	var b Beacon
	if err := json.Unmarshal(body, &b); err != nil {
		return Beacon{}, fmt.Errorf("draw: beacon round %d: %w", r, err)
	}
	if b.Round != r {
		return Beacon{}, fmt.Errorf("%w: asked round %d, got %d", ErrMismatch, r, b.Round)
	}
	if err := c.Chain.Verify(b); err != nil {
		return Beacon{}, err
	}
	return b, nil
}
