// Package ids owns the shapes of identifier vwr accepts, so both tiers, the
// consumer and the pages agree on them.
//
//   - Event ids, request ids and idempotency keys match ^[A-Za-z0-9_-]{1,64}$:
//     event ids go into Redis key names and DynamoDB partition keys, so they
//     may hold nothing a key layout gives meaning to ({, }, :, #, …).
//   - User ids are whatever an identity provider sends (alice@example.com,
//     auth0|5f7c…, us-east-1:6a1e…): 1–256 bytes of printable UTF-8. They are
//     only ever set members, script arguments and token claims, never part
//     of a key name.
package ids

import (
	"unicode"
	"unicode/utf8"
)

// Pattern is the accepted shape of event ids, request ids and idempotency
// keys, for error messages and documentation.
const Pattern = `^[A-Za-z0-9_-]{1,64}$`

// MaxLen is the longest accepted event id, request id or idempotency key.
const MaxLen = 64

// MaxUserLen is the longest accepted user id, in bytes.
const MaxUserLen = 256

// UserRule describes accepted user ids, for error messages.
const UserRule = "user id must be 1-256 bytes of printable UTF-8 without leading or trailing spaces"

// Valid reports whether s matches Pattern. It runs on every request, so it
// scans bytes instead of running a regexp.
func Valid(s string) bool {
	if len(s) == 0 || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidUser reports whether s is an acceptable user id: 1–MaxUserLen bytes
// of valid UTF-8, every rune printable (letters, marks, numbers,
// punctuation, symbols and the ASCII space; no control or format
// characters, no other spaces), and no space at either end.
func ValidUser(s string) bool {
	if len(s) == 0 || len(s) > MaxUserLen || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
		i += size
	}
	return true
}
