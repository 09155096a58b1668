package ids

import (
	"regexp"
	"strings"
	"testing"
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
