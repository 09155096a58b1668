package draw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ReceiptVersion names the receipt format below (docs/draw.md, "Receipts").
const ReceiptVersion = "vwr-receipt-v1"

// Receipt is what a visitor's page keeps of its pre-queue ticket, from the
// first answer on: enough to find the ticket in the published list, to
// prove it is the visitor's (the nonce), and, once seen, the commitment R
// the list closed under with the time the page first saw it. Times marked
// "client clock" are the visitor's device's, not the server's.
type Receipt struct {
	Receipt     string    `json:"receipt"` // ReceiptVersion
	Rule        string    `json:"rule"`
	EventID     string    `json:"eventId"`
	RequestID   string    `json:"requestId"`
	ClientNonce Hex       `json:"clientNonce"` // 16 bytes
	H           Hex       `json:"h"`           // SHA-256(requestId ‖ clientNonce)
	OpensAt     time.Time `json:"opensAt"`
	Round       uint64    `json:"round"` // the round the ticket answer announced
	RoundAt     time.Time `json:"roundAt"`
	ChainHash   Hex       `json:"chainHash"`
	IssuedAt    time.Time `json:"issuedAt"` // client clock: when the ticket answer arrived
	// Root is R as the page first saw it (status, check or draw document),
	// RootSeenAt when (client clock). Both absent until then.
	Root       Hex           `json:"root,omitempty"`
	RootSeenAt *time.Time    `json:"rootSeenAt,omitempty"`
	Proof      *ReceiptProof `json:"proof,omitempty"`    // once drawn
	Position   uint32        `json:"position,omitempty"` // once drawn
}

// ReceiptProof is a Merkle proof as the check answer gives it.
type ReceiptProof struct {
	Index    int   `json:"index"`
	N        int   `json:"n"`
	Siblings []Hex `json:"siblings"`
}

// DecodeReceipt reads a receipt strictly (unknown fields and trailing data
// are errors).
func DecodeReceipt(r io.Reader) (Receipt, error) {
	var rc Receipt
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rc); err != nil {
		return Receipt{}, fmt.Errorf("draw: receipt: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Receipt{}, errors.New("draw: receipt: trailing data")
	}
	return rc, nil
}

// ReceiptCheck is what a receipt proves about a verified draw.
type ReceiptCheck struct {
	Position uint32
	// ProvesClose is true when the receipt saw the published R before the
	// drawing round's time: the list was fixed before its randomness
	// existed, whatever the operator's clock says. Unproven explains why
	// not otherwise.
	ProvesClose bool
	Unproven    string
}

// CheckReceipt checks a receipt against a bundle that Verify accepted: the
// receipt's sale (event, chain, opening, the round its ticket was
// announced with), its ticket hash from its nonce, its ticket in the list
// (and its Merkle proof, when it has one), its position (when it has one)
// and that the R it saw is the published R. A difference is an error
// wrapping ErrMismatch; a receipt that holds no R, or saw it only after the
// round's time, is not an error but cannot prove the close (ProvesClose
// false).
func CheckReceipt(b Bundle, rc Receipt) (ReceiptCheck, error) {
	d := b.Draw
	fail := func(format string, a ...any) (ReceiptCheck, error) {
		return ReceiptCheck{}, fmt.Errorf("%w: receipt: "+format, append([]any{ErrMismatch}, a...)...)
	}
	switch {
	case rc.Receipt != ReceiptVersion:
		return fail("version %q, this verifier knows %q", rc.Receipt, ReceiptVersion)
	case rc.Rule != d.Rule:
		return fail("rule %q, the draw's is %q", rc.Rule, d.Rule)
	case rc.EventID != d.EventID:
		return fail("event %q, the draw's is %q", rc.EventID, d.EventID)
	case !bytes.Equal(rc.ChainHash, d.Chain.Hash):
		return fail("chain %x, the draw's is %x", []byte(rc.ChainHash), []byte(d.Chain.Hash))
	case !rc.OpensAt.Equal(d.OpensAt):
		return fail("opensAt %v, the draw's is %v", rc.OpensAt, d.OpensAt)
	case rc.Round != d.ScheduledRound || !rc.RoundAt.Equal(d.ScheduledRoundAt):
		return fail("announced round %d at %v, the draw was scheduled with round %d at %v", rc.Round, rc.RoundAt, d.ScheduledRound, d.ScheduledRoundAt)
	case len(rc.ClientNonce) != NonceSize:
		return fail("client nonce of %d bytes", len(rc.ClientNonce))
	}
	h := TicketHash(rc.RequestID, rc.ClientNonce)
	if !bytes.Equal(h[:], rc.H) {
		return fail("h %x is not SHA-256(requestId ‖ clientNonce) = %x", []byte(rc.H), h)
	}
	i := -1
	for k, t := range b.Tickets {
		if bytes.Equal(t, h[:]) {
			i = k
			break
		}
	}
	if i < 0 {
		return fail("ticket %x is not in the published list", h)
	}
	out := ReceiptCheck{Position: b.Positions[i]}
	if rc.Proof != nil {
		p := Proof{Index: rc.Proof.Index, N: rc.Proof.N}
		for _, s := range rc.Proof.Siblings {
			if len(s) != len(Hash{}) {
				return fail("proof sibling of %d bytes", len(s))
			}
			p.Siblings = append(p.Siblings, Hash(s))
		}
		root, err := RootFromProof(h, p)
		if err != nil || !bytes.Equal(root[:], d.MerkleRoot) || p.Index != i {
			return fail("the Merkle proof does not lead from ticket %d to the published Merkle root", i)
		}
	}
	if rc.Position != 0 && rc.Position != out.Position {
		return fail("position %d, the draw gives %d", rc.Position, out.Position)
	}
	switch {
	case len(rc.Root) == 0:
		out.Unproven = "the receipt holds no R: it cannot show that the list closed before the beacon round"
	case !bytes.Equal(rc.Root, d.Root):
		return fail("R %x seen by the receipt differs from the published R %x: the list changed after it was committed", []byte(rc.Root), []byte(d.Root))
	case rc.RootSeenAt == nil:
		out.Unproven = "the receipt does not say when it saw R"
	case !rc.RootSeenAt.Before(d.RoundAt):
		out.Unproven = fmt.Sprintf("R was seen at %v, not before round %d at %v: it cannot prove the close", rc.RootSeenAt.UTC(), d.Round, d.RoundAt)
	default:
		out.ProvesClose = true
	}
	return out, nil
}
