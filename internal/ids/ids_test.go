package ids

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestValidMatchesPattern(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(Pattern)
	cases := []string{
		"", "a", "demo", "concert-2026", "A_b-9", strings.Repeat("x", 64), strings.Repeat("x", 65),
		"a b", "a/b", "a.b", "a:b", "{e}", "é", "a\n", "\x00", "..", "-", "_", "UzXD6a0Phb0oWVhoD5-IDA",
	}
	for _, s := range cases {
		if got, want := Valid(s), re.MatchString(s); got != want {
			t.Errorf("Valid(%q) = %v, regexp says %v", s, got, want)
		}
	}
}

// FuzzValid checks the byte scanner against the regexp on any input.
func FuzzValid(f *testing.F) {
	re := regexp.MustCompile(Pattern)
	for _, s := range []string{"", "a", "a b", strings.Repeat("z", 65), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Valid(s) != re.MatchString(s) {
			t.Fatalf("Valid(%q) disagrees with %s", s, Pattern)
		}
	})
}

func TestValidUser(t *testing.T) {
	t.Parallel()
	ok := []string{
		"alice", "alice@example.com", "auth0|5f7c8ec7c33c6c004bbafe82", "us-east-1:6a1e0c2f-7b3d-4e7a-9c1d-2f8b3a4c5d6e",
		"google-oauth2|1234", "김민수", "émile o'brien", `{ev}:*?[]"\ x`, "a b", strings.Repeat("x", 256),
		strings.Repeat("가", 85), // 255 bytes
	}
	for _, s := range ok {
		if !ValidUser(s) {
			t.Errorf("ValidUser(%q) = false, want true", s)
		}
	}
	bad := []string{
		"", " alice", "alice ", " ", strings.Repeat("x", 257), strings.Repeat("가", 86), // 258 bytes
		"a\nb", "a\tb", "a\x00b", "a\x7fb", "a\u0085b", "a\u200bb", "a\u202eb", "\xff", "a\xc3", "a\u00a0b",
	}
	for _, s := range bad {
		if ValidUser(s) {
			t.Errorf("ValidUser(%q) = true, want false", s)
		}
	}
}

// FuzzValidUser: whatever ValidUser accepts is valid UTF-8 of at most 256
// bytes with no control characters.
func FuzzValidUser(f *testing.F) {
	for _, s := range []string{"alice@example.com", "a\nb", "\xff", " x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidUser(s) {
			return
		}
		if len(s) == 0 || len(s) > MaxUserLen || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
			t.Fatalf("ValidUser accepted %q", s)
		}
		for _, r := range s {
			if unicode.IsControl(r) {
				t.Fatalf("ValidUser accepted control rune %U in %q", r, s)
			}
		}
	})
}
