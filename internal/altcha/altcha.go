// Package altcha implements the ALTCHA proof-of-work protocol, version 1
// (SHA-256), so that the ALTCHA widget, altcha-lib and vwr's own page all
// speak to Tier 1 the same way:
//
//   - a challenge is SHA-256(salt ‖ number) in hex, with number a secret
//     integer in [1, maxnumber] written in decimal;
//   - the server signs the challenge: signature = hex(HMAC-SHA-256(key,
//     challenge)), so it can check a solution without having stored
//     anything;
//   - the salt carries parameters after a '?' ("…?event=E&expires=T&"),
//     bound by the hash, and always ends in '&' so that no number can be
//     read as part of a parameter; a maxnumber parameter binds the
//     challenge's difficulty into the signed part, so that a verifier can
//     tell a solution of an easier challenge from one of the challenge it
//     issues now (the JSON field maxnumber is not signed);
//   - the client searches 0, 1, 2, … for the number and sends back the
//     base64 JSON payload {algorithm, challenge, number, salt, signature}.
//
// The package has no state and no clock of its own: callers pass the keys
// and "now". testdata/vectors.json pins it to the npm altcha-lib.
package altcha

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Algorithm is the one hash this protocol version uses.
const Algorithm = "SHA-256"

// Limits that keep a hostile payload cheap to refuse.
const (
	// MaxPayloadLen is the longest Altcha header accepted, in characters.
	MaxPayloadLen = 2048
	// MaxSaltLen is the longest salt accepted, in bytes.
	MaxSaltLen = 512
	// MaxNumber is the largest maxnumber (and number) accepted: far above
	// any challenge a person could solve, and an exact JavaScript integer.
	MaxNumber = 1 << 40
	// ParamMaxNumber is the salt parameter that carries the challenge's
	// maxnumber (Options.Params, Verified.MaxNumber).
	ParamMaxNumber = "maxnumber"
	// DefaultSaltBytes is the random part of a salt when the caller gives
	// none (altcha-lib's default, 12 bytes as 24 hex digits).
	DefaultSaltBytes = 12
)

// Errors of Verify and Decode. Every refusal wraps ErrInvalid.
var (
	ErrInvalid   = errors.New("altcha: invalid")
	ErrMalformed = fmt.Errorf("%w: malformed payload", ErrInvalid)
	ErrSignature = fmt.Errorf("%w: signature does not match", ErrInvalid)
	ErrSolution  = fmt.Errorf("%w: number does not solve the challenge", ErrInvalid)
	ErrExpired   = fmt.Errorf("%w: challenge expired", ErrInvalid)
)

// Challenge is what the server hands out (GET /vwr/challenge/{event}, or a
// 428 answer): the fields and names the ALTCHA widget expects.
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int64  `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Payload is a solved challenge as the client sends it back.
type Payload struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	Number    int64  `json:"number"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Param is one salt parameter; order is kept, as altcha-lib keeps it.
type Param struct{ Key, Value string }

// Options shape a challenge.
type Options struct {
	// MaxNumber bounds the secret number, in [1, MaxNumber]. A client that
	// counts from 0 needs about MaxNumber/2 + 1 hashes on average.
	MaxNumber int64
	// Salt is the salt's random part; empty draws DefaultSaltBytes at random.
	Salt string
	// Number is the secret; ≤ 0 draws it uniformly from [1, MaxNumber].
	Number int64
	// Params go into the salt after '?', in order; Expires, when set, is
	// appended as expires=<unix seconds>. A ParamMaxNumber parameter must
	// equal MaxNumber.
	Params  []Param
	Expires time.Time
}

