package tier1_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/altcha"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

func TestClientAddress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value    string
		withPort bool
		want     string // "" for not an address
	}{
		{"198.51.100.10:46532", true, "198.51.100.10/32"},
		{"198.51.100.10", false, "198.51.100.10/32"},
		{" 198.51.100.10 ", false, "198.51.100.10/32"},
		// CloudFront writes IPv6 without brackets, port last.
		{"2001:db8:85a3::8a2e:370:7334:46532", true, "2001:db8:85a3::/64"},
		{"2001:db8:1:2:3:4:5:6:443", true, "2001:db8:1:2::/64"},
		// The case a port would be read into: ":: " must still give the /64 of the address.
		{"2001:db8::6:7:8:9:443", true, "2001:db8::/64"},
		{"[2001:db8:0:1::5]:443", false, "2001:db8:0:1::/64"},
		{"2001:db8:0:1::5", false, "2001:db8:0:1::/64"},
		{"::ffff:192.0.2.7:80", true, "192.0.2.7/32"},
		{"::ffff:192.0.2.7", false, "192.0.2.7/32"},
		{"", false, ""},
		{"198.51.100.10", true, ""},       // the port is missing
		{"198.51.100.10:99999", true, ""}, // not a port
		{"fe80::1%eth0", false, ""},
		{"not-an-ip", false, ""},
		{"198.51.100.10, 10.0.0.1", false, ""}, // a list is not one address
	}
	for _, c := range cases {
		p, ok := tier1.ClientAddress(c.value, c.withPort)
		got := ""
		if ok {
			got = p.String()
		}
		if got != c.want {
			t.Errorf("ClientAddress(%q, %v) = %q, want %q", c.value, c.withPort, got, c.want)
		}
	}
}

func TestClientKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k1 := b.svc.ClientKey("198.51.100.10:1", true)
	if len(k1) != 32 || strings.Contains(k1, "198") {
		t.Fatalf("client key %q: want 32 hex digits that do not show the address", k1)
	}
	if b.svc.ClientKey("198.51.100.10:2", true) != k1 || b.svc.ClientKey("198.51.100.11:1", true) == k1 {
		t.Error("the key must follow the address, not the port")
	}
	if b.svc.ClientKey("garbage", false) != b.svc.ClientKey("", false) {
		t.Error("every unreadable value must share the one unknown key")
	}
}

func TestKeyHash(t *testing.T) {
	t.Parallel()
	if tier1.KeyHash("ev", "") != "" {
		t.Error("no key, no hash")
	}
	h := tier1.KeyHash("ev", "k")
	if len(h) != 32 || h == tier1.KeyHash("ev2", "k") || h == tier1.KeyHash("ev", "k2") {
		t.Errorf("KeyHash = %q: want 32 hex digits, distinct per event and key", h)
	}
}

// TestWindowChallenge: one nonce gets one challenge all window long (what
// lets a CDN cache it), valid until the end of the next window; other
// nonces, and the next window, get other challenges; and the number is
// the server's secret (solving is the only way to it).
func TestWindowChallenge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := "window"
	b.clk.Set(storetest.Epoch.Add(30 * time.Second)) // 10:00:30, window 10:00–10:05
	ch, until, err := b.svc.WindowChallenge(b.ctx, ev, []byte("nonce-one"))
	if err != nil {
		t.Fatal(err)
	}
	if !until.Equal(storetest.Epoch.Add(5 * time.Minute)) {
		t.Fatalf("served until %v, want the window's end", until)
	}
	params, _ := altcha.SaltParams(ch.Salt)
	if params.Get("event") != ev || params.Get("expires") != "1795342200" || ch.MaxNumber != 2*tier1.DefaultPow {
		t.Fatalf("challenge %+v: want this event, expiry at the next window's end (10:10), default pow", ch)
	}
	b.clk.Set(storetest.Epoch.Add(4*time.Minute + 59*time.Second))
	again, _, _ := b.svc.WindowChallenge(b.ctx, ev, []byte("nonce-one"))
	if again != ch {
		t.Fatalf("same nonce, same window: %+v then %+v", ch, again)
	}
	other, _, _ := b.svc.WindowChallenge(b.ctx, ev, []byte("nonce-two"))
	b.clk.Set(storetest.Epoch.Add(5 * time.Minute))
	next, _, _ := b.svc.WindowChallenge(b.ctx, ev, []byte("nonce-one"))
	if other.Challenge == ch.Challenge || next.Challenge == ch.Challenge || other.Salt == ch.Salt {
		t.Fatal("another nonce or the next window got the same challenge")
	}
	if _, _, err := b.svc.WindowChallenge(b.ctx, ev, nil); !errors.Is(err, tier1.ErrInvalidNonce) {
		t.Fatalf("no nonce: %v", err)
	}
	if _, _, err := b.svc.WindowChallenge(b.ctx, "bad id", []byte("n")); !errors.Is(err, tier1.ErrInvalidEvent) {
		t.Fatalf("bad event: %v", err)
	}
}

// TestChallengeDifficulty: an event's challenges use its own pow while it
// queues, the default otherwise; every salt leaves the number's block to
// itself (one SHA-256 block per number after the salt's first blocks).
func TestChallengeDifficulty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.svc.Activate(b.ctx, "hot", 1, 5, tier1.WithPow(12_345)); err != nil {
		t.Fatal(err)
	}
	for ev, want := range map[string]int64{"hot": 2 * 12_345, "cold": 2 * tier1.DefaultPow} {
		ch, err := b.svc.Challenge(b.ctx, ev)
		if err != nil || ch.MaxNumber != want {
			t.Fatalf("%s: %+v, %v; want maxnumber %d", ev, ch, err, want)
		}
	}
	for _, ev := range []string{"a", "ab-cd", strings.Repeat("e", 20), strings.Repeat("f", 33), strings.Repeat("g", 64)} {
		ch, err := b.svc.Challenge(b.ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if tail := len(ch.Salt) % 64; tail+10+9 > 64 {
			t.Errorf("event %q: salt of %d bytes leaves %d in its last block; a ten-digit number would need a second one", ev, len(ch.Salt), tail)
		}
	}
}

func TestDoorConfigValidation(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]tier1.Config{
		"pow lifetime":  {Pow: tier1.PowConfig{Lifetime: time.Second}},
		"pow window":    {Pow: tier1.PowConfig{Window: 2 * time.Hour}},
		"pow default":   {Pow: tier1.PowConfig{Default: 10}},
		"client limit":  {Clients: tier1.ClientBound{Limit: -1}},
		"client window": {Clients: tier1.ClientBound{Window: 48 * time.Hour}},
	} {
		c.Logger = slog.New(slog.DiscardHandler)
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
	if err := (tier1.Config{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
