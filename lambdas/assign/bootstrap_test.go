package main

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/altcha"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/tier1api/tier1apitest"
	"github.com/vwr-go/vwr/internal/token"
)

type assignDoc struct {
	Active    bool   `json:"active"`
	Admitted  bool   `json:"admitted"`
	Token     string `json:"token"`
	RequestID string `json:"requestId"`
	Position  int64  `json:"position"`
}

// TestBootstrap runs events/assign.apigw.json against the built bootstrap on
// DynamoDB (moto).
func TestBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	// A 1 ns event cache: each invocation reads the event afresh, so the
	// activation below is seen by the next call without waiting a second.
	env := maps.Clone(st.Env)
	env["VWR_TIER1_STATUS_CACHE_TTL"] = "1ns"
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/assign"), lambdatest.Options{Env: env, FunctionName: "vwr-assign"})
	event := tier1apitest.Fixture(t, "assign.apigw.json")

	// Never activated: pass-through, nothing written.
	resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	if resp.StatusCode != 200 {
		t.Fatalf("inactive: %d %s", resp.StatusCode, resp.Body)
	}
	if d := tier1apitest.Body[assignDoc](t, resp); d.Active || !d.Admitted || d.Token == "" {
		t.Fatalf("inactive: %s", resp.Body)
	}

	if _, err := st.Service.Activate(ctx, tier1apitest.FixtureEvent, 4, 100); err != nil {
		t.Fatal(err)
	}
	resp = tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	if resp.StatusCode != 201 {
		t.Fatalf("active: %d %s", resp.StatusCode, resp.Body)
	}
	first := tier1apitest.Body[assignDoc](t, resp)
	if !first.Active || first.Position < 1 || first.Position > 4 {
		t.Fatalf("active: %s", resp.Body)
	}
	// Same Idempotency-Key (in the fixture): same place, nothing new written.
	again := tier1apitest.Body[assignDoc](t, tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event)))
	if again.RequestID != first.RequestID || again.Position != first.Position {
		t.Fatalf("retry %+v, first %+v", again, first)
	}
	adm, err := st.Service.AdminStatus(ctx, tier1apitest.FixtureEvent)
	if err != nil || adm.Assigned != 1 {
		t.Fatalf("DynamoDB holds %d positions (%v), want 1", adm.Assigned, err)
	}
	chk, err := st.Service.Check(ctx, tier1apitest.FixtureEvent, first.RequestID)
	if err != nil || chk.Position != first.Position {
		t.Fatalf("position record in DynamoDB: %+v %v", chk, err)
	}
	if len(tier1apitest.LogLines(fn, "_aws")) != 1 {
		t.Errorf("want one EMF line (one new assignment); logs:\n%s", fn.Logs())
	}
}

// TestBootstrapBadConfig: a function missing its token keys exits at cold
// start and says which variable to set.
func TestBootstrapBadConfig(t *testing.T) {
	t.Parallel()
	st := tier1apitest.Moto(t)
	env := map[string]string{}
	for k, v := range st.Env {
		if k != "VWR_TIER1_TOKEN_KEYS" {
			env[k] = v
		}
	}
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/assign"), lambdatest.Options{Env: env})
	if _, err := fn.InvokeErr(tier1apitest.Fixture(t, "assign.apigw.json")); err == nil {
		t.Fatal("invoke succeeded without VWR_TIER1_TOKEN_KEYS")
	}
	if !fn.WaitExit(5 * time.Second) {
		t.Fatal("process still running")
	}
	if !strings.Contains(fn.Logs(), "VWR_TIER1_TOKEN_KEYS is required") {
		t.Fatalf("logs do not name the variable:\n%s", fn.Logs())
	}
}

// TestBootstrapRedis: the same binary on the Redis store (VWR_TIER1_STORE=redis).
func TestBootstrapRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := testenv.Redis(t) // private to this test binary: the fixture's keys cannot collide
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	secret := token.RandomSecret()
	keys, err := token.NewKeyRing("t1", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	svc := tier1.New(redisstore.New(rdb), keys, clock.System{}, tier1.Config{})
	if _, err := svc.Activate(ctx, tier1apitest.FixtureEvent, 2, 10); err != nil {
		t.Fatal(err)
	}
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/assign"), lambdatest.Options{Env: map[string]string{
		"VWR_TIER1_STORE":      "redis",
		"VWR_TIER1_REDIS_URL":  "redis://" + addr + "/0",
		"VWR_TIER1_TOKEN_KEYS": "t1:" + secret,
	}})
	resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, tier1apitest.Fixture(t, "assign.apigw.json")))
	d := tier1apitest.Body[assignDoc](t, resp)
	if resp.StatusCode != 201 || !d.Active || d.Position < 1 || d.Position > 2 {
		t.Fatalf("assign on Redis: %d %s", resp.StatusCode, resp.Body)
	}
	if chk, err := svc.Check(ctx, tier1apitest.FixtureEvent, d.RequestID); err != nil || chk.Position != d.Position {
		t.Fatalf("position in Redis: %+v %v", chk, err)
	}
}

