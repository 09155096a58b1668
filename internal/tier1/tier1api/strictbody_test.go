package tier1api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/vwr-go/vwr/internal/jsonhttp/jsonhttptest"
)

// TestStrictBodyBattery: the admin activate body refuses every case of the
// strict-body battery that Tier 2's admin API also runs, and the event is
// left exactly as it was.
func TestStrictBodyBattery(t *testing.T) {
	t.Parallel()
	cases := jsonhttptest.StrictBodies("shards", "4")
	if len(cases) < 15 {
		t.Fatalf("battery has %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{trustIAM: true})
			if _, err := b.svc.Activate(context.Background(), fixtureEvent, 2, 7); err != nil {
				t.Fatal(err)
			}
			before, err := b.svc.AdminStatus(context.Background(), fixtureEvent)
			if err != nil {
				t.Fatal(err)
			}
			req := fixture(t, "admin-activate.apigw.json")
			req.Body = c.Body
			req = withHeader(req, "content-type", c.ContentType) // "" removes it
			wantError(t, call(t, b.admin, req), 400, "invalid_body")
			after, err := b.svc.AdminStatus(context.Background(), fixtureEvent)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("rejected body %q changed the event:\nbefore %+v\nafter  %+v", c.Body, before, after)
			}
		})
	}
}