// Create makes a challenge signed with key.
func Create(key []byte, o Options) (Challenge, error) {
	if o.MaxNumber < 1 || o.MaxNumber > MaxNumber {
		return Challenge{}, fmt.Errorf("altcha: maxnumber %d not in [1, %d]", o.MaxNumber, int64(MaxNumber))
	}
	for _, p := range o.Params {
		if p.Key == ParamMaxNumber && p.Value != strconv.FormatInt(o.MaxNumber, 10) {
			return Challenge{}, fmt.Errorf("altcha: salt parameter maxnumber=%s is not the challenge's maxnumber %d", p.Value, o.MaxNumber)
		}
	}
	salt := o.Salt
	if salt == "" {
		b := make([]byte, DefaultSaltBytes)
		_, _ = rand.Read(b)
		salt = hex.EncodeToString(b)
	}
	params := o.Params
	if !o.Expires.IsZero() {
		params = append(params[:len(params):len(params)], Param{"expires", strconv.FormatInt(o.Expires.Unix(), 10)})
	}
	if len(params) > 0 {
		salt += "?" + encodeParams(params)
	}
	if !strings.HasSuffix(salt, "&") {
		salt += "&"
	}
	if len(salt) > MaxSaltLen {
		return Challenge{}, fmt.Errorf("altcha: salt longer than %d bytes", MaxSaltLen)
	}
	n := o.Number
	if n <= 0 {
		r, _ := rand.Int(rand.Reader, big.NewInt(o.MaxNumber))
		n = r.Int64() + 1
	}
	if n > o.MaxNumber {
		return Challenge{}, fmt.Errorf("altcha: number %d above maxnumber %d", n, o.MaxNumber)
	}
	ch := hashHex(salt, n)
	return Challenge{Algorithm: Algorithm, Challenge: ch, MaxNumber: o.MaxNumber, Salt: salt, Signature: sign(key, ch)}, nil
}

// Payload is the answer to c with number n.
func (c Challenge) Payload(n int64) Payload {
	return Payload{Algorithm: c.Algorithm, Challenge: c.Challenge, Number: n, Salt: c.Salt, Signature: c.Signature}
}

func hashHex(salt string, n int64) string {
	buf := make([]byte, 0, len(salt)+20)
	buf = strconv.AppendInt(append(buf, salt...), n, 10)
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

func sign(key []byte, challenge string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(challenge))
	return hex.EncodeToString(m.Sum(nil))
}

// encodeParams is the WHATWG application/x-www-form-urlencoded serializer
// (URLSearchParams.toString, which altcha-lib uses): alphanumerics and
// "*-._" stay, a space becomes '+', every other byte is %XX.
func encodeParams(ps []Param) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('&')
		}
		formEncode(&b, p.Key)
		b.WriteByte('=')
		formEncode(&b, p.Value)
	}
	return b.String()
}

func formEncode(b *strings.Builder, s string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '*', c == '-', c == '.', c == '_':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
}