// TestBootstrapKeysFromSecretsManager: as deployed, the function gets only
// VWR_TIER1_TOKEN_KEYS_SECRET_ARN, reads the ring from Secrets Manager (moto)
// at cold start, and signs passes with the secret's first kid.
func TestBootstrapKeysFromSecretsManager(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	secret := token.RandomSecret()
	sm := secretsmanager.NewFromConfig(awstest.Config(st.Env["AWS_ENDPOINT_URL"]))
	out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name:         aws.String("vwr/tier1-keys/" + testenv.UniqueID(t)),
		SecretString: aws.String(`{"kid":"sm1","secret":"` + secret + `"}`),
	})
	if err != nil {
		t.Fatalf("create secret on moto: %v", err)
	}
	env := maps.Clone(st.Env)
	delete(env, "VWR_TIER1_TOKEN_KEYS")
	env["VWR_TIER1_TOKEN_KEYS_SECRET_ARN"] = aws.ToString(out.ARN)
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/assign"), lambdatest.Options{Env: env})
	resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, tier1apitest.Fixture(t, "assign.apigw.json")))
	d := tier1apitest.Body[assignDoc](t, resp)
	if resp.StatusCode != 200 || d.Token == "" {
		t.Fatalf("assign (event inactive): %d %s", resp.StatusCode, resp.Body)
	}
	if strings.Contains(fn.Logs(), secret) {
		t.Fatal("the secret appears in the function's logs")
	}
	keys, err := token.NewKeyRing("sm1", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.VerifyTier1(d.Token, tier1apitest.FixtureEvent, time.Now()); err != nil {
		t.Fatalf("the pass does not verify under the secret's key sm1: %v", err)
	}
}

// TestBootstrapPow: as deployed (DynamoDB on moto, the per-client bound on
// CloudFront-Viewer-Address), the built function serves the challenge route
// and asks a pow event's arrivals for a solution; a challenge from one
// instance is accepted by another holding the same pass keys (both derive
// the same proof-of-work key), spent once, and the fixture's viewer
// address gets one arrival.
func TestBootstrapPow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	env := maps.Clone(st.Env)
	env["VWR_TIER1_STATUS_CACHE_TTL"] = "1ns"
	env["VWR_TIER1_CLIENT_IP_HEADER"] = "CloudFront-Viewer-Address"
	env["VWR_TIER1_CLIENT_LIMIT"] = "1"
	bin := lambdatest.Build(t, "./lambdas/assign")
	one := lambdatest.Start(t, bin, lambdatest.Options{Env: env, FunctionName: "vwr-assign"})
	two := lambdatest.Start(t, bin, lambdatest.Options{Env: env, FunctionName: "vwr-assign"})
	if _, err := st.Service.Activate(ctx, tier1apitest.FixtureEvent, 2, 10, tier1.WithPow(2000)); err != nil {
		t.Fatal(err)
	}

	resp := tier1apitest.HTTPResponse(t, one, one.Invoke(t, tier1apitest.Fixture(t, "challenge.apigw.json")))
	ch := tier1apitest.Body[altcha.Challenge](t, resp)
	if resp.StatusCode != 200 || ch.MaxNumber != 4000 || !strings.HasPrefix(resp.Headers["Cache-Control"], "public, max-age=") {
		t.Fatalf("challenge: %d %s %v", resp.StatusCode, resp.Body, resp.Headers)
	}
	n, ok := altcha.Solve(ch.Challenge, ch.Salt, ch.MaxNumber)
	if !ok {
		t.Fatalf("unsolvable %+v", ch)
	}
	paid := func(key, header string) []byte {
		return tier1apitest.Fixture(t, "assign.apigw.json", `"idempotency-key": "k-9f1c2e7a4b3d4e8a9c5511d2e3f4a5b6"`,
			`"idempotency-key": "`+key+`", "altcha": "`+header+`"`)
	}
	resp = tier1apitest.HTTPResponse(t, two, two.Invoke(t, tier1apitest.Fixture(t, "assign.apigw.json")))
	if resp.StatusCode != 428 || !strings.Contains(resp.Body, `"pow_required"`) {
		t.Fatalf("no solution: %d %s", resp.StatusCode, resp.Body)
	}
	h := ch.Payload(n).Encode()
	resp = tier1apitest.HTTPResponse(t, two, two.Invoke(t, paid("first", h)))
	if resp.StatusCode != 201 {
		t.Fatalf("the first instance's challenge at the second: %d %s", resp.StatusCode, resp.Body)
	}
	resp = tier1apitest.HTTPResponse(t, one, one.Invoke(t, paid("second", h)))
	if resp.StatusCode != 409 || !strings.Contains(resp.Body, `"pow_replayed"`) {
		t.Fatalf("spent again at the first instance: %d %s", resp.StatusCode, resp.Body)
	}
	refusal := tier1apitest.Body[struct{ Challenge altcha.Challenge }](t, resp)
	n, _ = altcha.Solve(refusal.Challenge.Challenge, refusal.Challenge.Salt, refusal.Challenge.MaxNumber)
	resp = tier1apitest.HTTPResponse(t, one, one.Invoke(t, paid("second", refusal.Challenge.Payload(n).Encode())))
	if resp.StatusCode != 429 || resp.Headers["Retry-After"] == "" {
		t.Fatalf("a second arrival from the fixture's viewer address with a bound of 1: %d %s %v", resp.StatusCode, resp.Body, resp.Headers)
	}
	if adm, err := st.Service.AdminStatus(ctx, tier1apitest.FixtureEvent); err != nil || adm.Assigned != 1 {
		t.Fatalf("DynamoDB holds %d positions (%v), want 1", adm.Assigned, err)
	}
}
