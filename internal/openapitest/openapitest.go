// Package openapitest holds an HTTP API to its OpenAPI document in tests. It
// loads and validates the document with kin-openapi, lists its operations for
// comparison with the routes a mux registers, and validates real requests and
// responses against the operations they belong to, remembering which
// documented answers a test has produced. Only tests import it, so no binary
// links kin-openapi.
package openapitest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// UnmatchedExtension is the top-level document extension that names the
// components.responses entry answering a path no operation has. OpenAPI has
// no catch-all path, so the document says it this way.
const UnmatchedExtension = "x-unmatched-path-response"

// unmatchedKey is the coverage key of that answer.
const unmatchedKey = "(unmatched path)"

// methods are the HTTP methods a path may document.
var methods = []string{
	http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete,
	http.MethodOptions, http.MethodHead, http.MethodPatch, http.MethodTrace,
}

// Contract is a loaded and validated OpenAPI document.
type Contract struct {
	Doc       *openapi3.T
	router    routers.Router
	unmatched *openapi3.ResponseRef

	mu   sync.Mutex
	seen map[string]bool // "METHOD /path status" validated at least once
}

// Load reads the document at file, validates it (doc.Validate) and prepares
// its router. Any failure ends the test.
func Load(t testing.TB, file string) *Contract {
	t.Helper()
	ctx := context.Background()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(file)
	if err != nil {
		t.Fatalf("openapitest: load %s: %v", file, err)
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("openapitest: %s is not a valid OpenAPI document: %v", file, err)
	}
	// Route on the path alone: the servers name deployments (hosts, the
	// CDN's path prefix), while tests serve the API at the root of a
	// loopback listener or hand it API Gateway events.
	bare := *doc
	bare.Servers = nil
	router, err := legacy.NewRouter(&bare)
	if err != nil {
		t.Fatalf("openapitest: router for %s: %v", file, err)
	}
	c := &Contract{Doc: doc, router: router, seen: map[string]bool{}}
	if name, ok := doc.Extensions[UnmatchedExtension].(string); ok {
		c.unmatched = doc.Components.Responses[name]
		if c.unmatched == nil || c.unmatched.Value == nil {
			t.Fatalf("openapitest: %s names %q, which is not in components.responses", UnmatchedExtension, name)
		}
	}
	return c
}

// Operations lists every documented operation as "METHOD /path", sorted,
// in the form of Go ServeMux patterns.
func (c *Contract) Operations() []string {
	var out []string
	for path, item := range c.Doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

// Answers lists every documented answer as "METHOD /path status", plus the
// unmatched-path answer when the document has one, sorted.
func (c *Contract) Answers() []string {
	var out []string
	for _, op := range c.Operations() {
		method, path, _ := strings.Cut(op, " ")
		for status := range c.Doc.Paths.Value(path).GetOperation(method).Responses.Map() {
			out = append(out, op+" "+status)
		}
	}
	if c.unmatched != nil {
		out = append(out, unmatchedKey+" 404")
	}
	slices.Sort(out)
	return out
}

// Unanswered lists the documented answers (see Answers) that no validated
// response has produced yet.
func (c *Contract) Unanswered() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, a := range c.Answers() {
		if !c.seen[a] {
			out = append(out, a)
		}
	}
	return out
}

// request rebuilds what a handler was asked, with body, for one validation
// (validating consumes the body). Only the path and query of req.URL count.
func request(req *http.Request, body []byte) *http.Request {
	r := httptest.NewRequest(req.Method, req.URL.RequestURI(), bytes.NewReader(body))
	r.Header = req.Header.Clone()
	r.ContentLength = int64(len(body))
	return r
}

// ValidateRequest validates req (with body) against its operation.
// matched is false when no operation has req's method and path; err is the
// validation failure, nil when the document accepts the request.
func (c *Contract) ValidateRequest(req *http.Request, body []byte) (matched bool, err error) {
	r := request(req, body)
	route, params, err := c.find(r)
	if err != nil {
		return false, nil
	}
	return true, openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		// A body on an operation that documents none is refused too.
		Options: &openapi3filter.Options{AuthenticationFunc: Authenticate, RejectWhenRequestBodyNotSpecified: true},
	})
}

