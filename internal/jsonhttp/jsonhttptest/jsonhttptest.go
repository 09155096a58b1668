// Package jsonhttptest holds the strict-body battery: request bodies that
// every JSON endpoint of both tiers must refuse with 400 invalid_body
// without storing anything. Tier 1's and Tier 2's handler tests both run it
// (internal/tier1/tier1api, services/queue/httpapi).
package jsonhttptest

import (
	_ "embed"
	"encoding/json"
	"strings"
)

//go:embed strictbodies.json
var raw []byte

// Case is one body to refuse.
type Case struct {
	Name string
	Body string
	// ContentType is the header to send; HasContentType is false when the
	// request must carry none.
	ContentType    string
	HasContentType bool
}

// StrictBodies returns the battery for an endpoint whose body has the field
// field, with value an accepted value of it (written as JSON).
func StrictBodies(field, value string) []Case {
	var doc struct {
		Cases []struct {
			Name        string  `json:"name"`
			Body        string  `json:"body"`
			ContentType *string `json:"contentType"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic("jsonhttptest: strictbodies.json: " + err.Error())
	}
	r := strings.NewReplacer("{{f}}", field, "{{F}}", strings.ToUpper(field),
		"{{Ff}}", strings.ToUpper(field[:1])+field[1:], "{{v}}", value)
	out := make([]Case, 0, len(doc.Cases))
	for _, c := range doc.Cases {
		tc := Case{Name: c.Name, Body: r.Replace(c.Body)}
		if c.ContentType != nil {
			tc.ContentType, tc.HasContentType = *c.ContentType, true
		}
		out = append(out, tc)
	}
	return out
}
