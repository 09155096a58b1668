package draw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
)

// List is a closed ticket list held in as little memory as the draw
// allows: 32 bytes a ticket, in 256 buckets by first byte, so it grows
// without copying the whole list and sorts bucket by bucket. The sorted
// list is the buckets in order. Close and draw build one from the store's
// pages (Add), Seal it, and stream everything else from it: the Merkle
// root (MerkleBuilder), the order (Order: 12 more bytes a ticket, briefly)
// and the stored chunks (EncodeChunks, one at a time). See BENCHMARKS.md for
// what a million and ten million tickets cost.
type List struct {
	buckets [256][]Hash
	offsets [257]int // after Seal: index of each bucket's first ticket
	sealed  bool
}

// NewList returns an empty list; sizeHint (0 when unknown) presizes it.
func NewList(sizeHint int) *List {
	l := &List{}
	if sizeHint > 0 {
		per := sizeHint/256 + sizeHint/2048 + 16 // +12.5 % for the spread
		for i := range l.buckets {
			l.buckets[i] = make([]Hash, 0, per)
		}
	}
	return l
}

// Add appends ticket hashes, in any order.
func (l *List) Add(hs ...Hash) {
	if l.sealed {
		panic("draw: Add after Seal")
	}
	for _, h := range hs {
		l.buckets[h[0]] = append(l.buckets[h[0]], h)
	}
}

// Seal sorts the list and drops repeated hashes (a store's listing may
// return one ticket twice, and two tickets never share a hash). It sorts
// buckets in parallel.
func (l *List) Seal() {
	if l.sealed {
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, len(l.buckets))
	for i := range l.buckets {
		next <- i
	}
	close(next)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				slices.SortFunc(l.buckets[i], compareHash)
				l.buckets[i] = slices.Clip(slices.Compact(l.buckets[i]))
			}
		}()
	}
	wg.Wait()
	for i, b := range l.buckets {
		l.offsets[i+1] = l.offsets[i] + len(b)
	}
	l.sealed = true
}

func compareHash(a, b Hash) int { return bytes.Compare(a[:], b[:]) }

// Len is the number of distinct tickets (after Seal).
func (l *List) Len() int { return l.offsets[256] }

// At is ticket i of the sorted list.
func (l *List) At(i int) Hash {
	b, _ := slices.BinarySearch(l.offsets[:], i+1)
	return l.buckets[b-1][i-l.offsets[b-1]]
}

// Parts is the sorted list as consecutive slices (read only).
func (l *List) Parts() [][]Hash {
	if !l.sealed {
		panic("draw: Parts before Seal")
	}
	return l.buckets[:]
}

// ListOf is a sealed List of already sorted, distinct hashes (Verify's and
// tests' lists), sharing sorted's memory.
func ListOf(sorted []Hash) *List {
	l := &List{sealed: true}
	for lo := 0; lo < len(sorted); {
		b := sorted[lo][0]
		hi := lo
		for hi < len(sorted) && sorted[hi][0] == b {
			hi++
		}
		l.buckets[b] = sorted[lo:hi:hi]
		lo = hi
	}
	for i, b := range l.buckets {
		l.offsets[i+1] = l.offsets[i] + len(b)
	}
	return l
}

// MerkleBuilder computes the Merkle root of leaves pushed in order, in
// O(log n) memory: stack[k] is a left node of height k waiting for its
// partner. Finishing pairs what waits, bottom up, and carries a node
// without a partner up unchanged, as Root does level by level.
type MerkleBuilder struct {
	stack []*Hash
	n     int
}

// Push adds the next ticket of the sorted list.
func (m *MerkleBuilder) Push(h Hash) {
	m.n++
	node := leafHash(h)
	for k := 0; ; k++ {
		if len(m.stack) == k {
			m.stack = append(m.stack, nil)
		}
		if m.stack[k] == nil {
			m.stack[k] = &node
			return
		}
		node = nodeHash(*m.stack[k], node)
		m.stack[k] = nil
	}
}

