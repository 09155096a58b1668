package tier1api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// HTTPAPIHandler is an API Gateway HTTP API (payload v2) Lambda handler.
type HTTPAPIHandler interface {
	Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
}

// Route is one HTTP API route: its method, its path template in API Gateway
// syntax ("/vwr/check/{eventId}/{requestId}") and the handler behind it.
type Route struct {
	Method  string
	Path    string
	Handler HTTPAPIHandler
}

// RouteKey is the routeKey API Gateway puts in the event.
func (r Route) RouteKey() string { return r.Method + " " + r.Path }

var pathParamRE = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

// NewHTTPHandler serves routes over net/http the way API Gateway would: it
// turns each request into an APIGatewayV2HTTPRequest (lower-cased headers,
// cookies split out, path parameters, request context), calls the same
// handler the Lambda runs, and writes the APIGatewayV2HTTPResponse back.
// vwr local mounts it under /vwr-api with the prefix stripped, as CloudFront
// does in front of the real API.
//
// It never sets requestContext.authorizer: only API Gateway can vouch for an
// IAM caller, so locally the admin routes need the bearer token.
func NewHTTPHandler(routes []Route) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		names := []string{}
		for _, m := range pathParamRE.FindAllStringSubmatch(rt.Path, -1) {
			names = append(names, m[1])
		}
		mux.HandleFunc(rt.Method+" "+rt.Path, func(w http.ResponseWriter, r *http.Request) {
			params := map[string]string{}
			for _, n := range names {
				params[n] = r.PathValue(n)
			}
			serveAPIGW(w, r, rt, params)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIGWResponse(w, errorResponse(errUnknownRoute))
	})
	return mux
}

func serveAPIGW(w http.ResponseWriter, r *http.Request, rt Route, params map[string]string) {
	// Read one byte past the limit so the handler still sees "too large"
	// without us buffering an unbounded body.
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		writeAPIGWResponse(w, errorResponse(errBadBody))
		return
	}
	req := toAPIGW(r, rt, params, body)
	resp, err := rt.Handler.Handle(r.Context(), req)
	if err != nil {
		// What API Gateway answers when the integration fails.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"message":"Internal Server Error"}`)
		return
	}
	writeAPIGWResponse(w, resp)
}

func toAPIGW(r *http.Request, rt Route, params map[string]string, body []byte) events.APIGatewayV2HTTPRequest {
	now := time.Now()
	headers := map[string]string{}
	var cookies []string
	for name, vals := range r.Header {
		lname := strings.ToLower(name)
		if lname == "cookie" {
			for _, v := range vals {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lname] = strings.Join(vals, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	var query map[string]string
	if len(r.URL.Query()) > 0 {
		query = map[string]string{}
		for k, v := range r.URL.Query() {
			query[k] = strings.Join(v, ",")
		}
	}
	sourceIP, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		sourceIP = r.RemoteAddr
	}
	req := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              rt.RouteKey(),
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     rt.RouteKey(),
			AccountID:    "local",
			Stage:        "$default",
			RequestID:    localRequestID(),
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: strings.Split(r.Host, ".")[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if utf8.Valid(body) {
			req.Body = string(body)
		} else {
			req.Body = base64.StdEncoding.EncodeToString(body)
			req.IsBase64Encoded = true
		}
	}
	return req
}

func writeAPIGWResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	h := w.Header()
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func localRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
