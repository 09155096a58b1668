package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api/tier1apitest"
)

type checkDoc struct {
	Admitted bool   `json:"admitted"`
	Token    string `json:"token"`
	Position int64  `json:"position"`
	Code     string `json:"code"`
}

// TestBootstrap runs events/check.apigw.json against the built bootstrap on
// DynamoDB (moto): as written (unknown requestId), then for a real visitor
// before and after the serving counter reaches them.
func TestBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	st.Env["VWR_TIER1_STATUS_CACHE_TTL"] = "1ms" // see the advance at once
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/check"), lambdatest.Options{Env: st.Env, FunctionName: "vwr-check"})
	ev := tier1apitest.FixtureEvent

	resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, tier1apitest.Fixture(t, "check.apigw.json")))
	if resp.StatusCode != 404 || tier1apitest.Body[checkDoc](t, resp).Code != "not_found" {
		t.Fatalf("unknown requestId: %d %s", resp.StatusCode, resp.Body)
	}

	if _, err := st.Service.Activate(ctx, ev, 1, 10); err != nil {
		t.Fatal(err)
	}
	a, err := st.Service.Assign(ctx, ev, "")
	if err != nil {
		t.Fatal(err)
	}
	event := tier1apitest.Fixture(t, "check.apigw.json", tier1apitest.FixtureRequestID, a.RequestID)
	resp = tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	if d := tier1apitest.Body[checkDoc](t, resp); resp.StatusCode != 200 || d.Admitted || d.Position != a.Position || len(resp.Cookies) != 0 {
		t.Fatalf("before advance: %d %s %v", resp.StatusCode, resp.Body, resp.Cookies)
	}

	if _, err := st.Service.AdvanceBy(ctx, ev, 1); err != nil {
		t.Fatal(err)
	}
	resp = tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	d := tier1apitest.Body[checkDoc](t, resp)
	if resp.StatusCode != 200 || !d.Admitted || d.Position != a.Position {
		t.Fatalf("after advance: %d %s", resp.StatusCode, resp.Body)
	}
	pass, err := st.Keys.VerifyTier1(d.Token, ev, st.Now())
	if err != nil || pass.Subject != a.RequestID {
		t.Fatalf("token %+v %v", pass, err)
	}
	if len(resp.Cookies) != 1 {
		t.Fatalf("cookies %v", resp.Cookies)
	}
	c, err := http.ParseSetCookie(resp.Cookies[0])
	if err != nil || c.Name != "urr-vwr-token" || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge < 599 || c.MaxAge > 600 {
		t.Fatalf("cookie %q (%v)", resp.Cookies[0], err)
	}
}
