// Package ids owns the one shape of identifier vwr accepts for event ids,
// user ids, request ids and idempotency keys: ^[A-Za-z0-9_-]{1,64}$. Keeping
// it in one place keeps both tiers, the consumer and the pages in agreement.
package ids

// Pattern is the accepted shape, for error messages and documentation.
const Pattern = `^[A-Za-z0-9_-]{1,64}$`

// MaxLen is the longest accepted id.
const MaxLen = 64

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
