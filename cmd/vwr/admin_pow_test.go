package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/altcha"
	"github.com/vwr-go/vwr/internal/testenv"
)

// solveFrom solves the challenge a refusal carried, as a client would.
func solveFrom(t *testing.T, r httpResult) string {
	t.Helper()
	raw, _ := json.Marshal(r.body["challenge"])
	var ch altcha.Challenge
	if err := json.Unmarshal(raw, &ch); err != nil || ch.Challenge == "" {
		t.Fatalf("no challenge in %d %s", r.status, r.raw)
	}
	n, ok := altcha.Solve(ch.Challenge, ch.Salt, ch.MaxNumber)
	if !ok {
		t.Fatalf("unsolvable challenge %+v", ch)
	}
	return ch.Payload(n).Encode()
}

// TestAdminPowThroughVWRLocal: `vwr admin activate -pow N` makes vwr local
// ask every arrival for a proof of work; the challenge route serves the
// event's difficulty; a solution buys one place, spent once; the bound on
// the trusted client header answers 429; `schedule -pow` does the same for
// pre-queue tickets; an out-of-range -pow is refused and changes nothing.
func TestAdminPowThroughVWRLocal(t *testing.T) {
	t.Parallel()
	base, _ := startLocal(t, map[string]string{
		"VWR_TIER1_CLIENT_IP_HEADER": "X-Test-Client", "VWR_TIER1_CLIENT_LIMIT": "2",
	}, "-tier1-tick", "1h")
	env := map[string]string{"VWR_URL": base}
	ev := testenv.UniqueID(t)
	code, stdout, stderr := runVWR(t, env, "admin", "activate", "-event", ev, "-pow", "3000")
	if code != exitOK || !strings.Contains(stdout, `"pow": 3000`) {
		t.Fatalf("activate -pow: %d\n%s%s", code, stdout, stderr)
	}
	api := base + "/vwr-api/vwr"
	ch := do(t, "GET", api+"/challenge/"+ev, "", nil)
	if ch.status != 200 || num(ch.body["maxnumber"]) != 6000 || ch.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("challenge: %d %s %v", ch.status, ch.raw, ch.header)
	}
	me := map[string]string{"Idempotency-Key": "pow-1", "X-Test-Client": "198.51.100.1"}
	first := do(t, "POST", api+"/assign/"+ev, "", me)
	if first.status != 428 || first.body["code"] != "pow_required" {
		t.Fatalf("assign without a solution: %d %s", first.status, first.raw)
	}
	me["Altcha"] = solveFrom(t, first)
	placed := do(t, "POST", api+"/assign/"+ev, "", me)
	if placed.status != 201 || num(placed.body["position"]) != 1 {
		t.Fatalf("assign with the solution: %d %s", placed.status, placed.raw)
	}
	me["Idempotency-Key"] = "pow-2"
	if r := do(t, "POST", api+"/assign/"+ev, "", me); r.status != 409 || r.body["code"] != "pow_replayed" {
		t.Fatalf("the spent solution again: %d %s", r.status, r.raw)
	}
	me["Altcha"] = solveFrom(t, do(t, "POST", api+"/assign/"+ev, "", me))
	if r := do(t, "POST", api+"/assign/"+ev, "", me); r.status != 201 {
		t.Fatalf("a second paid arrival: %d %s", r.status, r.raw)
	}
	me["Idempotency-Key"] = "pow-3"
	me["Altcha"] = solveFrom(t, do(t, "POST", api+"/assign/"+ev, "", me))
	over := do(t, "POST", api+"/assign/"+ev, "", me)
	if over.status != 429 || over.body["code"] != "too_many_arrivals" || over.header.Get("Retry-After") == "" {
		t.Fatalf("a third arrival from one address with a limit of 2: %d %s %v", over.status, over.raw, over.header)
	}
	// Retrying it (same solution, same key) is a replay, not a way past the bound.
	if again := do(t, "POST", api+"/assign/"+ev, "", me); again.status != 409 || again.body["code"] != "pow_replayed" {
		t.Fatalf("the arrival refused for the bound, retried: %d %s", again.status, again.raw)
	}
	if code, stdout, _ := runVWR(t, env, "admin", "status", "-event", ev); code != exitOK || !strings.Contains(stdout, `"assigned": 2`) {
		t.Fatalf("status after two paid arrivals and three refusals: %s", stdout)
	}

	code, _, stderr = runVWR(t, env, "admin", "activate", "-event", ev, "-pow", "5")
	if code != exitError || !strings.Contains(stderr, "invalid_config") {
		t.Fatalf("activate -pow 5: %d %s", code, stderr)
	}
	if _, stdout, _ := runVWR(t, env, "admin", "status", "-event", ev); !strings.Contains(stdout, `"pow": 3000`) {
		t.Fatalf("a refused -pow changed the event: %s", stdout)
	}

	sale := testenv.UniqueID(t)
	opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if code, stdout, stderr := runVWR(t, env, "admin", "schedule", "-event", sale, "-opens", opens, "-pow", "2000"); code != exitOK {
		t.Fatalf("schedule -pow: %d\n%s%s", code, stdout, stderr)
	}
	tk := map[string]string{"Client-Nonce": "00112233445566778899aabbccddeeff", "X-Test-Client": "198.51.100.9"}
	r := do(t, "POST", api+"/assign/"+sale, "", tk)
	if r.status != 428 {
		t.Fatalf("a pre-queue ticket without a solution: %d %s", r.status, r.raw)
	}
	tk["Altcha"] = solveFrom(t, r)
	if r := do(t, "POST", api+"/assign/"+sale, "", tk); r.status != 201 || r.body["phase"] != "prequeue" {
		t.Fatalf("a paid pre-queue ticket: %d %s", r.status, r.raw)
	}
}
