package jsonhttp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type thresholdBody struct {
	Threshold json.RawMessage `json:"threshold"`
}

type activateBody struct {
	Shards    int   `json:"shards"`
	BatchSize int64 `json:"batchSize"`
	Nested    struct {
		A int `json:"a"`
	} `json:"nested"`
}

// TestDecodeStrictBattery is the strict-body battery: every lenient reading
// encoding/json allows is refused, and well-formed bodies decode.
func TestDecodeStrictBattery(t *testing.T) {
	t.Parallel()
	bad := []string{
		`{"threshold":5} trailing`,
		`{"threshold":5}{"threshold":6}`,
		`{"THRESHOLD":5}`,
		`{"Threshold":5}`,
		`{"threshold":5,"threshold":6}`,
		`{"threshold":5,"Threshold":6}`,
		`{"threshold":5,"extra":1}`,
		`[{"threshold":5}]`,
		`"threshold"`,
		`5`,
		`null`,
		`{"threshold":5`,
		`{"threshold":}`,
		``,
		`{"threshold":5}]`,
	}
	for _, b := range bad {
		var v thresholdBody
		if err := DecodeStrict([]byte(b), &v); err == nil {
			t.Errorf("DecodeStrict(%q) accepted it as %s", b, v.Threshold)
		}
	}
	nestedBad := []string{
		`{"nested":{"a":1,"a":2}}`,
		`{"nested":{"A":1}}`,
		`{"nested":{"b":1}}`,
	}
	for _, b := range nestedBad {
		var v activateBody
		if err := DecodeStrict([]byte(b), &v); err == nil {
			t.Errorf("DecodeStrict(%q) accepted a nested key it should refuse", b)
		}
	}
	good := map[string]string{
		`{"threshold":5}`:            "5",
		" \n{ \"threshold\" : 7 }\n": "7",
		`{}`:                         "",
	}
	for b, want := range good {
		var v thresholdBody
		if err := DecodeStrict([]byte(b), &v); err != nil || string(v.Threshold) != want {
			t.Errorf("DecodeStrict(%q) = %s, %v; want %s", b, v.Threshold, err, want)
		}
	}
	var a activateBody
	if err := DecodeStrict([]byte(`{"shards":4,"batchSize":100,"nested":{"a":3}}`), &a); err != nil || a.Shards != 4 || a.BatchSize != 100 || a.Nested.A != 3 {
		t.Errorf("activate body = %+v, %v", a, err)
	}
}

func TestDecodeNeedsJSONContentType(t *testing.T) {
	t.Parallel()
	for ct, ok := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"Application/JSON":                  true,
		"text/plain":                        false,
		"":                                  false,
		"application/x-www-form-urlencoded": false,
	} {
		r := httptest.NewRequest("PUT", "/", strings.NewReader(`{"threshold":5}`))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		var v thresholdBody
		err := Decode(r, &v)
		if (err == nil) != ok {
			t.Errorf("Content-Type %q: err %v, want accepted %v", ct, err, ok)
		}
	}
	// An optional body that is absent needs no content type.
	r := httptest.NewRequest("POST", "/", nil)
	var v thresholdBody
	if err := DecodeOptional(r, &v); err != nil {
		t.Errorf("empty optional body: %v", err)
	}
	if err := Decode(httptest.NewRequest("POST", "/", nil), &v); err != ErrInvalidBody {
		t.Errorf("empty required body: %v", err)
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	big := strings.Repeat(" ", MaxBodyBytes+1)
	r := httptest.NewRequest("POST", "/", strings.NewReader(big))
	if _, err := ReadBody(r); err != ErrBodyTooLarge {
		t.Fatalf("ReadBody of %d bytes: %v", len(big), err)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(big[:MaxBodyBytes]))
	b, err := ReadBody(r)
	if err != nil || len(b) != MaxBodyBytes {
		t.Fatalf("ReadBody at the limit: %d, %v", len(b), err)
	}
	// The body stays readable for the handler.
	again, err := ReadBody(r)
	if err != nil || len(again) != MaxBodyBytes {
		t.Fatalf("second ReadBody: %d, %v", len(again), err)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(`{"x":1}`))
	if err := RequireEmpty(r); err != ErrInvalidBody {
		t.Fatalf("RequireEmpty with a body: %v", err)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(` {} `))
	r.Header.Set("Content-Type", "application/json")
	if err := RequireEmpty(r); err != nil {
		t.Fatalf("RequireEmpty with {}: %v", err)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "text/plain")
	if err := RequireEmpty(r); err != ErrInvalidBody {
		t.Fatalf("RequireEmpty with {} as text/plain: %v", err)
	}
}

func TestWriteErrorHeaders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    *Error
		header string
		value  string
	}{
		{Unavailable("unavailable", "down"), "Retry-After", "2"},
		{&Error{401, "unauthorized", "who"}, "WWW-Authenticate", `Bearer realm="vwr"`},
		{ErrInvalidBody, "Cache-Control", "no-store"},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		WriteError(w, c.err)
		if w.Code != c.err.Status || w.Header().Get(c.header) != c.value {
			t.Errorf("%s: %d %s=%q", c.err.Code, w.Code, c.header, w.Header().Get(c.header))
		}
		var body Body
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Code != c.err.Code || body.Error != c.err.Message {
			t.Errorf("%s: body %s (%v)", c.err.Code, w.Body, err)
		}
		if w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: content type %q", c.err.Code, w.Header().Get("Content-Type"))
		}
	}
}

func TestMuxAnswersUnknownRoutesAndMethodsInJSON(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, 200, map[string]string{"id": r.PathValue("id")})
	})
	mux := NewMux([]Route{{"GET /things/{id}", ok}, {"DELETE /things/{id}", ok}}, nil)
	cases := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/things/7", 200, ""},
		{"POST", "/things/7", 405, "GET, DELETE"},
		{"GET", "/nothing", 404, ""},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
		if w.Code != c.status || w.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow=%q, want %d %q", c.method, c.path, w.Code, w.Header().Get("Allow"), c.status, c.allow)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Errorf("%s %s: body %q is not JSON", c.method, c.path, w.Body)
		}
	}
}