// ValidateResponse fails the test unless the response (status, header, body)
// to req is one the document promises:
//   - for a documented method and path, one of that operation's responses
//     (an undocumented status fails too);
//   - for a documented path asked with another method (405), the 405 of
//     every operation on that path, with an Allow header listing exactly
//     those operations' methods;
//   - for a path no operation has, the UnmatchedExtension response.
func (c *Contract) ValidateResponse(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	r := request(req, reqBody)
	what := fmt.Sprintf("%s %s → %d %s", r.Method, r.URL.RequestURI(), status, body)
	if route, params, err := c.find(r); err == nil {
		if err := c.validate(r, route, params, status, header, body); err != nil {
			t.Errorf("openapitest: %s\ndoes not match %s %s: %v", what, route.Method, route.Path, err)
			return
		}
		c.saw(route.Method+" "+route.Path, status)
		return
	}
	var others []*routers.Route
	var otherParams []map[string]string
	for _, m := range methods {
		alt := request(req, reqBody)
		alt.Method = m
		if route, params, err := c.find(alt); err == nil {
			others, otherParams = append(others, route), append(otherParams, params)
		}
	}
	switch {
	case len(others) > 0:
		// The path is documented, the method is not: the answer must be the
		// 405 every operation on the path documents.
		var allowed []string
		for _, rt := range others {
			allowed = append(allowed, rt.Method)
		}
		if got := allowHeader(header); status != http.StatusMethodNotAllowed || !equalSets(got, allowed) {
			t.Errorf("openapitest: %s\nwant 405 with Allow %v (the documented methods of this path), got Allow %v", what, allowed, got)
			return
		}
		for i, rt := range others {
			if err := c.validate(r, rt, otherParams[i], status, header, body); err != nil {
				t.Errorf("openapitest: %s\ndoes not match the 405 of %s %s: %v", what, rt.Method, rt.Path, err)
				return
			}
			c.saw(rt.Method+" "+rt.Path, status)
		}
	case c.unmatched != nil:
		route := &routers.Route{Spec: c.Doc, Path: r.URL.Path, Method: r.Method, PathItem: &openapi3.PathItem{},
			Operation: &openapi3.Operation{Responses: openapi3.NewResponses(
				openapi3.WithStatus(http.StatusNotFound, c.unmatched))}}
		if err := c.validate(r, route, nil, status, header, body); err != nil {
			t.Errorf("openapitest: %s\nno operation has this path, and the answer does not match %s: %v", what, UnmatchedExtension, err)
			return
		}
		c.saw(unmatchedKey, status)
	default:
		t.Errorf("openapitest: %s\nno operation has this path and the document has no %s", what, UnmatchedExtension)
	}
}

// find is the router's FindRoute, except that an empty path segment never
// fills a path parameter: neither Go's ServeMux nor API Gateway match
// /a/{id} with /a/, so such a request reaches no operation.
func (c *Contract) find(r *http.Request) (*routers.Route, map[string]string, error) {
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		return nil, nil, err
	}
	for name, v := range params {
		if v == "" {
			return nil, nil, fmt.Errorf("openapitest: empty path parameter %q", name)
		}
	}
	return route, params, nil
}

func (c *Contract) validate(r *http.Request, route *routers.Route, params map[string]string, status int, header http.Header, body []byte) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		// A status the operation does not document is a broken promise too.
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}

func (c *Contract) saw(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[op+" "+strconv.Itoa(status)] = true
}

// Authenticate is the openapi3filter.AuthenticationFunc of ValidateRequest:
// it checks that the request presents a credential of the scheme's form
// (whether the credential is good is the handler's business). An apiKey
// scheme with x-amazon-apigateway-authtype awsSigv4 wants a SigV4
// Authorization header, as API Gateway's AWS_IAM routes do.
func Authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	s := in.SecurityScheme
	switch {
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(tok) != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "header":
		v := r.Header.Get(s.Name)
		if s.Extensions["x-amazon-apigateway-authtype"] == "awsSigv4" {
			if strings.HasPrefix(v, "AWS4-HMAC-SHA256 ") {
				return nil
			}
		} else if v != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "cookie":
		if ck, err := r.Cookie(s.Name); err == nil && ck.Value != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "query":
		if r.URL.Query().Get(s.Name) != "" {
			return nil
		}
	}
	return in.NewError(nil)
}

// allowHeader splits the Allow header into methods.
func allowHeader(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Allow") {
		for m := range strings.SplitSeq(v, ",") {
			if m = strings.TrimSpace(m); m != "" {
				out = append(out, m)
			}
		}
	}
	return out
}

func equalSets(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
