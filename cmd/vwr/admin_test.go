package main

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestAdminOneURLBothTiers: against `vwr local`, one base URL (the flag or
// VWR_URL) and one token reach both tiers' admin APIs; the Tier 1 API URL of
// old (…/vwr-api) still works for both.
func TestAdminOneURLBothTiers(t *testing.T) {
	const tok = "one-admin-token"
	base, out := startLocal(t, map[string]string{"VWR_ADMIN_TOKEN": tok, "QUEUE_OPEN_EVENTS": "false"}, "-tier1-tick", "1h")
	if strings.Contains(out.String(), "unset: both tiers' admin endpoints") {
		t.Fatalf("vwr local announced a default token although VWR_ADMIN_TOKEN is set:\n%s", out)
	}
	ev := testenv.UniqueID(t)
	env := map[string]string{"VWR_URL": base, "VWR_ADMIN_TOKEN": tok}
	admin := func(env map[string]string, args ...string) map[string]any {
		t.Helper()
		code, stdout, stderr := runVWR(t, env, append([]string{"admin"}, args...)...)
		if code != exitOK {
			t.Fatalf("vwr admin %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(stdout), &body); err != nil {
			t.Fatalf("vwr admin %s printed no JSON: %v\n%s", strings.Join(args, " "), err, stdout)
		}
		return body
	}
	// Tier 1 and Tier 2 through VWR_URL alone.
	if b := admin(env, "activate", "-event", ev, "-shards", "2", "-batch", "5"); b["active"] != true {
		t.Fatalf("activate: %v", b)
	}
	if b := admin(env, "threshold", "-event", ev, "-n", "7"); b["threshold"] != float64(7) {
		t.Fatalf("threshold: %v", b)
	}
	if b := admin(env, "stats", "-event", ev); b["threshold"] != float64(7) {
		t.Fatalf("stats: %v", b)
	}
	if b := admin(env, "status", "-event", ev); b["shards"] != float64(2) {
		t.Fatalf("status: %v", b)
	}
	// The flag wins over VWR_URL; the old …/vwr-api form reaches both tiers too.
	wrong := map[string]string{"VWR_URL": "http://127.0.0.1:1", "VWR_ADMIN_TOKEN": tok}
	if b := admin(wrong, "stats", "-event", ev, "-url", base+"/vwr-api"); b["threshold"] != float64(7) {
		t.Fatalf("stats via …/vwr-api: %v", b)
	}
	if b := admin(wrong, "pause", "-event", ev, "-url", base+"/vwr-api/"); b["paused"] != true {
		t.Fatalf("pause via …/vwr-api: %v", b)
	}
	// A batch-size change keeps the pause.
	if b := admin(env, "batch", "-event", ev, "-n", "9"); b["batchSize"] != float64(9) || b["paused"] != true {
		t.Fatalf("batch: %v", b)
	}

	// Errors name the fix, with exit code 1.
	cases := []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{wrong, []string{"stats", "-event", ev}, []string{"cannot reach http://127.0.0.1:1", "Point -url (or VWR_URL) at the site's base URL"}},
		{map[string]string{"VWR_URL": base, "VWR_ADMIN_TOKEN": "nope"}, []string{"status", "-event", ev}, []string{"401", "set VWR_ADMIN_TOKEN to the one it was started with"}},
		{map[string]string{"VWR_URL": base, "QUEUE_ADMIN_TOKEN": "nope"}, []string{"threshold", "-event", ev, "-n", "2"}, []string{"401", "set QUEUE_ADMIN_TOKEN (or VWR_ADMIN_TOKEN)"}},
		{map[string]string{"VWR_URL": base + "/somewhere", "VWR_ADMIN_TOKEN": tok}, []string{"stats", "-event", ev}, []string{"404", "No Tier 2 admin API there: -url must be the site's base URL"}},
		{map[string]string{"VWR_URL": base + "/somewhere", "VWR_ADMIN_TOKEN": tok}, []string{"status", "-event", ev}, []string{"404", "No Tier 1 admin API there"}},
		{env, []string{"stats", "-event", "never-configured"}, []string{"404", "unknown_event"}},
	}
	for _, c := range cases {
		code, stdout, stderr := runVWR(t, c.env, append([]string{"admin"}, c.args...)...)
		if code != exitError || stdout != "" {
			t.Errorf("vwr admin %v: exit %d, stdout %q; want 1 and nothing on stdout", c.args, code, stdout)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("vwr admin %v: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
	}
	// An unknown event's Tier 1 404 is the event's, not a wrong URL.
	if _, _, stderr := runVWR(t, env, "admin", "status", "-event", "never-activated"); strings.Contains(stderr, "No Tier 1 admin API") {
		t.Errorf("an unknown event read as a wrong URL:\n%s", stderr)
	}
}

// TestEveryCommandListsItsFlags: `-h` on every subcommand and every admin
// action exits 0 and lists its flags on stdout.
func TestEveryCommandListsItsFlags(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runVWR(t, nil, "-h")
	if code != exitOK {
		t.Fatalf("vwr -h: exit %d", code)
	}
	var names []string
	for n := range commands {
		names = append(names, n)
		if !strings.Contains(stdout, "  "+n+" ") {
			t.Errorf("vwr -h does not list %s:\n%s", n, stdout)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if n == "admin" {
			continue
		}
		code, stdout, stderr := runVWR(t, nil, n, "-h")
		if code != exitOK || !strings.Contains(stdout+stderr, "  -") {
			t.Errorf("vwr %s -h: exit %d, no flags listed:\n%s%s", n, code, stdout, stderr)
		}
	}
	code, stdout, _ = runVWR(t, nil, "admin", "-h")
	if code != exitOK {
		t.Fatalf("vwr admin -h: exit %d", code)
	}
	for _, f := range []string{"-event", "-url", "-tier1-url", "-auth", "-timeout", "VWR_URL", "VWR_ADMIN_TOKEN", "QUEUE_ADMIN_TOKEN"} {
		if !strings.Contains(stdout, f) {
			t.Errorf("vwr admin -h does not mention %s:\n%s", f, stdout)
		}
	}
	for name, a := range adminActions {
		if !strings.Contains(stdout, "  "+name+" ") {
			t.Errorf("vwr admin -h does not list %s", name)
		}
		code, stdout, stderr := runVWR(t, nil, "admin", name, "-h")
		if code != exitOK || stderr != "" {
			t.Errorf("vwr admin %s -h: exit %d, stderr %q", name, code, stderr)
		}
		want := []string{"usage: vwr admin " + name, "-event", "-url", "-timeout"}
		if a.tier == 1 {
			want = append(want, "-auth", "-tier1-url")
		}
		for _, w := range want {
			if !strings.Contains(stdout, w) {
				t.Errorf("vwr admin %s -h does not list %s:\n%s", name, w, stdout)
			}
		}
	}
	// Usage errors exit 2 and say where help is.
	if code, _, stderr := runVWR(t, nil, "admin", "activate", "-event", "e", "-bogus"); code != exitUsage || !strings.Contains(stderr, "-bogus") {
		t.Errorf("an unknown flag: exit %d\n%s", code, stderr)
	}
}