// Encode is the Altcha header value: base64 of the payload's JSON, with the
// keys in the widget's order and no HTML escaping (byte for byte what
// JSON.stringify and btoa give).
func (p Payload) Encode() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p) // a struct of strings and an int always encodes
	return base64.StdEncoding.EncodeToString(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// wirePayload decodes a payload while telling a missing field from a zero
// one, and a JSON integer from anything else.
type wirePayload struct {
	Algorithm *string          `json:"algorithm"`
	Challenge *string          `json:"challenge"`
	Number    *json.RawMessage `json:"number"`
	Salt      *string          `json:"salt"`
	Signature *string          `json:"signature"`
}

// Decode reads an Altcha header: standard base64 (padded) of a JSON object
// with all five fields, number a JSON integer. Other fields (the widget adds
// "took") are ignored. It checks form only; Verify checks meaning.
func Decode(header string) (Payload, error) {
	if header == "" || len(header) > MaxPayloadLen {
		return Payload{}, fmt.Errorf("%w: length %d", ErrMalformed, len(header))
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(header)
	if err != nil {
		return Payload{}, fmt.Errorf("%w: not base64", ErrMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var w wirePayload
	if err := dec.Decode(&w); err != nil {
		return Payload{}, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	if dec.More() {
		return Payload{}, fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	if w.Algorithm == nil || w.Challenge == nil || w.Number == nil || w.Salt == nil || w.Signature == nil {
		return Payload{}, fmt.Errorf("%w: a field is missing", ErrMalformed)
	}
	// A JSON integer literal only: not "12", 12.0 or 1.2e1.
	n, err := strconv.ParseInt(string(*w.Number), 10, 64)
	if err != nil {
		return Payload{}, fmt.Errorf("%w: number is not an integer", ErrMalformed)
	}
	return Payload{Algorithm: *w.Algorithm, Challenge: *w.Challenge, Number: n, Salt: *w.Salt, Signature: *w.Signature}, nil
}

// Verified is what a valid payload tells the server.
type Verified struct {
	// Params are the salt's parameters.
	Params url.Values
	// Expires is the salt's expires parameter; zero when it has none.
	Expires time.Time
	// MaxNumber is the salt's maxnumber parameter: the difficulty the
	// signer bound into the challenge; zero when it has none.
	MaxNumber int64
}

// Verify checks p against keys (any of them may have signed: a rotation
// keeps the old one verifying) at time now: form, signature, expiry, then
// the solution itself. A salt without an expires parameter never expires;
// callers that require one check Verified.Expires.
func Verify(p Payload, keys [][]byte, now time.Time) (Verified, error) {
	if err := checkForm(p); err != nil {
		return Verified{}, err
	}
	params, err := SaltParams(p.Salt)
	if err != nil {
		return Verified{}, err
	}
	var v Verified
	v.Params = params
	if e, ok := params["expires"]; ok {
		if len(e) != 1 {
			return Verified{}, fmt.Errorf("%w: expires given twice", ErrMalformed)
		}
		sec, err := strconv.ParseInt(e[0], 10, 64)
		if err != nil || sec <= 0 {
			return Verified{}, fmt.Errorf("%w: expires is not unix seconds", ErrMalformed)
		}
		v.Expires = time.Unix(sec, 0).UTC()
	}
	if m, ok := params[ParamMaxNumber]; ok {
		if len(m) != 1 {
			return Verified{}, fmt.Errorf("%w: maxnumber given twice", ErrMalformed)
		}
		n, err := strconv.ParseInt(m[0], 10, 64)
		if err != nil || n < 1 || n > MaxNumber || m[0] != strconv.FormatInt(n, 10) {
			return Verified{}, fmt.Errorf("%w: maxnumber is not an integer in [1, %d]", ErrMalformed, int64(MaxNumber))
		}
		v.MaxNumber = n
	}
	if !signedByOneOf(keys, p.Challenge, p.Signature) {
		return Verified{}, ErrSignature
	}
	if !v.Expires.IsZero() && !now.Before(v.Expires) {
		return Verified{}, ErrExpired
	}
	// A number above the signed bound is no solution of the challenge
	// issued, whatever it hashes to.
	if (v.MaxNumber > 0 && p.Number > v.MaxNumber) || hashHex(p.Salt, p.Number) != p.Challenge {
		return Verified{}, ErrSolution
	}
	return v, nil
}

func checkForm(p Payload) error {
	switch {
	case p.Algorithm != Algorithm:
		return fmt.Errorf("%w: algorithm must be %s", ErrMalformed, Algorithm)
	case !isHex64(p.Challenge):
		return fmt.Errorf("%w: challenge is not 64 lowercase hex digits", ErrMalformed)
	case !isHex64(p.Signature):
		return fmt.Errorf("%w: signature is not 64 lowercase hex digits", ErrMalformed)
	case p.Number < 0 || p.Number > MaxNumber:
		return fmt.Errorf("%w: number out of range", ErrMalformed)
	case len(p.Salt) == 0 || len(p.Salt) > MaxSaltLen:
		return fmt.Errorf("%w: salt length", ErrMalformed)
	case !strings.HasSuffix(p.Salt, "&"):
		return fmt.Errorf("%w: salt must end in '&'", ErrMalformed)
	}
	for i := 0; i < len(p.Salt); i++ {
		if c := p.Salt[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: salt is not printable ASCII", ErrMalformed)
		}
	}
	return nil
}

// SaltParams parses the parameters after the salt's first '?'. A salt
// without one has none.
func SaltParams(salt string) (url.Values, error) {
	_, q, ok := strings.Cut(salt, "?")
	if !ok {
		return url.Values{}, nil
	}
	v, err := url.ParseQuery(strings.TrimSuffix(q, "&"))
	if err != nil {
		return nil, fmt.Errorf("%w: salt parameters", ErrMalformed)
	}
	return v, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func signedByOneOf(keys [][]byte, challenge, signature string) bool {
	want, err := hex.DecodeString(signature)
	if err != nil {
		return false
	}
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(challenge))
		if hmac.Equal(m.Sum(nil), want) {
			return true
		}
	}
	return false
}

// Solve finds the number of a challenge by counting from 0, as a client
// does, and reports how many hashes it took (number + 1). ok is false when
// no number up to maxNumber solves it.
func Solve(challenge, salt string, maxNumber int64) (n int64, ok bool) {
	want, err := hex.DecodeString(challenge)
	if err != nil || len(want) != sha256.Size {
		return 0, false
	}
	var target [sha256.Size]byte
	copy(target[:], want)
	buf := make([]byte, 0, len(salt)+20)
	buf = append(buf, salt...)
	for n = 0; n <= maxNumber; n++ {
		if sha256.Sum256(strconv.AppendInt(buf, n, 10)) == target {
			return n, true
		}
	}
	return 0, false
}
