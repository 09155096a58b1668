// Package draw is vwr's verifiable pre-queue lottery: ticket hashes, the
// Merkle root over the closed ticket list, the order a public beacon's
// randomness gives it, and the checks anyone can rerun (vwr verify-draw, the
// waiting page). It knows nothing of stores or HTTP; the rule is written up
// in docs/draw.md and mirrored, byte for byte, by static/vwr/draw.js.
package draw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
)

// Rule names the draw rule below; it is published with every draw so a
// verifier knows which rule to run.
const Rule = "vwr-draw-v2"

// NonceSize is the length of a client nonce in bytes.
const NonceSize = 16

// Hash is a SHA-256 digest.
type Hash = [sha256.Size]byte

// Errors of the domain.
var (
	ErrInvalidNonce = errors.New("draw: client nonce must be 16 bytes (32 hex digits or 22 base64url characters)")
	ErrMismatch     = errors.New("draw: mismatch")
)

// TicketHash is h = SHA-256(requestId ‖ clientNonce). The nonce has a fixed
// length, so the concatenation is unambiguous.
func TicketHash(requestID string, nonce []byte) Hash {
	h := sha256.New()
	h.Write([]byte(requestID))
	h.Write(nonce)
	var out Hash
	h.Sum(out[:0])
	return out
}

// Domain-separation prefixes: a leaf can never be read as an inner node
// (second-preimage attacks on the tree).
const (
	leafPrefix = 0x00
	nodePrefix = 0x01
)

func leafHash(h Hash) Hash {
	var b [1 + sha256.Size]byte
	b[0] = leafPrefix
	copy(b[1:], h[:])
	return sha256.Sum256(b[:])
}

func nodeHash(l, r Hash) Hash {
	var b [1 + 2*sha256.Size]byte
	b[0] = nodePrefix
	copy(b[1:], l[:])
	copy(b[1+sha256.Size:], r[:])
	return sha256.Sum256(b[:])
}

// EmptyRoot is the root of a list without tickets: SHA-256 of nothing.
var EmptyRoot = sha256.Sum256(nil)

// SortHashes sorts hs ascending and reports an error on a duplicate: the
// list under the root is strictly ascending.
func SortHashes(hs []Hash) error {
	slices.SortFunc(hs, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) })
	return CheckSorted(hs)
}

// CheckSorted reports whether hs is strictly ascending.
func CheckSorted(hs []Hash) error {
	for i := 1; i < len(hs); i++ {
		if bytes.Compare(hs[i-1][:], hs[i][:]) >= 0 {
			return fmt.Errorf("%w: ticket %d is not above ticket %d (list must be sorted, no duplicates)", ErrMismatch, i, i-1)
		}
	}
	return nil
}

// Root is the Merkle root over sorted ticket hashes: leaves SHA-256(0x00‖h),
// inner nodes SHA-256(0x01‖left‖right), pairs (2i, 2i+1) on every level and
// a last node without a partner carried up unchanged (never duplicated, so
// no two lists share a root).
func Root(sorted []Hash) Hash {
	var m MerkleBuilder
	for _, h := range sorted {
		m.Push(h)
	}
	return m.Root()
}

// rootOf reduces a level of nodes to its root, in place.
func rootOf(level []Hash) Hash {
	for len(level) > 1 {
		next := level[:0]
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			next = append(next, nodeHash(level[i], level[i+1]))
		}
		level = next
	}
	return level[0]
}

// Proof is the path from leaf Index of an N-leaf tree to the root: one
// sibling per level where the node has a partner, bottom up.
type Proof struct {
	Index    int
	N        int
	Siblings []Hash
}

// ProveIndex returns the proof for leaf i of the sorted list.
func ProveIndex(sorted []Hash, i int) (Proof, error) {
	if i < 0 || i >= len(sorted) {
		return Proof{}, fmt.Errorf("draw: leaf %d out of range [0, %d)", i, len(sorted))
	}
	level := make([]Hash, len(sorted))
	for k, h := range sorted {
		level[k] = leafHash(h)
	}
	p := Proof{Index: i, N: len(sorted)}
	idx := i
	for len(level) > 1 {
		if sib := idx ^ 1; sib < len(level) {
			p.Siblings = append(p.Siblings, level[sib])
		}
		next := make([]Hash, 0, (len(level)+1)/2)
		for k := 0; k < len(level); k += 2 {
			if k+1 == len(level) {
				next = append(next, level[k])
			} else {
				next = append(next, nodeHash(level[k], level[k+1]))
			}
		}
		level, idx = next, idx/2
	}
	return p, nil
}

// RootFromProof climbs from ticket hash h along p and returns the root it
// reaches; compare it with the published root.
func RootFromProof(h Hash, p Proof) (Hash, error) {
	if p.N < 1 || p.Index < 0 || p.Index >= p.N {
		return Hash{}, fmt.Errorf("%w: proof index %d of %d", ErrMismatch, p.Index, p.N)
	}
	node, idx, width, used := leafHash(h), p.Index, p.N, 0
	for width > 1 {
		if sib := idx ^ 1; sib < width {
			if used == len(p.Siblings) {
				return Hash{}, fmt.Errorf("%w: proof too short", ErrMismatch)
			}
			if idx%2 == 0 {
				node = nodeHash(node, p.Siblings[used])
			} else {
				node = nodeHash(p.Siblings[used], node)
			}
			used++
		}
		idx, width = idx/2, (width+1)/2
	}
	if used != len(p.Siblings) {
		return Hash{}, fmt.Errorf("%w: proof too long", ErrMismatch)
	}
	return node, nil
}

// OrderKey is HMAC-SHA-256(key = beacon randomness, msg = R ‖ h): the key a
// ticket is sorted by. Nobody knows it before the beacon round exists, and it
// is fixed once the root R is.
func OrderKey(randomness []byte, root, h Hash) Hash {
	m := hmac.New(sha256.New, randomness)
	m.Write(root[:])
	m.Write(h[:])
	var out Hash
	m.Sum(out[:0])
	return out
}

// Positions draws the sorted list: positions[i] is the place (1…n) of
// sorted[i], in ascending order of OrderKey (ties, which need a SHA-256
// collision, fall back to the list order). It is Order on the list.
func Positions(randomness []byte, root Hash, sorted []Hash) []uint32 {
	return Order(randomness, root, ListOf(sorted))
}
