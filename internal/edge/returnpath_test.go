package edge

import (
	"encoding/json"
	"net/url"
	"os"
	"testing"
	"time"
)

// battery is testdata/return-paths.json, which the pages' safeReturn passes
// under Node and in Chromium too (e2e/unit.test.js, e2e/pages.test.js).
type battery struct {
	Event string `json:"event"`
	Cases []struct {
		Raw  *string `json:"raw"`
		Want *string `json:"want"`
		Why  string  `json:"why"`
	} `json:"cases"`
}

func loadBattery(t *testing.T) battery {
	t.Helper()
	b, err := os.ReadFile("testdata/return-paths.json")
	if err != nil {
		t.Fatal(err)
	}
	var bt battery
	if err := json.Unmarshal(b, &bt); err != nil {
		t.Fatal(err)
	}
	if len(bt.Cases) < 40 {
		t.Fatalf("battery has %d cases", len(bt.Cases))
	}
	return bt
}

func TestSafeReturnBattery(t *testing.T) {
	t.Parallel()
	bt := loadBattery(t)
	for _, c := range bt.Cases {
		raw := ""
		if c.Raw != nil {
			raw = *c.Raw
		}
		if got, want := SafeReturn(raw, bt.Event), c.Want != nil; got != want {
			t.Errorf("SafeReturn(%q) = %v, want %v (%s)", raw, got, want, c.Why)
		}
		if c.Want != nil && *c.Want != raw {
			t.Errorf("battery case %q keeps %q: a kept value must come back unchanged", raw, *c.Want)
		}
	}
}

// Decide builds a return only from a path that passes SafeReturn; for any
// other protected path the return is the event page. The return is built
// from the canonical path, so dot segments and doubled slashes are gone.
func TestDecideBuildsOnlySafeReturns(t *testing.T) {
	t.Parallel()
	keys := ring(t, "k1", "edge-test-secret-0123456789abcdef-01234")
	for _, tc := range []struct{ path, query, want string }{
		{"/events/demo/seats", "x=1", "/events/demo/seats?x=1"},
		{"/events/demo/x/../..//demo/evil.example", "", "/events/demo/evil.example"},
		{"/events/demo//evil.example", "", "/events/demo/evil.example"},
		{"/%65vents/demo/%73eats", "", "/events/demo/seats"},
		{"/events/demo/seats", "next=<script>", "/events/demo"},
		{"/events/demo/seats", "a=%2F%2Fevil", "/events/demo"},
	} {
		d := Decide(keys, tc.path, tc.query, "", time.Unix(0, 0))
		u, err := url.Parse(d.Location)
		if err != nil || d.Action != Redirect {
			t.Fatalf("Decide(%q) = %+v, %v", tc.path, d, err)
		}
		if got := u.Query().Get("return"); got != tc.want {
			t.Errorf("Decide(%q, %q) return = %q, want %q", tc.path, tc.query, got, tc.want)
		}
	}
	// Every redirect of the cross-language vectors returns to a path that
	// SafeReturn keeps as it is: the page follows it unchanged.
	v := mintVectors(t)
	for _, c := range v.Cases {
		if c.Want != "redirect" {
			continue
		}
		u, err := url.Parse(c.Location)
		if err != nil {
			t.Fatal(err)
		}
		ret, ev := u.Query().Get("return"), u.Query().Get("event")
		if !SafeReturn(ret, ev) {
			t.Errorf("%s: return %q for %s is not a safe return", c.Name, ret, ev)
		}
	}
}
