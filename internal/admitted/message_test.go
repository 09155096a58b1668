package admitted_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/admitted"
)

func TestDedupIDIsHexSHA256OfUserColonEvent(t *testing.T) {
	t.Parallel()
	// echo -n "u-1001:concert-2026" | sha256sum
	const want = "2dfad9088e61fd98e1dff6633dedbadd28bec999c401dd1de190e35f3890c3a3"
	if got := admitted.DedupID("u-1001", "concert-2026"); got != want {
		t.Fatalf("DedupID = %s, want %s", got, want)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	valid := `{"action":"admitted","eventId":"ev-1","userId":"u_1","entryTokenId":"abc-DEF_123","expiresAt":"2026-11-22T02:00:00Z","timestamp":"2026-11-22T01:50:00.5Z"}`
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"valid", valid, true},
		{"worker admission without token id", `{"action":"admitted","eventId":"ev-1","userId":"u_1","expiresAt":"2026-11-22T02:00:00Z","timestamp":"2026-11-22T01:50:00Z"}`, true},
		{"not json", `admitted ev-1 u_1`, false},
		{"empty", ``, false},
		{"wrong action", `{"action":"left","eventId":"ev-1","userId":"u_1","expiresAt":"2026-11-22T02:00:00Z","timestamp":"2026-11-22T01:50:00Z"}`, false},
		{"bad event id", `{"action":"admitted","eventId":"ev 1","userId":"u_1","expiresAt":"2026-11-22T02:00:00Z","timestamp":"2026-11-22T01:50:00Z"}`, false},
		{"missing user", `{"action":"admitted","eventId":"ev-1","expiresAt":"2026-11-22T02:00:00Z","timestamp":"2026-11-22T01:50:00Z"}`, false},
		{"bad token id", `{"action":"admitted","eventId":"ev-1","userId":"u_1","entryTokenId":"<script>","expiresAt":"2026-11-22T02:00:00Z","timestamp":"2026-11-22T01:50:00Z"}`, false},
		{"bearer token smuggled in", `{"action":"admitted","eventId":"ev-1","userId":"u_1","entryToken":"eyJ.e30.x","expiresAt":"2026-11-22T02:00:00Z","timestamp":"2026-11-22T01:50:00Z"}`, false},
		{"missing timestamp", `{"action":"admitted","eventId":"ev-1","userId":"u_1","expiresAt":"2026-11-22T02:00:00Z"}`, false},
		{"missing expiry", `{"action":"admitted","eventId":"ev-1","userId":"u_1","timestamp":"2026-11-22T01:50:00Z"}`, false},
		{"trailing data", valid + `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := admitted.Parse(tt.body)
			if tt.ok {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if m.EventID != "ev-1" || m.UserID != "u_1" || m.Timestamp.IsZero() {
					t.Fatalf("parsed %+v", m)
				}
				return
			}
			if !errors.Is(err, admitted.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestEncodeRoundTrips(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 1, 50, 0, 123_000_000, time.UTC)
	m := admitted.Message{Action: admitted.Action, EventID: "ev-1", UserID: "u-1", EntryTokenID: "jti", ExpiresAt: at.Add(10 * time.Minute), Timestamp: at}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := admitted.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if got != m {
		t.Fatalf("round trip: %+v != %+v", got, m)
	}
	if _, err := (admitted.Message{Action: "admitted"}).Encode(); !errors.Is(err, admitted.ErrMalformed) {
		t.Fatalf("Encode of an empty message: %v", err)
	}
}

// TestHostileUserIDsRoundTrip: user ids made of what JSON, key layouts and
// globs give meaning to travel through the message unchanged, and their
// deduplication ids stay 64 hex characters, distinct per id.
func TestHostileUserIDsRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 1, 50, 0, 0, time.UTC)
	seen := map[string]string{}
	for _, uid := range []string{
		`{other-event}:queue *?[]"\ x`, `"},"userId":"admin`, `\u0000`, "</script><script>", "{", "}",
		"a:b", "알리스 {x}", strings.Repeat("é", 128), strings.Repeat(`"`, 256),
	} {
		m := admitted.Message{Action: admitted.Action, EventID: "ev-1", UserID: uid, EntryTokenID: "jti_1", ExpiresAt: at.Add(time.Minute), Timestamp: at}
		b, err := m.Encode()
		if err != nil {
			t.Fatalf("Encode(%q): %v", uid, err)
		}
		got, err := admitted.Parse(string(b))
		if err != nil || got != m {
			t.Fatalf("round trip of %q: %+v, %v (body %s)", uid, got, err, b)
		}
		d := m.DedupID()
		if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
			t.Fatalf("DedupID(%q) = %q, want 64 hex characters", uid, d)
		}
		if prev, dup := seen[d]; dup {
			t.Fatalf("%q and %q share DedupID %s", prev, uid, d)
		}
		seen[d] = uid
	}
}
