package tier1api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

type recorder struct {
	got  events.APIGatewayV2HTTPRequest
	resp events.APIGatewayV2HTTPResponse
	err  error
}

func (r *recorder) Handle(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	r.got = req
	return r.resp, r.err
}

// TestHTTPAdapter checks the net/http → HTTP API v2 translation vwr local
// relies on, in both directions.
func TestHTTPAdapter(t *testing.T) {
	t.Parallel()
	rec := &recorder{resp: events.APIGatewayV2HTTPResponse{
		StatusCode:        202,
		Headers:           map[string]string{"X-One": "1"},
		MultiValueHeaders: map[string][]string{"X-Many": {"a", "b"}},
		Cookies:           []string{"a=1; Path=/", "b=2; Path=/"},
		Body:              "aGVsbG8=",
		IsBase64Encoded:   true,
	}}
	srv := httptest.NewServer(tier1api.NewHTTPHandler([]tier1api.Route{{Method: "POST", Path: "/vwr/thing/{eventId}/{requestId}", Handler: rec}}))
	t.Cleanup(srv.Close)

	req, _ := http.NewRequest("POST", srv.URL+"/vwr/thing/ev-1/rq_2?x=1&x=2&y=3", strings.NewReader("\xff\xfe binary"))
	req.Header.Set("Idempotency-Key", "k1")
	req.Header.Add("X-Multi", "p")
	req.Header.Add("X-Multi", "q")
	req.Header.Set("Cookie", "c1=v1; c2=v2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	g := rec.got
	switch {
	case g.Version != "2.0" || g.RouteKey != "POST /vwr/thing/{eventId}/{requestId}" || g.RequestContext.RouteKey != g.RouteKey:
		t.Errorf("version/routeKey %q %q", g.Version, g.RouteKey)
	case g.RawPath != "/vwr/thing/ev-1/rq_2" || g.RequestContext.HTTP.Path != g.RawPath || g.RequestContext.HTTP.Method != "POST":
		t.Errorf("path %q / %+v", g.RawPath, g.RequestContext.HTTP)
	case g.PathParameters["eventId"] != "ev-1" || g.PathParameters["requestId"] != "rq_2" || len(g.PathParameters) != 2:
		t.Errorf("pathParameters %v", g.PathParameters)
	case g.RawQueryString != "x=1&x=2&y=3" || g.QueryStringParameters["x"] != "1,2" || g.QueryStringParameters["y"] != "3":
		t.Errorf("query %q %v", g.RawQueryString, g.QueryStringParameters)
	case g.Headers["idempotency-key"] != "k1" || g.Headers["x-multi"] != "p,q" || g.Headers["cookie"] != "":
		t.Errorf("headers %v", g.Headers)
	case strings.Join(g.Cookies, "|") != "c1=v1|c2=v2":
		t.Errorf("cookies %v", g.Cookies)
	case !g.IsBase64Encoded || g.Body != "//4gYmluYXJ5":
		t.Errorf("binary body %q base64=%v", g.Body, g.IsBase64Encoded)
	case g.RequestContext.Authorizer != nil:
		t.Error("the adapter must never claim an authorizer")
	case g.RequestContext.HTTP.SourceIP != "127.0.0.1" || g.RequestContext.RequestID == "":
		t.Errorf("requestContext %+v", g.RequestContext)
	}
	if resp.StatusCode != 202 || string(body) != "hello" || resp.Header.Get("X-One") != "1" ||
		strings.Join(resp.Header.Values("X-Many"), ",") != "a,b" || len(resp.Header.Values("Set-Cookie")) != 2 {
		t.Errorf("response %d %q %v", resp.StatusCode, body, resp.Header)
	}

	// A Lambda error becomes API Gateway's opaque 500, nothing of the error.
	rec.err = errors.New("secret detail")
	resp, err = http.Post(srv.URL+"/vwr/thing/a/b", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || string(body) != `{"message":"Internal Server Error"}` {
		t.Errorf("handler error → %d %s", resp.StatusCode, body)
	}

	// Unknown paths and methods: JSON 404.
	for _, m := range []string{"GET", "POST"} {
		req, _ := http.NewRequest(m, srv.URL+"/vwr/other", nil)
		if m == "GET" {
			req, _ = http.NewRequest(m, srv.URL+"/vwr/thing/a/b", nil)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(body), `"code":"not_found"`) {
			t.Errorf("%s unknown → %d %s", m, resp.StatusCode, body)
		}
	}
}