// Root is the root of everything pushed (EmptyRoot for nothing).
func (m *MerkleBuilder) Root() Hash {
	if m.n == 0 {
		return EmptyRoot
	}
	var carry *Hash
	for _, left := range m.stack {
		switch {
		case left == nil:
		case carry == nil:
			c := *left
			carry = &c
		default:
			c := nodeHash(*left, *carry)
			carry = &c
		}
	}
	return *carry
}

// RootOfList is the Merkle root of a sealed list, streamed.
func RootOfList(l *List) Hash {
	var m MerkleBuilder
	for _, part := range l.Parts() {
		for _, h := range part {
			m.Push(h)
		}
	}
	return m.Root()
}

// Order draws a sealed list: pos[i] is the place (1…n) of ticket i, in
// ascending order of OrderKey. It sorts one uint64 per ticket (the key's
// first 4 bytes above the ticket's index), then orders tickets whose 4-byte
// prefixes tie by their whole keys, so the result is exactly Positions'
// while holding 12 bytes a ticket instead of 40.
func Order(randomness []byte, root Hash, l *List) []uint32 {
	n := l.Len()
	if uint64(n) > 1<<32-1 {
		panic(fmt.Sprintf("draw: %d tickets exceed a uint32 position", n))
	}
	packed := make([]uint64, n)
	type span struct{ lo, hi int }
	work := make(chan span, 64)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := hmac.New(sha256.New, randomness)
			var k Hash
			for sp := range work {
				for i := sp.lo; i < sp.hi; i++ {
					h := l.At(i)
					m.Reset()
					m.Write(root[:])
					m.Write(h[:])
					m.Sum(k[:0])
					packed[i] = uint64(binary.BigEndian.Uint32(k[:4]))<<32 | uint64(i)
				}
			}
		}()
	}
	const step = 1 << 14
	for lo := 0; lo < n; lo += step {
		work <- span{lo, min(lo+step, n)}
	}
	close(work)
	wg.Wait()
	slices.Sort(packed)
	// Equal prefixes (about n²/2^33 pairs): order them by the whole key,
	// then by index, as Positions does.
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && packed[hi]>>32 == packed[lo]>>32 {
			hi++
		}
		if hi-lo > 1 {
			run := packed[lo:hi]
			keys := make(map[uint64]Hash, len(run))
			for _, v := range run {
				keys[v] = OrderKey(randomness, root, l.At(int(uint32(v))))
			}
			slices.SortFunc(run, func(a, b uint64) int {
				ka, kb := keys[a], keys[b]
				if c := bytes.Compare(ka[:], kb[:]); c != 0 {
					return c
				}
				return int(uint32(a)) - int(uint32(b))
			})
		}
		lo = hi
	}
	pos := make([]uint32, n)
	for rank, v := range packed {
		pos[uint32(v)] = uint32(rank + 1)
	}
	return pos
}

// EncodeChunks writes the stored form of a drawn list one chunk at a time:
// emit(1+j, chunk j) for every chunk in order, then emit(0, the index) —
// the same blobs as Result.Encode, without holding them all.
func EncodeChunks(l *List, positions []uint32, emit func(i int, blob []byte) error) error {
	lay := LayoutFor(l.Len())
	index := make([]byte, 0, 64*lay.Chunks())
	leaves := make([]Hash, 0, lay.ChunkSize)
	for j := range lay.Chunks() {
		lo, hi := j*lay.ChunkSize, min((j+1)*lay.ChunkSize, lay.N)
		chunk := make([]byte, 0, entrySize*(hi-lo))
		leaves = leaves[:0]
		for i := lo; i < hi; i++ {
			h := l.At(i)
			chunk = append(chunk, h[:]...)
			chunk = binary.BigEndian.AppendUint32(chunk, positions[i])
			leaves = append(leaves, leafHash(h))
		}
		first := l.At(lo)
		sub := rootOf(leaves)
		index = append(index, first[:]...)
		index = append(index, sub[:]...)
		if err := emit(1+j, chunk); err != nil {
			return err
		}
	}
	return emit(0, index)
}
