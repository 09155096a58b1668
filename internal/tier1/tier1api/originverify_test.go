package tier1api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// TestOriginVerify: with the front door's origin-verify value configured,
// a visitor route called straight at the API (no header, a wrong one, one
// cut short) is refused with 403 before the store is touched, so a caller
// going around CloudFront and its WAF takes no place; through the front
// door it works, and the SigV4-signed admin routes need no header.
func TestOriginVerify(t *testing.T) {
	t.Parallel()
	const ov = "origin-verify-value-0123456789abcdef"
	b := setup(t, setupOpts{originVerify: ov, token: "adm"})
	b.activate(t, fixtureEvent, 1, 10)
	for _, h := range []string{"", "wrong-value-0123456789abcdef-0000", ov[:20], ov + "x"} {
		req := fixture(t, "assign.apigw.json")
		if h != "" {
			req.Headers[strings.ToLower(tier1api.OriginVerifyHeader)] = h
		}
		res := call(t, b.assign, req)
		if res.StatusCode != 403 || !strings.Contains(res.Body, `"code":"origin_not_verified"`) {
			t.Fatalf("assign with header %q: %d %s", h, res.StatusCode, res.Body)
		}
		for _, fx := range []string{"status.apigw.json"} {
			if r := call(t, b.status, fixture(t, fx)); r.StatusCode != 403 {
				t.Fatalf("%s without the header: %d", fx, r.StatusCode)
			}
		}
	}
	if st, err := b.svc.AdminStatus(context.Background(), fixtureEvent); err != nil || st.MaxAssigned != 0 {
		t.Fatalf("refused calls took places: %+v %v", st, err)
	}
	req := fixture(t, "assign.apigw.json")
	req.Headers[strings.ToLower(tier1api.OriginVerifyHeader)] = ov
	wantStatus(t, call(t, b.assign, req), 201)
	// The admin routes are signed and sent to the API directly.
	adm := fixture(t, "admin-status.apigw.json")
	adm.Headers["authorization"] = "Bearer adm"
	if r := call(t, b.admin, adm); r.StatusCode/100 != 2 {
		t.Fatalf("admin without the header: %d %s", r.StatusCode, r.Body)
	}
}
