package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/jsonhttp/jsonhttptest"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestStrictBodyBattery: the admin threshold body refuses every case of the
// strict-body battery that Tier 1's handlers also run, storing nothing.
func TestStrictBodyBattery(t *testing.T) {
	t.Parallel()
	cases := jsonhttptest.StrictBodies("threshold", "5")
	if len(cases) < 15 {
		t.Fatalf("battery has %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{userHeader: "X-User-Id", adminToken: adminToken})
			// Built here, not with b.do, which would add application/json.
			req, err := http.NewRequest("PUT", b.srv.URL+"/api/queue/admin/threshold/"+testenv.UniqueID(t), strings.NewReader(c.Body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+adminToken)
			if c.HasContentType {
				req.Header.Set("Content-Type", c.ContentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got map[string]string
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if resp.StatusCode != http.StatusBadRequest || got["code"] != "invalid_body" {
				t.Fatalf("%q (%s) = %d %v, want 400 invalid_body", c.Body, c.ContentType, resp.StatusCode, got)
			}
			b.mustBeUntouched(t)
		})
	}
}
